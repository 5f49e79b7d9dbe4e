"""Upstream's integration scenarios (§6.4) on a real API server, controller in-process."""

from __future__ import annotations

import asyncio
from typing import Any

from mpioperator.controller.controller import ControllerSettings
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.actors import Actors, job_selector
from test.integration.controller.conftest import Harness, running_controller


def _actors(h: Harness) -> Actors:
    return Actors(h.cluster, h.namespace)


async def test_success_creates_children_then_follows_workers_and_launcher_to_succeeded(
    harness: Harness,
) -> None:
    a = _actors(harness)
    a.submit(mpijob("pi", workers=2, run_policy={"cleanPodPolicy": "Running"}))

    await a.until(lambda: a.get("jobs", "pi-launcher"), "launcher Job")
    service = a.get("services", "pi")
    assert service is not None
    assert service["spec"]["selector"] == job_selector("pi")
    config = a.get("configmaps", "pi-config")
    assert config is not None and set(config["data"]) == {"hostfile", "discover_hosts.sh"}
    assert (
        config["data"]["hostfile"]
        == f"pi-worker-0.pi.{harness.namespace}.svc slots=1\npi-worker-1.pi.{harness.namespace}.svc slots=1\n"
    )
    secret = a.get("secrets", "pi-ssh")
    assert secret is not None and secret["type"] == "kubernetes.io/ssh-auth"
    assert [p["metadata"]["name"] for p in a.worker_pods("pi")] == ["pi-worker-0", "pi-worker-1"]
    for pod in a.worker_pods("pi"):
        assert {"name": "ssh-auth", "mountPath": "/root/.ssh"} in pod["spec"]["containers"][0]["volumeMounts"]
    launcher = a.launcher_job("pi")
    assert launcher is not None
    volumes = {v["name"] for v in launcher["spec"]["template"]["spec"]["volumes"]}
    assert volumes == {"ssh-auth", "mpi-job-config"}
    await a.until_true(
        lambda: a.status("pi").get("replicaStatuses") == {"Launcher": {}, "Worker": {}},
        "empty replica statuses",
    )
    created = a.condition("pi", "Created")
    assert created is not None and created["status"] == "True" and created["reason"] == "MPIJobCreated"

    a.set_workers("pi", "Running", ready=True)
    await a.until_true(
        lambda: a.status("pi")["replicaStatuses"].get("Worker") == {"active": 2}, "two active workers"
    )
    a.create_launcher_pod("pi")
    await a.until_true(lambda: "MPIJobRunning" in a.event_reasons("pi"), "MPIJobRunning event")
    assert a.status("pi")["replicaStatuses"]["Launcher"] == {"active": 1}
    running = a.condition("pi", "Running")
    assert running is not None and running["status"] == "True"

    a.set_launcher_job("pi", "Complete")
    await a.until_true(lambda: "MPIJobSucceeded" in a.event_reasons("pi"), "MPIJobSucceeded event")
    await a.until_true(lambda: a.worker_pods("pi") == [], "workers deleted by cleanPodPolicy Running")
    status = a.status("pi")
    assert status["replicaStatuses"] == {"Launcher": {"succeeded": 1}, "Worker": {}}
    succeeded = a.condition("pi", "Succeeded")
    assert succeeded is not None and succeeded["status"] == "True"
    assert status.get("completionTime")
    assert a.event_reasons("pi") == ["MPIJobCreated", "MPIJobRunning", "MPIJobSucceeded"]


async def test_converged_job_sync_makes_no_api_write(harness: Harness) -> None:
    a = _actors(harness)
    a.submit(mpijob("quiet", workers=3))
    await a.launched("quiet")
    await a.until_true(lambda: a.condition("quiet", "Running") is not None, "Running condition")
    await a.until_true(lambda: harness.controller.queue_idle(), "the work queue to drain", timeout=30)
    await harness.controller.recorder.flush()

    harness.writer.writes.clear()
    await harness.synced_again("quiet")
    await harness.controller.recorder.flush()
    assert harness.writer.writes == []


