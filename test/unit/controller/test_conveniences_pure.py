"""The pure parts of issue 18's annotations: the mpirun line, the SSH Secret check, the roll decision."""

from __future__ import annotations

import base64

import pytest

from mpioperator.api.extensions.conveniences import (
    HOSTFILE_PATH,
    LAUNCHER_PROGRAM,
    SSH_SECRET,
    LauncherProgram,
    hostfile_path,
    launcher_program,
    validate_conveniences,
)
from mpioperator.api.objects import Obj
from mpioperator.controller.builders.podspec import UPSTREAM_KEYS, SSHKeys
from mpioperator.controller.builders.secret import new_key_pair
from mpioperator.controller.decorators.compose import new_worker
from mpioperator.controller.decorators.mpirun_command import mpirun_command
from mpioperator.controller.template_edits import launcher_started, workers_to_roll
from mpioperator.controller.user_ssh_secret import UserSecretChecks, key_names, problem
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
    job = mpijob("s", annotations={SSH_SECRET: name})
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


def _files(**values: bytes) -> Obj:
    """A Secret with the openmpi prototype's key names (`id_rsa`, `id_rsa.pub`, `authorized_keys`)."""
    return {"data": {k.replace("_pub", ".pub"): base64.b64encode(v).decode() for k, v in values.items()}}


def test_the_openmpi_prototypes_secret_passes_the_check_and_each_fault_names_its_keys() -> None:
    private, public = new_key_pair()
    assert problem("k", "ns", _files(id_rsa=private, id_rsa_pub=public, authorized_keys=public)) is None
    assert problem("k", "ns", _files(id_rsa=private, id_rsa_pub=public)) is None
    missing = problem("k", "ns", _files(id_rsa=private, authorized_keys=public))
    assert missing is not None and missing.reason == "SSHSecretKeyMissing"
    assert missing.message == (
        'Secret "k" has no key "id_rsa.pub" (it needs "ssh-privatekey" and "ssh-publickey", '
        'or "id_rsa" and "id_rsa.pub")'
    )
    bad = problem("k", "ns", _files(id_rsa=public, id_rsa_pub=public))
    assert bad is not None and bad.message == 'key "id_rsa" of Secret "k" is not a PEM private key'
    nothing = problem("k", "ns", {"data": {"authorized_keys": "eA=="}})
    assert nothing is not None and '"ssh-privatekey"' in nothing.message


