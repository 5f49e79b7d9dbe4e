"""The pure parts of issue 18's annotations: the mpirun line, the SSH Secret check, the roll decision."""

from __future__ import annotations

import base64

import pytest

from mpioperator.api.conveniences import SSH_SECRET, LauncherProgram, launcher_program, validate_conveniences
from mpioperator.api.objects import Obj
from mpioperator.controller.builders.mpirun_command import mpirun_command
from mpioperator.controller.builders.secret import new_key_pair
from mpioperator.controller.builders.worker_pod import new_worker
from mpioperator.controller.user_ssh_secret import UserSecretChecks, problem
from mpioperator.controller.worker_roll import launcher_started, workers_to_roll
from mpioperator.kube import errors
from mpioperator.kube.resources import Resource
from mpioperator.testing.mpijobs import mpijob


def _secret(**values: bytes) -> Obj:
    return {"data": {k.replace("_", "-"): base64.b64encode(v).decode() for k, v in values.items()}}


def test_zero_slots_per_worker_still_gives_one_rank_per_worker() -> None:
    job = mpijob("z", workers=3, implementation="MPICH", spec={"slotsPerWorker": 0})
    line = mpirun_command(job, LauncherProgram(("/p",), (), (), None), "/etc/mpi/hostfile")
    assert line == ["mpirun", "-f", "/etc/mpi/hostfile", "-n", "3", "-ppn", "1", "/p"]


def test_a_job_without_the_program_annotation_has_no_generated_command() -> None:
    assert launcher_program(mpijob("plain")) is None


@pytest.mark.parametrize("name", ["My_Keys", "9" * 254, "a" * 200 + "." + "b" * 60])
def test_an_ssh_secret_annotation_that_cannot_name_a_secret_is_invalid(name: str) -> None:
    job = mpijob("s")
    job["metadata"]["annotations"] = {SSH_SECRET: name}
    assert [(e.field, e.detail) for e in validate_conveniences(job)] == [
        (f"metadata.annotations[{SSH_SECRET}]", "must be the name of a Secret")
    ]


def test_generated_ssh_key_pair_passes_the_check_and_each_fault_is_named() -> None:
    private, public = new_key_pair()
    assert problem("k", "ns", _secret(ssh_privatekey=private, ssh_publickey=public)) is None
    missing = problem("k", "ns", _secret(ssh_publickey=public))
    assert (
        missing is not None
        and missing.reason == "SSHSecretKeyMissing"
        and '"ssh-privatekey"' in missing.message
    )
    bad_private = problem("k", "ns", _secret(ssh_privatekey=public, ssh_publickey=public))
    assert bad_private is not None and bad_private.reason == "SSHSecretKeyMalformed"
    absent = problem("k", "ns", None)
    assert absent is not None and absent.reason == "SSHSecretNotFound"


class SecretReader:
    """The API server as the checks read it: one Secret, whole, or none; every read counted."""

    def __init__(self, secret: Obj | None) -> None:
        self.secret = secret
        self.reads: list[str] = []

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        self.reads.append(name)
        if self.secret is None:
            raise errors.NotFound(404, "NotFound", "gone")
        return self.secret


def _versioned(secret: Obj, rv: str) -> Obj:
    return {**secret, "metadata": {"name": "k", "uid": "u1", "resourceVersion": rv}}


def _cached(secret: Obj) -> Obj:
    """The Secret as the cache keeps it: key names, no values."""
    return {**secret, "data": dict.fromkeys(secret["data"])}


async def test_user_secret_values_are_read_from_the_server_once_per_version_and_keys_from_the_cache() -> None:
    private, public = new_key_pair()
    good = _versioned(_secret(ssh_privatekey=private, ssh_publickey=public), "1")
    reader = SecretReader(good)
    checks = UserSecretChecks(reader)  # type: ignore[arg-type]  # only get is called

    assert await checks.problem("k", "ns", _cached(good)) is None
    assert await checks.problem("k", "ns", _cached(good)) is None
    assert reader.reads == ["k"], "the same version is not read again"

    bad = _versioned(_secret(ssh_privatekey=public, ssh_publickey=public), "2")
    reader.secret = bad
    found = await checks.problem("k", "ns", _cached(bad))
    assert found is not None and found.reason == "SSHSecretKeyMalformed"
    assert reader.reads == ["k", "k"]

    only_public = _cached(_versioned(_secret(ssh_publickey=public), "3"))
    missing = await checks.problem("k", "ns", only_public)
    assert missing is not None and missing.reason == "SSHSecretKeyMissing"
    absent = await checks.problem("k", "ns", None)
    assert absent is not None and absent.reason == "SSHSecretNotFound"
    assert reader.reads == ["k", "k"], "what the cached key names show needs no read"

    reader.secret = None  # deleted since the cache saw version 4
    gone = await checks.problem("k", "ns", _cached(_versioned(good, "4")))
    assert gone is not None and gone.reason == "SSHSecretNotFound"


def test_a_launcher_has_started_once_a_pod_left_pending_or_an_attempt_ended() -> None:
    launcher: Obj = {"metadata": {"name": "l"}, "status": {"active": 1}}
    assert not launcher_started(None, [])
    assert not launcher_started(launcher, [{"status": {"phase": "Pending"}}])
    assert launcher_started(launcher, [{"status": {"phase": "Running"}}])
    assert launcher_started({"status": {"failed": 1}}, [])


def test_only_workers_of_another_template_are_rolled_and_only_with_the_annotation() -> None:
    job = mpijob("r", workers=2)
    job["metadata"]["annotations"] = {"mpioperator.io/roll-workers-on-template-change": "true"}
    current = new_worker(job, 0)
    changed = mpijob("r", workers=2)
    changed["metadata"]["annotations"] = dict(job["metadata"]["annotations"])
    changed["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "other"
    stale = new_worker(changed, 1)
    assert workers_to_roll(job, [current, stale], None, []) == [stale]
    assert workers_to_roll(mpijob("r", workers=2), [current, stale], None, []) == []
