"""Gang scheduling on a real API server with both PodGroup CRDs (upstream's §6.4 gang scenarios, §3.9
lifecycle) and our two improvements: effective pod requests, and no WaitForWorkersReady deadlock."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator

import pytest

from mpioperator.api.objects import Obj
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.rest import RestError
from test.integration.controller.actors import Actors
from test.integration.controller.conftest import PLUGINS_SCHEDULER, Harness

VOLCANO_ROOT = "/apis/scheduling.volcano.sh/v1beta1"
PLUGINS_ROOT = "/apis/scheduling.x-k8s.io/v1alpha1"


@pytest.fixture
def priority_class(podgroup_crds: LocalCluster) -> Iterator[Callable[[int], str]]:
    """Make a uniquely named cluster PriorityClass with a value; removed after the test."""
    made: list[str] = []

    def make(value: int) -> str:
        name = f"pc-{value}-{uuid.uuid4().hex[:6]}"
        podgroup_crds.rest.create(
            "/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": name}, "value": value}
        )
        made.append(name)
        return name

    yield make
    for name in made:
        with contextlib.suppress(RestError):
            podgroup_crds.rest.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


class GangActors(Actors):
    def __init__(self, h: Harness, root: str) -> None:
        super().__init__(h.cluster, h.namespace)
        self.root = root

    def pod_group(self, name: str) -> Obj | None:
        return self.rest.get_or_none(f"{self.root}/namespaces/{self.ns}/podgroups/{name}")

    async def wait_pod_group(self, name: str) -> Obj:
        found = await self.until(lambda: self.pod_group(name), f"PodGroup {name}")
        assert found is not None
        return found

    def pod_group_spec(self, name: str) -> Obj:
        return (self.pod_group(name) or {}).get("spec") or {}

    def launcher_template(self, job: str) -> Obj:
        launcher = self.launcher_job(job)
        assert launcher is not None
        template: Obj = launcher["spec"]["template"]
        return template


def gang_job(
    name: str,
    *,
    workers: int = 2,
    launcher: Obj | None = None,
    worker: Obj | None = None,
    policy: Obj | None = None,
    run_policy: Obj | None = None,
    spec: Obj | None = None,
) -> Obj:
    """A pi MPIJob whose launcher asks {cpu 1, memory 2Gi} and workers {cpu 10, memory 20Gi} by default;
    `launcher`/`worker` are merged into the templates' pod specs."""
    policies = dict(run_policy or {})
    if policy is not None:
        policies["schedulingPolicy"] = policy
    body = mpijob(name, workers=workers, run_policy=policies, spec=spec)
    specs = body["spec"]["mpiReplicaSpecs"]
    for kind, requests, extra in (
        ("Launcher", {"cpu": "1", "memory": "2Gi"}, launcher),
        ("Worker", {"cpu": "10", "memory": "20Gi"}, worker),
    ):
        if kind not in specs:
            continue
        pod_spec = specs[kind]["template"]["spec"]
        pod_spec["containers"][0]["resources"] = {"requests": requests}
        pod_spec.update(extra or {})
    return body


def owner_of(obj: Obj) -> Obj:
    refs = [r for r in obj["metadata"].get("ownerReferences") or () if r.get("controller")]
    assert len(refs) == 1, refs
    return dict(refs[0])