def test_pods_mount_the_prototypes_keys_by_their_own_names_and_upstreams_when_both_are_there() -> None:
    assert key_names(_files(id_rsa=b"k", id_rsa_pub=b"p", authorized_keys=b"a")) == SSHKeys(
        "id_rsa", "id_rsa.pub", "authorized_keys"
    )
    assert key_names(_files(id_rsa=b"k", id_rsa_pub=b"p")) == SSHKeys("id_rsa", "id_rsa.pub", "id_rsa.pub")
    both = {"data": {**_files(id_rsa=b"k", id_rsa_pub=b"p")["data"], **_secret(ssh_privatekey=b"k")["data"]}}
    assert key_names(both) == UPSTREAM_KEYS
    job = mpijob("p", workers=1, annotations={SSH_SECRET: "site"})
    volume = next(
        v
        for v in new_worker(job, 0, (), key_names(_files(id_rsa=b"k", id_rsa_pub=b"p")))["spec"]["volumes"]
        if v["name"] == "ssh-auth"
    )
    assert volume["secret"]["secretName"] == "site"
    assert [(i["key"], i["path"]) for i in volume["secret"]["items"]] == [
        ("id_rsa", "id_rsa"),
        ("id_rsa.pub", "id_rsa.pub"),
        ("id_rsa.pub", "authorized_keys"),
    ]


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
    job = mpijob("r", workers=2, annotations={"mpioperator.io/roll-workers-on-template-change": "true"})
    current = new_worker(job, 0)
    changed = mpijob("r", workers=2, annotations=dict(job["metadata"]["annotations"]))
    changed["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "other"
    stale = new_worker(changed, 1)
    assert workers_to_roll(job, [current, stale], None, []) == [stale]
    assert workers_to_roll(mpijob("r", workers=2), [current, stale], None, []) == []


@pytest.mark.parametrize(
    ("path", "detail"),
    [
        ("hostfile", "must be an absolute path to a file, without '.', '..' or repeated '/'"),
        (
            "/kubeflow/../etc/hostfile",
            "must be an absolute path to a file, without '.', '..' or repeated '/'",
        ),
        ("/kubeflow//hostfile", "must be an absolute path to a file, without '.', '..' or repeated '/'"),
        ("/kubeflow/assets/", "must be an absolute path to a file, without '.', '..' or repeated '/'"),
        ("/hostfile", "must be in a directory other than '/'"),
        ("/etc/mpi/x/hostfile", "its directory would overlap /etc/mpi, which holds the job's config"),
        ("/etc/hostfile", "its directory would overlap /etc/mpi, which holds the job's config"),
        ("/root/.ssh/hostfile", "its directory would overlap /root/.ssh, which holds the SSH keys"),
        ("/a/" + "b" * 1100, "must be at most 1024 characters"),
    ],
)
def test_a_hostfile_path_that_is_not_a_file_of_its_own_directory_is_invalid(path: str, detail: str) -> None:
    job = mpijob("h", annotations={HOSTFILE_PATH: path})
    assert [(e.field, e.detail) for e in validate_conveniences(job)] == [
        (f"metadata.annotations[{HOSTFILE_PATH}]", detail)
    ]
    assert hostfile_path(job) is None


def test_the_prototypes_hostfile_path_is_a_good_one() -> None:
    job = mpijob("h", annotations={HOSTFILE_PATH: "/kubeflow/openmpi/assets/hostfile"})
    assert validate_conveniences(job) == []
    assert hostfile_path(job) == "/kubeflow/openmpi/assets/hostfile"


def _t9k_job(program: str, working_dir: str | None) -> Obj:
    job = mpijob("walk", workers=2)
    container = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    del container["command"], container["args"]
    if working_dir is not None:
        container["workingDir"] = working_dir
    job["metadata"]["annotations"] = {LAUNCHER_PROGRAM: program}
    return job


@pytest.mark.parametrize(
    ("program", "working_dir", "resolved"),
    [
        ("./random_walk 1000 10", "/workspace", ("/workspace/random_walk", "1000", "10")),
        ("bin/./run", "/workspace/", ("/workspace/bin/run",)),
        ("../tools/run", "/workspace", ("/workspace/../tools/run",)),
        ("/opt/run", None, ("/opt/run",)),
    ],
)
def test_a_relative_program_is_taken_in_the_launchers_working_dir_as_a_shell_would(
    program: str, working_dir: str | None, resolved: tuple[str, ...]
) -> None:
    job = _t9k_job(program, working_dir)
    assert validate_conveniences(job) == []
    found = launcher_program(job)
    assert found is not None and found.program == resolved
    line = mpirun_command(job, found, "/etc/mpi/hostfile")
    assert line[-len(resolved) :] == list(resolved)


@pytest.mark.parametrize(
    ("program", "working_dir"),
    [
        ("./random_walk", None),  # the image's WORKDIR is not known to the operator
        ("random_walk", "/workspace"),  # a shell would look a bare name up in PATH
        ("./random_walk", "workspace"),
        ("./..", "/workspace"),
    ],
)
def test_a_program_whose_path_cannot_be_known_here_is_invalid(program: str, working_dir: str | None) -> None:
    job = _t9k_job(program, working_dir)
    assert [(e.field, e.detail) for e in validate_conveniences(job)] == [
        (
            f"metadata.annotations[{LAUNCHER_PROGRAM}]",
            "must start with the program's absolute path, or its path relative to the launcher "
            "container's workingDir (./program) when that is set",
        )
    ]
    assert launcher_program(job) is None
