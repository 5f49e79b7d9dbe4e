"""T9k's per-replica debug and resume settings on a real API server, the controller running: what the
launcher and worker pods run in debug mode and after a resume, and the launcher Job made again for it."""

from __future__ import annotations

from typing import Any

from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.actors import Actors
from test.integration.controller.conftest import Harness

P = "mpioperator.io/"
INIT = {"name": "fetch-data", "image": "busybox", "command": ["sh", "-c", "sleep 600"]}


def _with_init_containers(body: dict[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    body["metadata"]["annotations"] = annotations
    for replica in body["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["spec"]["initContainers"] = [dict(INIT)]
    return body


async def test_debug_mode_runs_the_workers_command_and_skips_the_init_containers_asked_for(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    annotations = {
        f"{P}debug-mode": "true",
        f"{P}debug-worker-command": "sleep infinity",
        f"{P}debug-skip-init-containers": "Launcher,Worker",
    }
    a.submit(_with_init_containers(mpijob("dbg", workers=2), annotations))

    launcher = await a.until(lambda: a.launcher_job("dbg"), "the launcher Job")
    assert launcher is not None
    await a.until_true(lambda: len(a.worker_pods("dbg")) == 2, "two workers")
    for pod in a.worker_pods("dbg"):
        assert pod["spec"]["containers"][0]["command"] == ["sleep", "infinity"]
        assert "args" not in pod["spec"]["containers"][0] and "initContainers" not in pod["spec"]
    template = launcher["spec"]["template"]["spec"]
    assert template["containers"][0]["command"] == ["sleep", "infinity"]
    assert "initContainers" not in template


async def test_a_resumed_job_gets_a_launcher_made_again_with_the_resumes_command(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    annotations = {
        f"{P}resume-launcher-command": "/home/mpiuser/resume.sh --from-checkpoint",
        f"{P}resume-skip-init-containers": "Worker",
    }
    a.submit(_with_init_containers(mpijob("again", workers=2, run_policy={"suspend": True}), annotations))
    first = await a.until(lambda: a.launcher_job("again"), "the suspended launcher Job")
    assert first is not None
    assert first["spec"]["suspend"] is True
    assert first["spec"]["template"]["spec"]["containers"][0]["command"] == ["mpirun"]

    a.patch_spec("again", {"spec": {"runPolicy": {"suspend": False}}})

    def renewed() -> dict[str, Any] | None:
        launcher = a.launcher_job("again")
        same = launcher is None or launcher["metadata"]["uid"] == first["metadata"]["uid"]
        return None if same else launcher

    second = await a.until(renewed, "a launcher Job made after the resume")
    assert second is not None
    assert second["metadata"]["annotations"] == {f"{P}made-after-resume": "true"}
    assert not second["spec"].get("suspend")
    container = second["spec"]["template"]["spec"]["containers"][0]
    assert (
        container["command"] == ["/home/mpiuser/resume.sh", "--from-checkpoint"] and "args" not in container
    )
    assert second["spec"]["template"]["spec"]["initContainers"][0]["name"] == "fetch-data"
    await a.until_true(lambda: len(a.worker_pods("again")) == 2, "two workers")
    assert all("initContainers" not in p["spec"] for p in a.worker_pods("again"))
    assert "LauncherRenewedForResume" in a.event_reasons("again")

    a.set_workers("again", "Running", ready=True)
    a.create_launcher_pod("again")
    await a.until_true(lambda: a.status("again").get("phase") == "Running", "phase Running")
    assert (a.launcher_job("again") or {}).get("metadata", {}).get("uid") == second["metadata"]["uid"], (
        "made once"
    )