async def test_volcano_pod_group_is_made_from_the_job_and_its_pods_join_it(
    volcano: Harness, priority_class: Callable[[int], str]
) -> None:
    a = GangActors(volcano, VOLCANO_ROOT)
    pc = priority_class(100000)
    a.submit(gang_job("vc", policy={"queue": "default", "priorityClass": pc}))

    pod_group = await a.wait_pod_group("vc")
    assert owner_of(pod_group)["kind"] == "MPIJob" and owner_of(pod_group)["name"] == "vc"
    assert pod_group["spec"]["minMember"] == 3
    assert pod_group["spec"]["queue"] == "default"
    assert pod_group["spec"]["priorityClassName"] == pc
    assert pod_group["spec"]["minResources"] == {"cpu": "21", "memory": "42Gi"}

    await a.until_true(lambda: len(a.worker_pods("vc")) == 2, "two workers")
    for pod in a.worker_pods("vc"):
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "vc"
    await a.until(lambda: a.launcher_job("vc"), "launcher Job")
    template = a.launcher_template("vc")
    assert template["spec"]["schedulerName"] == "volcano"
    assert template["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "vc"


async def test_volcano_pod_group_follows_min_available_and_queue_changes(volcano: Harness) -> None:
    a = GangActors(volcano, VOLCANO_ROOT)
    a.submit(gang_job("vcu", policy={"queue": "default"}))
    await a.wait_pod_group("vcu")

    a.patch_spec("vcu", {"spec": {"runPolicy": {"schedulingPolicy": {"minAvailable": 2, "queue": "q-mpi"}}}})
    await a.until_true(
        lambda: a.pod_group_spec("vcu").get("queue") == "q-mpi", "PodGroup queue follows the job"
    )
    spec = a.pod_group_spec("vcu")
    assert spec["minMember"] == 2
    # Equal priorities: the workers are cut to minMember - 1 (§3.7).
    assert spec["minResources"] == {"cpu": "11", "memory": "22Gi"}


async def test_scheduler_plugins_pod_group_is_made_from_the_job_and_its_pods_join_it(
    plugins: Harness,
) -> None:
    a = GangActors(plugins, PLUGINS_ROOT)
    a.submit(gang_job("sp", policy={"scheduleTimeoutSeconds": 900}))

    pod_group = await a.wait_pod_group("sp")
    assert owner_of(pod_group)["name"] == "sp"
    assert pod_group["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "21", "memory": "42Gi"},
        "scheduleTimeoutSeconds": 900,
    }
    await a.until_true(lambda: len(a.worker_pods("sp")) == 2, "two workers")
    for pod in a.worker_pods("sp"):
        assert pod["spec"]["schedulerName"] == PLUGINS_SCHEDULER
        assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "sp"
    await a.until(lambda: a.launcher_job("sp"), "launcher Job")
    template = a.launcher_template("sp")
    assert template["spec"]["schedulerName"] == PLUGINS_SCHEDULER
    assert template["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "sp"

    a.patch_spec("sp", {"spec": {"runPolicy": {"schedulingPolicy": {"scheduleTimeoutSeconds": 10}}}})
    await a.until_true(
        lambda: a.pod_group_spec("sp").get("scheduleTimeoutSeconds") == 10, "timeout follows the job"
    )


async def test_suspended_job_has_no_pod_group_and_suspending_deletes_it(plugins: Harness) -> None:
    a = GangActors(plugins, PLUGINS_ROOT)
    a.submit(gang_job("sus", run_policy={"suspend": True}))
    await a.until(lambda: a.launcher_job("sus"), "suspended launcher Job")
    await a.until_true(lambda: plugins.controller.queue_idle(), "the work queue to drain")
    assert a.pod_group("sus") is None

    a.patch_spec("sus", {"spec": {"runPolicy": {"suspend": False}}})
    await a.wait_pod_group("sus")
    await a.until_true(lambda: len(a.worker_pods("sus")) == 2, "workers on resume")

    a.patch_spec("sus", {"spec": {"runPolicy": {"suspend": True}}})
    await a.until_true(lambda: a.pod_group("sus") is None, "PodGroup deleted on suspend")
    await a.until_true(lambda: a.worker_pods("sus") == [], "workers deleted on suspend")


@pytest.mark.parametrize(("policy", "kept"), [("Running", False), ("None", True)])
async def test_completion_deletes_the_pod_group_unless_clean_pod_policy_is_none(
    volcano: Harness, policy: str, kept: bool
) -> None:
    a = GangActors(volcano, VOLCANO_ROOT)
    a.submit(gang_job("fin", run_policy={"cleanPodPolicy": policy}))
    made = await a.wait_pod_group("fin")
    await a.until(lambda: a.launcher_job("fin"), "launcher Job")

    a.set_launcher_job("fin", "Complete")
    await a.until_true(lambda: a.condition("fin", "Succeeded") is not None, "Succeeded")
    if kept:
        # The sync that writes Succeeded is not the one that cleans up: that is the next sync, of the job
        # as finished, which runs once the status write's echo reaches the cache. An idle queue may come
        # before that echo, so the PodGroup is looked at only after a sync of the finished job has ended.
        await a.until_true(lambda: finished_in_cache(volcano, "fin"), "the finished job in the cache")
        await volcano.synced_again("fin")
        await a.until_true(volcano.controller.queue_idle, "the work queue to drain")
        left = a.pod_group("fin")
        assert left is not None, "the PodGroup of a finished job under cleanPodPolicy None was deleted"
        assert left["metadata"]["uid"] == made["metadata"]["uid"], "deleted and made again"
    else:
        await a.until_true(lambda: a.pod_group("fin") is None, "PodGroup deleted on completion")


def finished_in_cache(h: Harness, name: str) -> bool:
    """The controller's cache has `name` with a completionTime: its next sync treats it as finished."""
    for job in h.controller.cached_mpijobs() or ():
        if job["metadata"]["name"] == name and (job.get("status") or {}).get("completionTime"):
            return True
    return False


async def test_priority_classes_decide_which_replica_min_resources_cuts(
    volcano: Harness, priority_class: Callable[[int], str]
) -> None:
    a = GangActors(volcano, VOLCANO_ROOT)
    high, low = priority_class(100010), priority_class(10010)
    policy = {"minAvailable": 2}
    a.submit(
        gang_job(
            "lh",
            launcher={"priorityClassName": high},
            worker={"priorityClassName": low},
            policy=policy,
        )
    )
    a.submit(
        gang_job(
            "wh",
            launcher={"priorityClassName": low},
            worker={"priorityClassName": high},
            policy=policy,
        )
    )
    # Launcher first: the lower workers are cut to minMember - 1 = 1.
    await a.until_true(
        lambda: a.pod_group_spec("lh").get("minResources") == {"cpu": "11", "memory": "22Gi"},
        "launcher plus one worker",
    )
    # Workers first: upstream cuts the second entry, the launcher, and keeps every worker.
    await a.until_true(
        lambda: a.pod_group_spec("wh").get("minResources") == {"cpu": "21", "memory": "42Gi"},
        "launcher plus both workers",
    )
    assert a.pod_group_spec("lh")["priorityClassName"] == high
    assert a.pod_group_spec("wh")["priorityClassName"] == low


@pytest.mark.parametrize(
    ("init_containers", "cpu"),
    [
        pytest.param(
            [
                {
                    "name": "sidecar",
                    "image": "x",
                    "restartPolicy": "Always",
                    "resources": {"requests": {"cpu": "500m"}},
                },
                {"name": "warmup", "image": "x", "resources": {"requests": {"cpu": "4"}}},
            ],
            # A worker runs its main container beside the native sidecar for its whole life: 10 + 0.5 cpu
            # (the init container's 4 + 0.5 is less). Upstream counts 10 per worker, 21 in all.
            "22",
            id="native-sidecar",
        ),
        pytest.param(
            [{"name": "warmup", "image": "x", "resources": {"requests": {"cpu": "16"}}}],
            # Each worker needs 16 cpu while its init container runs; upstream's sum would say 1 + 2 x 10 = 21.
            "33",
            id="init-container-larger-than-the-main-container",
        ),
    ],
)
async def test_min_resources_count_init_containers_and_native_sidecars(
    plugins: Harness, init_containers: list[Obj], cpu: str
) -> None:
    a = GangActors(plugins, PLUGINS_ROOT)
    a.submit(gang_job("init", worker={"initContainers": init_containers}))
    await a.until_true(
        lambda: a.pod_group_spec("init").get("minResources") == {"cpu": cpu, "memory": "42Gi"},
        "minResources with the init containers",
    )


async def test_wait_for_workers_ready_gang_counts_the_launcher_only_once_it_exists(plugins: Harness) -> None:
    a = GangActors(plugins, PLUGINS_ROOT)
    a.submit(gang_job("wait", spec={"launcherCreationPolicy": "WaitForWorkersReady"}))
    pod_group = await a.wait_pod_group("wait")
    # Only the workers exist before the gang must start: a launcher member would never arrive.
    assert pod_group["spec"]["minMember"] == 2
    assert pod_group["spec"]["minResources"] == {"cpu": "20", "memory": "40Gi"}
    await a.until_true(lambda: len(a.worker_pods("wait")) == 2, "two workers")
    assert a.launcher_job("wait") is None

    a.set_workers("wait", "Running", ready=True)
    await a.until(lambda: a.launcher_job("wait"), "launcher Job once workers are Ready")
    await a.until_true(lambda: a.pod_group_spec("wait").get("minMember") == 3, "launcher joins the gang")
    assert a.pod_group_spec("wait")["minResources"] == {"cpu": "21", "memory": "42Gi"}
    assert a.launcher_template("wait")["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "wait"


async def test_wait_for_workers_ready_keeps_an_explicit_min_available(plugins: Harness) -> None:
    a = GangActors(plugins, PLUGINS_ROOT)
    a.submit(
        gang_job("exp", policy={"minAvailable": 3}, spec={"launcherCreationPolicy": "WaitForWorkersReady"})
    )
    await a.wait_pod_group("exp")
    assert a.pod_group_spec("exp")["minMember"] == 3


async def test_pod_group_owned_by_someone_else_is_not_adopted_and_reported(volcano: Harness) -> None:
    a = GangActors(volcano, VOLCANO_ROOT)
    a.rest.create(
        f"{VOLCANO_ROOT}/namespaces/{a.ns}/podgroups",
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "taken"}},
    )
    a.submit(gang_job("taken"))
    await a.until_true(lambda: "ErrResourceExists" in a.event_reasons("taken"), "ErrResourceExists event")
    event = next(e for e in a.events("taken") if e["reason"] == "ErrResourceExists")
    assert (
        event["message"] == 'Resource "taken" of Kind "PodGroup" already exists and is not managed by MPIJob'
    )
    found = a.pod_group("taken")
    assert found is not None and not found["metadata"].get("ownerReferences")
    # The gang step comes before the workers, so none are made for a gang we cannot define.
    assert a.worker_pods("taken") == []


async def test_converged_gang_job_sync_makes_no_api_write(volcano: Harness) -> None:
    a = GangActors(volcano, VOLCANO_ROOT)
    # No queue: the API server stores Volcano's default queue, which must not look like a change.
    a.submit(gang_job("quiet"))
    await a.until(lambda: a.launcher_job("quiet"), "launcher Job")
    assert a.pod_group_spec("quiet")["queue"] == "default"
    await assert_running_job_resyncs_without_writes(volcano, a, "quiet")


async def assert_running_job_resyncs_without_writes(h: Harness, a: Actors, name: str) -> None:
    """Once job `name`, its launcher made, runs and the queue is idle, one more sync of it writes nothing."""
    a.set_workers(name, "Running", ready=True)
    a.create_launcher_pod(name)
    await a.until_true(lambda: a.condition(name, "Running") is not None, "Running condition")
    await a.until_true(lambda: h.controller.queue_idle(), "the work queue to drain")
    await h.controller.recorder.flush()

    h.writer.writes.clear()
    await h.synced_again(name)
    await h.controller.recorder.flush()
    assert h.writer.writes == []


async def test_pod_group_events_bring_an_edited_or_deleted_pod_group_back(plugins: Harness) -> None:
    a = GangActors(plugins, PLUGINS_ROOT)
    a.submit(gang_job("back"))
    first = await a.wait_pod_group("back")
    await a.until_true(lambda: plugins.controller.queue_idle(), "the work queue to drain")

    # Nothing about the MPIJob changes: only the PodGroup's own watch events can trigger these syncs.
    path = f"{PLUGINS_ROOT}/namespaces/{a.ns}/podgroups/back"
    a.rest.merge_patch(path, {"spec": {"minMember": 1}})
    await a.until_true(lambda: a.pod_group_spec("back").get("minMember") == 3, "edit reverted")

    a.rest.delete(path)
    await a.until_true(
        lambda: (a.pod_group("back") or first)["metadata"]["uid"] != first["metadata"]["uid"],
        "PodGroup recreated",
    )
    assert a.pod_group_spec("back")["minMember"] == 3
