"""The launcher waits for its hosts (`mpioperator.io/wait-for-ssh-port`) on the real node: jobs whose workers'
sshd comes up late, and what their launchers went through (how many launcher pods, how often their
container ended and with which exit codes, the time from the last worker Ready to the first rank line)."""

from __future__ import annotations

import datetime as dt
import re
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mpioperator.api.extensions.host_wait import CONTAINER_NAME
from mpioperator.api.extensions.launch import WAIT_FOR_SSH_PORT, WORKER_STARTUP_DEADLINE
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.images import ensure
from mpioperator.testing.images.buildah import repository_path
from mpioperator.testing.images.catalog import OPERATOR
from mpioperator.testing.jobs import Job
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import WaitTimeout, wait_for
from test.real.conftest import running_operator
from test.real.test_real_mpijobs import (
    RUN_TIMEOUT,
    assert_pi_ran_where_the_hostfile_says,
    diagnosis,
    launcher_log,
    pi_job,
    wait_finished,
)

SSHD = "/usr/sbin/sshd -De -f /home/mpiuser/.sshd_config"
# The image's entrypoint still runs (args, not command): it writes the environment for sshd, then runs this.
LATE_SSHD_SECONDS = 15
# The gate's tests: long enough that a launcher which does not wait loses the race on this loaded
# machine. 15 s was not (3 of 5 launchers without the gate got through at their first try, as their pod
# started later than the workers' sshd and ssh's ConnectionAttempts=10 covers about 10 s more), so a
# waiter that never waited passed most runs.
CONTROL_SSHD_SECONDS = 60
# What each gated run's waiter must have waited to show that a launcher without it would have failed:
# started that much before sshd answered, past the 10 s that ssh's retries cover.
HONEST_WAIT_SECONDS = 20.0
WAITED = re.compile(r"all \d+ host\(s\) reachable after (\d+\.\d+)s")
RANK_LINE = re.compile(r"^(\S+) rank \d+ of \d+ on \S+$", re.MULTILINE)