async def test_workers_starting_one_after_another_cost_one_status_and_hostfile_write(
    harness: Harness,
) -> None:
    a = _actors(harness)
    a.submit(mpijob("settle", workers=8))
    await a.until(lambda: a.get("jobs", "settle-launcher"), "launcher Job")
    await a.until_true(lambda: harness.controller.queue_idle(), "the work queue to drain", timeout=30)
    harness.writer.writes.clear()

    for pod in a.worker_pods("settle"):
        # Off the event loop, so the controller sees each pod change as it arrives, as from kubelets.
        await asyncio.to_thread(a.set_pod, pod["metadata"]["name"], "Running", ready=True)
    await a.until_true(
        lambda: a.status("settle").get("replicaStatuses", {}).get("Worker", {}).get("active") == 8,
        "eight active workers in the status",
    )
    await a.until_true(lambda: harness.controller.queue_idle(), "the work queue to drain", timeout=30)

    status_writes = [w for w in harness.writer.writes if w[:2] == ("update_status", "mpijobs")]
    hostfile_writes = [w for w in harness.writer.writes if w[:2] == ("update", "configmaps")]
    assert len(status_writes) <= 2, harness.writer.writes
    assert len(hostfile_writes) <= 2, harness.writer.writes


async def test_launcher_pod_ending_before_its_job_completes_costs_one_status_write(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    # The launcher pod's end waits for its Job; the wait is made long here so that however slowly this
    # machine runs, the Job's end arrives within it.
    settings = {"launcher_end_settle": 120.0}
    async with running_controller(mpijob_crd, make_namespace(mpijob_crd), settings=settings) as harness:
        await _one_status_write_for_the_launcher_pod_and_job_ending(harness)


async def _one_status_write_for_the_launcher_pod_and_job_ending(harness: Harness) -> None:
    a = _actors(harness)
    a.submit(mpijob("end", workers=2, run_policy={"cleanPodPolicy": "Running"}))
    pod = await a.launched("end")
    await a.until_true(lambda: a.condition("end", "Running") is not None, "Running")
    await a.until_true(lambda: harness.controller.queue_idle(), "the work queue to drain", timeout=30)
    harness.writer.writes.clear()

    a.set_pod(pod, "Succeeded")
    # The Job controller writes the Job's end within its one-second batch period: the pod's end must
    # wait for it, longer than the 0.3 s other child events settle for.
    key, queue = f"{harness.namespace}/end", harness.controller.queue
    left = await a.until(lambda: queue.delay_left(key), "the launcher pod's end waiting for its Job")
    assert left is not None and left > ControllerSettings().child_settle, left
    a.set_launcher_job("end", "Complete")
    await a.until_true(lambda: a.condition("end", "Succeeded") is not None, "Succeeded")
    await a.until_true(lambda: a.worker_pods("end") == [], "cleanup")
    await a.until_true(lambda: harness.controller.queue_idle(), "the work queue to drain", timeout=30)

    status_writes = [w for w in harness.writer.writes if w[:2] == ("update_status", "mpijobs")]
    assert len(status_writes) == 1, harness.writer.writes
    assert a.status("end")["replicaStatuses"] == {"Launcher": {"succeeded": 1}, "Worker": {}}


async def test_finished_job_sync_makes_no_api_write(harness: Harness) -> None:
    a = _actors(harness)
    a.submit(mpijob("done", workers=1, run_policy={"cleanPodPolicy": "Running"}))
    await a.until(lambda: a.get("jobs", "done-launcher"), "launcher Job")
    a.set_launcher_job("done", "Complete")
    await a.until_true(lambda: a.condition("done", "Succeeded") is not None, "Succeeded")
    await a.until_true(lambda: a.worker_pods("done") == [], "cleanup")
    await a.until_true(lambda: harness.controller.queue_idle(), "the work queue to drain")
    await harness.controller.recorder.flush()

    harness.writer.writes.clear()
    await harness.synced_again("done", times=3)
    await harness.controller.recorder.flush()
    assert harness.writer.writes == []
    assert a.event_reasons("done").count("MPIJobSucceeded") == 1


async def test_wait_for_workers_ready_creates_launcher_only_when_every_worker_is_ready(
    harness: Harness,
) -> None:
    a = _actors(harness)
    await a.submitted_with_workers(
        mpijob("wait", workers=2, spec={"launcherCreationPolicy": "WaitForWorkersReady"})
    )
    await a.until_true(lambda: "Worker" in a.status("wait").get("replicaStatuses", {}), "worker status")
    assert "Launcher" not in a.status("wait")["replicaStatuses"]

    a.set_workers("wait", "Running", ready=False)
    await a.until_true(
        lambda: a.status("wait")["replicaStatuses"]["Worker"] == {"active": 2}, "workers counted active"
    )
    assert a.launcher_job("wait") is None

    a.set_workers("wait", "Running", ready=True)
    await a.until(lambda: a.launcher_job("wait"), "launcher Job after workers are Ready")
    await a.until_true(
        lambda: a.status("wait")["replicaStatuses"] == {"Launcher": {}, "Worker": {"active": 2}},
        "launcher status initialised",
    )
    a.create_launcher_pod("wait")
    await a.until_true(lambda: "MPIJobRunning" in a.event_reasons("wait"), "MPIJobRunning event")


def _resume_with_launcher_template(a: Actors, name: str, template: dict[str, Any]) -> None:
    """Resumes job `name` and changes its launcher template to `template` in the same patch."""
    a.patch_spec(
        name,
        {"spec": {"runPolicy": {"suspend": False}, "mpiReplicaSpecs": {"Launcher": {"template": template}}}},
    )


async def test_suspend_and_resume_propagate_scheduling_directives_to_the_launcher(harness: Harness) -> None:
    a = _actors(harness)
    a.submit(mpijob("sus", workers=2, run_policy={"suspend": True}))
    await a.until(lambda: a.launcher_job("sus"), "suspended launcher Job")
    launcher = a.launcher_job("sus")
    assert launcher is not None and launcher["spec"]["suspend"] is True
    await a.until_true(
        lambda: a.event_reasons("sus") == ["MPIJobCreated", "MPIJobSuspended"], "Created and Suspended events"
    )
    assert a.worker_pods("sus") == []
    assert "startTime" not in a.status("sus")
    assert [c["type"] for c in a.status("sus")["conditions"]] == ["Created", "Suspended", "Running"]

    _resume_with_launcher_template(
        a,
        "sus",
        {
            "metadata": {"labels": {"foo": "bar"}, "annotations": {"kueue": "yes"}},
            "spec": {
                "nodeSelector": {"model": "example-model"},
                "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "schedulingGates": [{"name": "example.com/gate"}],
            },
        },
    )
    await a.until_true(lambda: "MPIJobResumed" in a.event_reasons("sus"), "MPIJobResumed event")
    await a.until_true(lambda: len(a.worker_pods("sus")) == 2, "workers created on resume")
    await a.until_true(
        lambda: not (a.launcher_job("sus") or {}).get("spec", {}).get("suspend"), "launcher resumed"
    )
    template = (a.launcher_job("sus") or {})["spec"]["template"]
    assert template["metadata"]["labels"]["foo"] == "bar"
    assert template["metadata"]["annotations"]["kueue"] == "yes"
    assert template["spec"]["nodeSelector"] == {"model": "example-model"}
    assert template["spec"]["tolerations"][0]["key"] == "gpu"
    assert template["spec"]["schedulingGates"] == [{"name": "example.com/gate"}]
    assert a.status("sus").get("startTime")
    suspended = a.condition("sus", "Suspended")
    assert suspended is not None and suspended["status"] == "False" and suspended["reason"] == "MPIJobResumed"

    a.set_workers("sus", "Running", ready=True)
    a.patch_spec("sus", {"spec": {"runPolicy": {"suspend": True}}})
    await a.until_true(lambda: a.worker_pods("sus") == [], "workers deleted on suspend")
    await a.until_true(
        lambda: (a.launcher_job("sus") or {}).get("spec", {}).get("suspend") is True, "suspended"
    )
    await a.until_true(
        lambda: (a.condition("sus", "Suspended") or {}).get("status") == "True", "Suspended condition True"
    )
    running = a.condition("sus", "Running")
    assert running is not None and running["status"] == "False" and running["reason"] == "MPIJobSuspended"

    _resume_with_launcher_template(
        a,
        "sus",
        {
            "metadata": {"labels": {"foo": "baz"}},
            "spec": {"nodeSelector": {"model": "example-model-v2"}},
        },
    )
    await a.until_true(
        lambda: (
            (a.launcher_job("sus") or {})["spec"]["template"]["spec"].get("nodeSelector")
            == {"model": "example-model-v2"}
        ),
        "new nodeSelector on the launcher",
    )
    assert (a.launcher_job("sus") or {})["spec"]["template"]["metadata"]["labels"]["foo"] == "baz"


async def test_failed_launcher_pod_alone_does_not_fail_the_job_but_a_failed_launcher_job_does(
    harness: Harness,
) -> None:
    a = _actors(harness)
    a.submit(mpijob("fail", workers=2, run_policy={"cleanPodPolicy": "Running"}))
    await a.until(lambda: a.launcher_job("fail"), "launcher Job")
    a.set_workers("fail", "Running", ready=True)
    a.create_launcher_pod("fail", suffix="one", phase="Failed")
    a.set_launcher_failed_count("fail", 1)
    await a.until_true(
        lambda: (
            a.status("fail").get("replicaStatuses") == {"Launcher": {"failed": 1}, "Worker": {"active": 2}}
        ),
        "launcher failed 1, workers active",
    )
    assert a.condition("fail", "Failed") is None

    a.set_launcher_job("fail", "Failed", reason="", message="", failed=2)
    await a.until_true(lambda: (a.condition("fail", "Failed") or {}).get("status") == "True", "Failed")
    await a.until_true(lambda: a.worker_pods("fail") == [], "workers cleaned up")
    await a.until_true(
        lambda: a.status("fail")["replicaStatuses"] == {"Launcher": {"failed": 2}, "Worker": {}},
        "final replica statuses",
    )
    warnings = [e for e in a.events("fail") if e["type"] == "Warning"]
    assert warnings and warnings[-1]["source"]["component"] == "mpi-job-controller"


async def test_job_managed_by_multikueue_is_left_untouched(harness: Harness) -> None:
    a = _actors(harness)
    a.submit(mpijob("remote", workers=1, run_policy={"managedBy": "kueue.x-k8s.io/multikueue"}))
    a.submit(mpijob("local", workers=1))
    # The second job proves the controller has processed the queue past the first one.
    await a.until(lambda: a.launcher_job("local"), "launcher Job of the local job")
    await a.until_true(lambda: harness.controller.queue_idle(), "the work queue to drain")
    assert a.status("remote") == {}
    assert a.launcher_job("remote") is None
    assert a.get("services", "remote") is None
    assert a.get("secrets", "remote-ssh") is None
    assert a.worker_pods("remote") == []
    assert a.events("remote") == []


async def test_children_owned_by_someone_else_are_not_adopted_and_reported(harness: Harness) -> None:
    a = _actors(harness)
    harness.cluster.rest.create(
        a.path("configmaps"), {"metadata": {"name": "taken-config"}, "data": {"hostfile": "mine"}}
    )
    a.submit(mpijob("taken", workers=1))
    await a.until_true(lambda: "ErrResourceExists" in a.event_reasons("taken"), "ErrResourceExists event")
    event = next(e for e in a.events("taken") if e["reason"] == "ErrResourceExists")
    assert 'Resource "taken-config"' in event["message"] and event["type"] == "Warning"
    config = a.get("configmaps", "taken-config")
    assert config is not None and config["data"] == {"hostfile": "mine"}
    assert not config["metadata"].get("ownerReferences")
    assert a.launcher_job("taken") is None


async def test_workers_scale_up_and_down_with_the_hostfile(harness: Harness) -> None:
    a = _actors(harness)
    await a.submitted_with_workers(mpijob("scale", workers=2))
    a.patch_spec("scale", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 4}}}})
    await a.until_true(lambda: len(a.worker_pods("scale")) == 4, "four workers")
    await a.until_true(
        lambda: (a.get("configmaps", "scale-config") or {})["data"]["hostfile"].count("\n") == 4,
        "4-line hostfile",
    )
    a.patch_spec("scale", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 1}}}})
    await a.until_true(
        lambda: [p["metadata"]["name"] for p in a.worker_pods("scale")] == ["scale-worker-0"],
        "one worker left",
    )
    await a.until_true(
        lambda: (a.get("configmaps", "scale-config") or {})["data"]["hostfile"].count("\n") == 1,
        "1-line hostfile",
    )


async def test_evicted_worker_fails_the_job_with_completion_time_and_cleans_up(harness: Harness) -> None:
    a = _actors(harness)
    a.submit(mpijob("evict", workers=2, run_policy={"cleanPodPolicy": "Running"}))
    await a.until(lambda: a.launcher_job("evict"), "launcher Job")
    a.set_workers("evict", "Running", ready=True)
    a.set_pod("evict-worker-1", "Failed", reason="Evicted")
    await a.until_true(
        lambda: (a.condition("evict", "Failed") or {}).get("reason") == "MPIJobEvicted", "evicted"
    )
    status = a.status("evict")
    assert status.get("completionTime"), "D5 #7: eviction is a finished job"
    await a.until_true(
        lambda: [p["metadata"]["name"] for p in a.worker_pods("evict")] == ["evict-worker-1"],
        "the running worker is cleaned up, the failed one kept (policy Running)",
    )
