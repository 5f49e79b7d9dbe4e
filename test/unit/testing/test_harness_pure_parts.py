"""Pure parts of the local-cluster harness: command lines per tier, fake nodes, stages, waiting."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pytest
import yaml

from mpioperator.testing import components
from mpioperator.testing.binaries import Binaries
from mpioperator.testing.nodes import NodeShape, fake_node, node_ready
from mpioperator.testing.simulation import EXIT_CODE, RUN_FOR, outcome
from mpioperator.testing.wait import ProbeAborted, WaitTimeout, wait_for, wait_while_progressing

BINS = Binaries(Path("/bin-dir"))
LAYOUT = components.Layout(Path("/work"))


def test_apiserver_tier_disables_admission_plugins_that_need_controller_manager() -> None:
    argv = components.apiserver_argv(BINS, LAYOUT, port=1, etcd_port=2, with_controller_manager=False)
    assert "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition" in argv


def test_full_tier_keeps_default_admission_plugins() -> None:
    argv = components.apiserver_argv(BINS, LAYOUT, port=1, etcd_port=2, with_controller_manager=True)
    assert not any(a.startswith("--disable-admission-plugins") for a in argv)


def test_workload_gang_serves_the_alpha_api_with_its_gates_in_every_component() -> None:
    gates = "--feature-gates=GenericWorkload=true,GangScheduling=true"
    full = components.apiserver_argv(
        BINS, LAYOUT, port=1, etcd_port=2, with_controller_manager=True, workload_gang=True
    )
    assert gates in full and "--runtime-config=scheduling.k8s.io/v1alpha2=true" in full
    assert not any(a.startswith("--disable-admission-plugins") for a in full)
    for argv in (
        components.scheduler_argv(BINS, LAYOUT, workload_gang=True),
        components.controller_manager_argv(BINS, LAYOUT, workload_gang=True),
    ):
        assert argv[0].startswith("/bin-dir/kube-") and gates in argv
    assert not any("feature-gates" in a for a in components.scheduler_argv(BINS, LAYOUT))


def test_workload_gang_without_controller_manager_drops_the_pod_group_finalizer_plugin_too() -> None:
    argv = components.apiserver_argv(
        BINS, LAYOUT, port=1, etcd_port=2, with_controller_manager=False, workload_gang=True
    )
    disabled = [a for a in argv if a.startswith("--disable-admission-plugins")]
    assert disabled == ["--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,PodGroupProtection"]


def test_apiserver_enforces_rbac_and_talks_to_the_given_etcd() -> None:
    argv = components.apiserver_argv(BINS, LAYOUT, port=6443, etcd_port=2379, with_controller_manager=True)
    assert argv[0] == "/bin-dir/kube-apiserver"
    assert "--authorization-mode=Node,RBAC" in argv
    assert "--etcd-servers=http://127.0.0.1:2379" in argv
    assert "--secure-port=6443" in argv


def test_kwok_manages_only_annotated_nodes() -> None:
    argv = components.kwok_argv(BINS, LAYOUT, stages=Path("/s.yaml"))
    assert "--manage-all-nodes=false" in argv
    assert "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake" in argv
    assert "--config=/s.yaml" in argv


def test_fake_node_carries_capacity_and_the_kwok_annotation() -> None:
    node = fake_node("n0", NodeShape(cpu="8", extended={"nvidia.com/gpu": "4"}))
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert node["status"]["allocatable"] == {
        "cpu": "8",
        "memory": "256Gi",
        "pods": "110",
        "nvidia.com/gpu": "4",
    }
    assert not node_ready(node)
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert node_ready(node)


def test_outcome_annotations() -> None:
    assert outcome(run_for="2s", exit_code=3) == {RUN_FOR: "2s", EXIT_CODE: "3"}
    assert outcome() == {}


def _stages() -> dict[str, dict[str, object]]:
    text = resources.files("mpioperator.testing").joinpath("kwok/stages.yaml").read_text()
    return {doc["metadata"]["name"]: doc for doc in yaml.safe_load_all(text)}


def _expressions(stage: dict[str, object]) -> dict[str, tuple[str, tuple[str, ...]]]:
    spec = stage["spec"]
    assert isinstance(spec, dict)
    return {
        e["key"]: (e["operator"], tuple(e.get("values", ()))) for e in spec["selector"]["matchExpressions"]
    }


def test_running_pod_stages_never_overlap_so_kwok_never_picks_at_random() -> None:
    exit_stage = _expressions(_stages()["mpioperator-pod-exit"])
    job_stage = _expressions(_stages()["mpioperator-job-pod-complete"])
    key = '.metadata.annotations["sim.mpioperator.io/exit-code"]'
    assert exit_stage[key][0] == "Exists"
    assert job_stage[key][0] == "DoesNotExist"


def test_every_stage_is_a_kwok_stage() -> None:
    stages = _stages()
    assert set(stages) == {
        "mpioperator-node-ready",
        "mpioperator-pod-start",
        "mpioperator-pod-exit",
        "mpioperator-job-pod-complete",
        "mpioperator-pod-delete",
    }
    assert all(s["apiVersion"] == "kwok.x-k8s.io/v1alpha1" and s["kind"] == "Stage" for s in stages.values())


def test_wait_for_returns_the_first_value_that_is_done() -> None:
    values = iter([0, 1, 2, 3])
    assert wait_for(lambda: next(values), done=lambda v: v >= 2, timeout=5, interval=0, what="two") == 2


def test_wait_for_timeout_says_what_was_last_seen() -> None:
    with pytest.raises(WaitTimeout, match=r"waiting for the answer; last seen: 41"):
        wait_for(lambda: 41, done=lambda v: v == 42, timeout=0, interval=0, what="the answer")


def test_wait_for_treats_probe_errors_as_not_yet_but_reports_them() -> None:
    def probe() -> int:
        raise ConnectionError("refused")

    with pytest.raises(WaitTimeout, match="ConnectionError: refused"):
        wait_for(probe, timeout=0, interval=0, what="a server")


def test_wait_for_stops_at_once_when_the_probe_aborts() -> None:
    calls = []

    def probe() -> int:
        calls.append(1)
        raise ProbeAborted("process died")

    with pytest.raises(ProbeAborted):
        wait_for(probe, timeout=60, what="never")
    assert len(calls) == 1


class _SteppedClock:
    """Time that moves only when the waiter sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def wait(
        self, probe: Callable[[], object], progress: Callable[[], object], limit: float = 1000
    ) -> object:
        """wait_while_progressing on this clock: a 15 s idle timeout, polled every second."""
        return wait_while_progressing(
            probe,
            progress,
            idle_timeout=15,
            limit=limit,
            interval=1,
            what="the job",
            clock=self,
            sleep=self.sleep,
        )


def test_waiting_while_progressing_outlasts_the_idle_timeout_as_long_as_progress_moves() -> None:
    clock = _SteppedClock()
    # Done at t=100, progress moving every 10 s: ten idle timeouts of 15 s pass on the way.
    result = clock.wait(lambda: clock.now >= 100 and "done", lambda: int(clock.now // 10))
    assert result == "done" and clock.now == 100


def test_waiting_while_progressing_gives_up_once_progress_stalls() -> None:
    clock = _SteppedClock()
    with pytest.raises(WaitTimeout, match=r"no progress for 15s \(after 45s in all\)"):
        clock.wait(lambda: False, lambda: min(int(clock.now // 10), 3))  # moves until t=30, then stalls


def test_waiting_while_progressing_stops_at_the_overall_limit() -> None:
    clock = _SteppedClock()
    with pytest.raises(WaitTimeout, match=r"after 50s, still progressing"):
        clock.wait(lambda: False, lambda: clock.now, limit=50)