def late_sshd_job(
    name: str,
    *,
    policy: str,
    annotations: dict[str, str] | None = None,
    implementation: str = "OpenMPI",
    sshd_after: int = LATE_SSHD_SECONDS,
) -> dict[str, Any]:
    """2 workers, 2 ranks, a worker's sshd started `sshd_after` seconds after its container, no readiness
    probe (what users who define none get), the launcher's default back-off limit and restart policy."""
    body = pi_job(name, workers=2, ranks=2, implementation=implementation)
    spec = body["spec"]
    spec["launcherCreationPolicy"] = policy
    # Pods stay after the job ends, so the workers' Ready times can be read.
    spec["runPolicy"] = {"cleanPodPolicy": "None"}
    worker = spec["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker.pop("readinessProbe")
    worker["args"] = ["sh", "-c", f"sleep {sshd_after}; exec {SSHD}"]
    if annotations:
        body["metadata"]["annotations"] = dict(annotations)
    return body


@dataclass(frozen=True)
class Outcome:
    result: str  # Succeeded or Failed
    launcher_pods: int
    launcher_ends: list[int]  # exit codes of every launcher container run that ended, oldest pod first
    job_failed: int  # the launcher Job's status.failed
    ready_to_first_rank: float | None  # seconds; None without a rank line

    @property
    def launcher_failures(self) -> int:
        return sum(1 for code in self.launcher_ends if code != 0)

    def line(self) -> str:
        timing = "no rank line" if self.ready_to_first_rank is None else f"{self.ready_to_first_rank:.1f}s"
        return (
            f"{self.result}: {self.launcher_pods} launcher pod(s), container exits {self.launcher_ends}, "
            f"launcher Job failed={self.job_failed}, last worker Ready -> first rank {timing}"
        )


def _time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _ready_at(pod: dict[str, Any]) -> dt.datetime | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            return _time(cond["lastTransitionTime"])
    return None


def _exits(pod: dict[str, Any]) -> list[int]:
    codes = []
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        if status.get("name") != "launcher":
            continue
        # The kubelet keeps the last two runs of a container restarted in place; restartCount says how many
        # ended before the current one, and the earlier ones ended like lastState or we cannot tell.
        last = (status.get("lastState") or {}).get("terminated")
        restarts = int(status.get("restartCount") or 0)
        if restarts:
            code = int(last["exitCode"]) if last else -1
            codes += [-1] * (restarts - 1) + [code]
        current = (status.get("state") or {}).get("terminated")
        if current:
            codes.append(int(current["exitCode"]))
    return codes


def waiter_diagnosis(job: Job) -> str:
    """The launcher pods' init container statuses and the waiter's logs, this run's and the last one's."""
    out = []
    for pod in job.pods("launcher"):
        name = pod["metadata"]["name"]
        out.append(f"{name}: {(pod.get('status') or {}).get('initContainerStatuses')}")
        for previous in ("--previous=false", "--previous=true"):
            log = job.cluster.kubectl(
                "-n", job.ns, "logs", name, "-c", CONTAINER_NAME, previous, "--tail=20", check=False
            )
            out.append(f"waiter log ({previous}):\n{log.stdout}{log.stderr}")
    return "\n".join(out)


def launcher_runs(job: Job) -> str:
    """Each launcher pod's container statuses and the log of its launcher container's last ended run, for
    a test that finds a launcher restarted: what made mpirun fail."""
    out = []
    for pod in job.pods("launcher"):
        name = pod["metadata"]["name"]
        out.append(f"{name}: {(pod.get('status') or {}).get('containerStatuses')}")
        log = job.cluster.kubectl(
            "-n", job.ns, "logs", "--timestamps", "--previous", name, "-c", "launcher", check=False
        )
        out.append(f"its launcher container's previous run:\n{log.stdout}{log.stderr}")
    return "\n".join(out)


def finished(job: Job) -> dict[str, Any]:
    return wait_finished(job, RUN_TIMEOUT, lambda: f"\n{waiter_diagnosis(job)}")


def run_late_sshd_job(job: Job, body: dict[str, Any] | None = None) -> Outcome:
    """Submits `body` (unless the job is already submitted), waits for the job to end, and reads what its
    launchers went through."""
    if body is not None:
        job.submit(body)
    ended = finished(job)
    launchers = sorted(
        job.pods("launcher"), key=lambda p: (p["metadata"]["creationTimestamp"], p["metadata"]["name"])
    )
    workers = job.pods("worker")
    ready = [_ready_at(p) for p in workers]
    launcher_job = job.launcher() or {}
    log = job.cluster.kubectl(
        "-n", job.ns, "logs", "--timestamps", f"job/{job.name}-launcher", check=False
    ).stdout
    first_rank = RANK_LINE.search(log)
    gap = None
    if first_rank and ready and all(r is not None for r in ready):
        last_ready = max(r for r in ready if r is not None)
        gap = (_time(first_rank.group(1)) - last_ready).total_seconds()
    return Outcome(
        result=str(ended["type"]),
        launcher_pods=len(launchers),
        launcher_ends=[code for pod in launchers for code in _exits(pod)],
        job_failed=int((launcher_job.get("status") or {}).get("failed") or 0),
        ready_to_first_rank=gap,
    )


def _manifest_digest(registry: str, name: str) -> str:
    repository, _, tag = repository_path(name).rpartition(":")
    request = urllib.request.Request(
        f"http://{registry}/v2/{repository}/manifests/{tag}",
        method="HEAD",
        headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return str(answer.headers["Docker-Content-Digest"])


@pytest.fixture(scope="module")
def waiter_image(real_cluster: LocalCluster) -> str:
    """This checkout's operator image by digest. The image cache and the node's registry storage are shared
    by every checkout on the machine, so another checkout's run may push its own operator image under the
    same tag while this module runs; the launcher pods here pull exactly the image built from this code."""
    assert real_cluster.node is not None and real_cluster.node.registry_address
    registry = real_cluster.node.registry_address
    with ensure.locked():
        env = ensure.build_env()
        ensure.push_images(env, ensure.build_images(env), registry)
        digest = _manifest_digest(registry, OPERATOR)
    return f"{OPERATOR.rpartition(':')[0]}@{digest}"


@pytest.fixture
def waiting_operator(
    real_cluster: LocalCluster, waiter_image: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    with running_operator(real_cluster, tmp_path, f"--wait-for-hosts-image={waiter_image}") as proc:
        yield proc


@pytest.fixture
def ns(real_cluster: LocalCluster, make_namespace: Any, waiting_operator: OperatorProcess) -> str:
    name: str = make_namespace(real_cluster)
    return name


def waiter_log(job: Job) -> str:
    pod = job.pods("launcher")[0]["metadata"]["name"]
    return job.cluster.kubectl("-n", job.ns, "logs", pod, "-c", CONTAINER_NAME).stdout


def assert_waited_longer_than_ssh_retries(job: Job, hosts: int) -> None:
    """The waiter found all hosts reachable only after HONEST_WAIT_SECONDS: a launcher that started without
    waiting would have run out of ssh's retries, so this run tells a waiter that waits from one that does
    not."""
    log = waiter_log(job)
    found = WAITED.search(log)
    assert found and f"all {hosts} host(s)" in found.group(0), log
    assert float(found.group(1)) >= HONEST_WAIT_SECONDS, (
        f"{job.name}'s waiter waited only {found.group(1)}s: a launcher that does not wait might have got "
        f"through too, so this run shows nothing\n{log}"
    )


def test_workers_whose_sshd_starts_late_run_without_a_launcher_restart_when_the_launcher_waits(
    real_cluster: LocalCluster, ns: str
) -> None:
    """Today's launcher (upstream's default AtStartup) races the workers' sshd and is restarted; with the
    annotation its init container waits until both workers accept connections on 2222, and mpirun's
    first attempt succeeds. Both jobs' sshd starts CONTROL_SSHD_SECONDS late, and the control run must
    lose the race: otherwise the delay did not outlast the launcher's start and a launcher that does not
    wait would pass too."""
    late = CONTROL_SSHD_SECONDS
    before_body = late_sshd_job("before", policy="AtStartup", sshd_after=late)
    before = run_late_sshd_job(Job(real_cluster, ns, "before"), before_body)
    waits = {WAIT_FOR_SSH_PORT: "2222"}
    after_job = Job(real_cluster, ns, "after")
    after = run_late_sshd_job(
        after_job, late_sshd_job("after", policy="AtStartup", annotations=waits, sshd_after=late)
    )

    print(f"without the annotation: {before.line()}")
    print(f"with the annotation:    {after.line()}")
    assert before.launcher_ends and before.launcher_ends[0] != 0, (
        f"the control run's launcher got through at its first try, so sshd {late}s late did not make a "
        f"launcher that does not wait fail: {before.line()}"
    )
    assert after.result == "Succeeded", diagnosis(after_job)
    assert after.launcher_pods == 1 and after.launcher_ends == [0], after.line()
    assert after.job_failed == 0, after.line()
    log = launcher_log(real_cluster, ns, "after")
    assert_pi_ran_where_the_hostfile_says(real_cluster, ns, "after", log, ranks=2)
    assert "all 2 host(s) reachable after" in waiter_log(after_job)


def test_mpich_and_intel_launchers_wait_for_workers_whose_sshd_starts_a_minute_late(
    real_cluster: LocalCluster, ns: str
) -> None:
    """Hydra's hostfile (`host:slots`) read by the same waiter; each mpirun's first attempt succeeds. All
    four jobs run at once, each with sshd CONTROL_SSHD_SECONDS late: with the annotation for MPICH and
    Intel MPI, and a control of each without it, which must lose the race (else the delay did not outlast
    the launcher's start and a waiter that never waits would pass too)."""
    gated: dict[str, Job] = {}
    controls: dict[str, Job] = {}
    for implementation in ("MPICH", "Intel"):
        name = implementation.lower()
        for jobs, job_name, waits in (
            (gated, name, {WAIT_FOR_SSH_PORT: "2222"}),
            (controls, f"{name}-control", None),
        ):
            body = late_sshd_job(
                job_name,
                policy="AtStartup",
                annotations=waits,
                implementation=implementation,
                sshd_after=CONTROL_SSHD_SECONDS,
            )
            jobs[implementation] = Job(real_cluster, ns, job_name).submit(body)

    for implementation, job in gated.items():
        control = run_late_sshd_job(controls[implementation])
        outcome = run_late_sshd_job(job)
        print(f"{implementation} without the annotation: {control.line()}")
        print(f"{implementation} with the annotation:    {outcome.line()}")
        assert control.launcher_ends and control.launcher_ends[0] != 0, (
            f"{implementation}'s control launcher got through at its first try, so sshd "
            f"{CONTROL_SSHD_SECONDS}s late did not make a launcher that does not wait fail: {control.line()}"
        )
        assert outcome.result == "Succeeded", diagnosis(job)
        assert outcome.launcher_pods == 1 and outcome.launcher_ends == [0], (
            f"{outcome.line()}\n{waiter_diagnosis(job)}\n{launcher_runs(job)}"
        )
        assert_pi_ran_where_the_hostfile_says(
            real_cluster, ns, job.name, launcher_log(real_cluster, ns, job.name), ranks=2
        )
        assert_waited_longer_than_ssh_retries(job, hosts=2)


def test_workers_whose_sshd_never_starts_fail_the_job_at_its_deadline_naming_them(
    real_cluster: LocalCluster, ns: str
) -> None:
    body = late_sshd_job(
        "never", policy="AtStartup", annotations={WAIT_FOR_SSH_PORT: "2222", WORKER_STARTUP_DEADLINE: "20"}
    )
    worker = body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["args"] = ["sleep", "infinity"]
    job = Job(real_cluster, ns, "never").submit(body)

    failed = finished(job)

    assert failed["type"] == "Failed", diagnosis(job)
    assert failed["reason"] == "WorkerStartupDeadlineExceeded", failed
    message = failed["message"]
    assert "gave up waiting for its hosts: 2 of 2 hosts not reachable within 20s" in message, message
    # Each worker named with what held it: its name (not yet Ready, so not yet in DNS) or its port.
    for index in (0, 1):
        held = re.search(rf"never-worker-{index}\.never\.{ns}\.svc \(([^)]*)\)", message)
        assert held and held.group(1) in ("does not resolve", "port 2222: Connection refused"), message
    assert message.count("not reachable") == 1, message
    events = real_cluster.rest.get(f"/api/v1/namespaces/{ns}/events")["items"]
    warnings = [e for e in events if e["reason"] == "WorkerStartupDeadlineExceeded"]
    assert len(warnings) == 1 and warnings[0]["type"] == "Warning", warnings
    # Its launcher Job is stopped: the waiter would only wait again, counting against backoffLimit.
    wait_for(
        lambda: (job.launcher() or {}).get("spec", {}).get("suspend") and not job.pods("launcher"),
        timeout=60,
        what="the launcher Job suspended and its pod gone",
    )


def test_a_resumed_job_waits_again_and_the_launcher_as_worker_waits_for_its_own_name(
    real_cluster: LocalCluster, ns: str
) -> None:
    """Suspended while its launcher waits, then resumed: the new launcher pod waits for the new workers.
    Under runLauncherAsWorker the hostfile names the launcher too, whose name only has to resolve."""
    body = late_sshd_job(
        "resumed",
        policy="AtStartup",
        annotations={WAIT_FOR_SSH_PORT: "2222"},
        sshd_after=CONTROL_SSHD_SECONDS,
    )
    body["spec"]["runLauncherAsWorker"] = True
    launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["args"] = ["mpirun", "-n", "3", "/home/mpiuser/pi"]
    job = Job(real_cluster, ns, "resumed").submit(body)
    try:
        wait_for(
            lambda: "waiting for 3 host(s)" in (waiter_log(job) if job.pods("launcher") else ""),
            timeout=RUN_TIMEOUT,
            what="the launcher's waiter to start",
        )
    except WaitTimeout as timeout:
        raise AssertionError(f"{timeout}\n{diagnosis(job)}\n{waiter_diagnosis(job)}") from None
    first_launcher = job.pods("launcher")[0]["metadata"]["uid"]

    job.patch({"spec": {"runPolicy": {"suspend": True}}})
    wait_for(lambda: not job.pods(), timeout=RUN_TIMEOUT, what="the suspended job's pods gone")
    job.patch({"spec": {"runPolicy": {"suspend": False}}})

    ended = finished(job)
    assert ended["type"] == "Succeeded", diagnosis(job)
    (launcher_pod,) = job.pods("launcher")
    assert launcher_pod["metadata"]["uid"] != first_launcher
    (waiter,) = launcher_pod["status"]["initContainerStatuses"]
    assert waiter["restartCount"] == 0 and waiter["state"]["terminated"]["exitCode"] == 0, waiter
    assert_waited_longer_than_ssh_retries(job, hosts=3)
    log = launcher_log(real_cluster, ns, "resumed")
    assert_pi_ran_where_the_hostfile_says(real_cluster, ns, "resumed", log, ranks=3)
