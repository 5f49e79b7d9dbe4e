"""minMember, priority class, replica order and minResources: upstream's podgroup_test.go tables."""

from __future__ import annotations

from typing import Any

import pytest
import structlog

from mpioperator.podgroup.maths import (
    launcher_in_gang,
    min_member,
    pod_group_min_resources,
    priority_class_name,
    replicas_order,
)
from mpioperator.podgroup.quantity import Quantity
from mpioperator.podgroup.resources import effective_pod_requests
from test.unit.podgroup.jobs import container, mpijob, priorities, q, replica


def strings(values: dict[str, Quantity] | None) -> dict[str, str] | None:
    return None if values is None else {name: str(v) for name, v in values.items()}


# TestCalculateMinAvailable


def test_min_available_is_not_empty_it_is_the_min_member() -> None:
    job = mpijob(replica(1, container()), replica(99, container()), policy={"minAvailable": 2})
    assert min_member(job) == 2


def test_min_available_is_empty_every_worker_plus_the_launcher() -> None:
    assert min_member(mpijob(replica(1, container()), replica(99, container()))) == 100


def test_min_member_without_workers_is_the_launcher_alone() -> None:
    job = mpijob(replica(1, container()))
    job["spec"]["runLauncherAsWorker"] = True
    assert min_member(job) == 1


# TestCalcPriorityClassName


@pytest.mark.parametrize(
    ("policy_class", "launcher_class", "worker_class", "expected"),
    [
        pytest.param("high", "mid", "low", "high", id="use schedulingPolicy"),
        pytest.param("", "mid", "low", "mid", id="use launcher"),
        pytest.param("", "", "low", "low", id="use worker"),
        pytest.param("", "", "", "", id="nothing"),
    ],
)
def test_priority_class_name_precedence(
    policy_class: str, launcher_class: str, worker_class: str, expected: str
) -> None:
    job = mpijob(
        replica(1, container(), priority_class=launcher_class),
        replica(2, container(), priority_class=worker_class),
        policy={"priorityClass": policy_class} if policy_class else {},
    )
    assert priority_class_name(job) == expected


# TestReplicasOrder


def test_replicas_order_launcher_with_higher_priority_comes_first() -> None:
    specs = {
        "Worker": replica(2, container(), priority_class="low"),
        "Launcher": replica(1, container(), priority_class="high"),
    }
    order = replicas_order(specs, priorities(high=100010, low=10010))
    assert [(e.replica_type, e.priority, e.replicas) for e in order] == [
        ("Launcher", 100010, 1),
        ("Worker", 10010, 2),
    ]


def test_replicas_order_equal_priorities_keep_the_input_order() -> None:
    specs = {"Worker": replica(2, container()), "Launcher": replica(1, container())}
    assert [e.replica_type for e in replicas_order(specs, priorities())] == ["Worker", "Launcher"]
    specs = {"Launcher": replica(1, container()), "Worker": replica(2, container())}
    assert [e.replica_type for e in replicas_order(specs, priorities())] == ["Launcher", "Worker"]


def test_replicas_order_counts_a_missing_class_as_zero_and_warns() -> None:
    specs = {
        "Launcher": replica(1, container(), priority_class="gone"),
        "Worker": replica(2, container(), priority_class="negative"),
    }
    with structlog.testing.capture_logs() as logs:
        order = replicas_order(specs, priorities(negative=-5))
    assert [(e.replica_type, e.priority) for e in order] == [("Launcher", 0), ("Worker", -5)]
    assert [entry["priority_class"] for entry in logs if entry["log_level"] == "warning"] == ["gone"]


def test_replicas_order_without_a_lookup_treats_every_class_as_zero() -> None:
    specs = {
        "Worker": replica(2, container(), priority_class="high"),
        "Launcher": replica(1, container(), priority_class="low"),
    }
    assert [e.priority for e in replicas_order(specs, None)] == [0, 0]


# TestCalculatePGMinResources (both backends share the computation)


def test_min_resources_is_not_empty_returns_the_policy_verbatim() -> None:
    job = mpijob(
        replica(1, container({"cpu": "2", "memory": "1Gi"})),
        replica(2, container({"cpu": "10", "memory": "32Gi"})),
        policy={"minResources": {"cpu": "100", "memory": "512Gi"}},
    )
    assert pod_group_min_resources(job, 3, priorities()) == q({"cpu": "100", "memory": "512Gi"})
    # Verbatim beats minMember 0 too.
    assert pod_group_min_resources(job, 0, priorities()) == q({"cpu": "100", "memory": "512Gi"})


def test_min_member_zero_means_no_min_resources() -> None:
    job = mpijob(replica(1, container({"cpu": "2"})), replica(2, container({"cpu": "10"})))
    assert pod_group_min_resources(job, 0, priorities()) is None


def test_without_priority_class_and_no_truncation_sums_every_replica() -> None:
    job = mpijob(
        replica(1, container({"cpu": "2", "memory": "1Gi"})),
        replica(2, container({"cpu": "10", "memory": "32Gi"})),
    )
    assert strings(pod_group_min_resources(job, 3, priorities())) == {"cpu": "22", "memory": "65Gi"}


def test_without_worker_without_priority_class_is_the_launcher_alone() -> None:
    job = mpijob(replica(1, container({"cpu": "2", "memory": "1Gi"})))
    assert strings(pod_group_min_resources(job, 1, priorities())) == {"cpu": "2", "memory": "1Gi"}


def test_nil_min_member_skips_truncation_and_sums_every_container() -> None:
    job = mpijob(
        replica(1, container({"cpu": "2", "memory": "1Gi"})),
        replica(
            2,
            container({"cpu": "10", "memory": "32Gi"}),
            container({"cpu": "50", "memory": "512Gi"}, name="side"),
        ),
    )
    assert strings(pod_group_min_resources(job, None, priorities())) == {"cpu": "122", "memory": "1089Gi"}


def test_with_non_existence_priority_class_ties_truncate_the_workers() -> None:
    job = mpijob(
        replica(1, container({"cpu": "2", "memory": "2Gi"}), priority_class="non-existence"),
        replica(2, container({"cpu": "5", "memory": "16Gi"}), priority_class="non-existence"),
    )
    assert strings(pod_group_min_resources(job, 2, priorities())) == {"cpu": "7", "memory": "18Gi"}


def test_ties_truncate_the_workers_even_when_they_come_first() -> None:
    job = mpijob()
    job["spec"]["mpiReplicaSpecs"] = {
        "Worker": replica(2, container({"cpu": "5"})),
        "Launcher": replica(1, container({"cpu": "2"})),
    }
    assert strings(pod_group_min_resources(job, 2, priorities())) == {"cpu": "7"}


def test_with_existence_priority_class_the_lower_priority_workers_are_truncated() -> None:
    job = mpijob(
        replica(1, container({"cpu": "2", "memory": "4Gi"}), priority_class="high"),
        replica(2, container({"cpu": "20", "memory": "64Gi"}), priority_class="low"),
    )
    got = pod_group_min_resources(job, 2, priorities(high=100010, low=10010))
    assert strings(got) == {"cpu": "22", "memory": "68Gi"}


def test_quirk_workers_above_the_launcher_truncate_the_launcher_instead() -> None:
    job = mpijob(
        replica(1, container({"cpu": "2"}), priority_class="low"),
        replica(3, container({"cpu": "10"}), priority_class="high"),
    )
    # Launcher cut to minMember-1 = 1 copy; all three workers stay.
    assert strings(pod_group_min_resources(job, 2, priorities(high=100, low=1))) == {"cpu": "32"}


def test_truncation_edits_a_copy_and_leaves_the_job_alone() -> None:
    job = mpijob(replica(1, container({"cpu": "1"})), replica(4, container({"cpu": "1"})))
    assert strings(pod_group_min_resources(job, 3, priorities())) == {"cpu": "3"}
    assert job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 4


def test_tie_without_a_worker_spec_gives_no_min_resources() -> None:
    job = mpijob(replica(2, container({"cpu": "1"})))
    with structlog.testing.capture_logs() as logs:
        assert pod_group_min_resources(job, 1, priorities()) is None
    assert any(entry["log_level"] == "warning" for entry in logs)


def test_negative_min_available_subtracts_the_truncated_entry() -> None:
    job = mpijob(replica(1, container({"cpu": "2"})), replica(2, container({"cpu": "1"})))
    # Workers become minMember-1 = -2 copies: 2 - 2.
    assert strings(pod_group_min_resources(job, -1, priorities())) == {"cpu": "0"}


def test_extra_replica_keys_add_resources_but_not_to_the_truncation_total() -> None:
    job = mpijob(
        replica(1, container({"cpu": "1"})),
        replica(2, container({"cpu": "10"})),
        Extra=replica(5, container({"cpu": "100"})),
    )
    # Launcher + Worker = 3, not above minMember 3, so nothing is cut; Extra still counts in full.
    assert strings(pod_group_min_resources(job, 3, priorities())) == {"cpu": "521"}
    extra_without_count: Any = replica(None, container({"cpu": "100"}))
    job["spec"]["mpiReplicaSpecs"]["Extra"] = extra_without_count
    assert strings(pod_group_min_resources(job, 3, priorities())) == {"cpu": "21"}


def test_upstream_rule_ignores_init_containers_and_sidecars() -> None:
    launcher = replica(1, container({"cpu": "1"}))
    worker = replica(2, container({"cpu": "1"}))
    worker["template"]["spec"]["initContainers"] = [container({"cpu": "8"}, name="init")]
    job = mpijob(launcher, worker)
    assert strings(pod_group_min_resources(job, 3, priorities())) == {"cpu": "3"}


def test_effective_requests_rule_counts_init_containers_per_replica() -> None:
    launcher = replica(1, container({"cpu": "1"}))
    worker = replica(2, container({"cpu": "1"}))
    worker["template"]["spec"]["initContainers"] = [container({"cpu": "8"}, name="init")]
    worker["template"]["spec"]["overhead"] = {"cpu": "100m"}
    job = mpijob(launcher, worker, policy={"minAvailable": 2})
    # Workers truncated to one copy of max(1, 8) + 0.1, plus the launcher's 1.
    got = pod_group_min_resources(job, 2, priorities(), effective_pod_requests)
    assert strings(got) == {"cpu": "9100m"}


# Our fix for upstream #608: under WaitForWorkersReady the gang counts the launcher only once it exists.


def _wait_for_workers(job: dict[str, Any]) -> dict[str, Any]:
    job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    return job


def test_launcher_is_in_the_gang_when_it_is_created_at_startup() -> None:
    assert launcher_in_gang(mpijob(replica(1, container()), replica(2, container())), launcher_exists=False)


def test_launcher_waiting_for_workers_is_out_of_the_gang_until_its_job_exists() -> None:
    job = _wait_for_workers(mpijob(replica(1, container()), replica(2, container())))
    assert not launcher_in_gang(job, launcher_exists=False)
    assert launcher_in_gang(job, launcher_exists=True)


def test_explicit_min_available_keeps_the_launcher_in_the_gang() -> None:
    job = _wait_for_workers(
        mpijob(replica(1, container()), replica(2, container()), policy={"minAvailable": 3})
    )
    assert launcher_in_gang(job, launcher_exists=False)


def test_launcher_without_workers_to_wait_for_is_in_the_gang() -> None:
    assert launcher_in_gang(_wait_for_workers(mpijob(replica(1, container()))), launcher_exists=False)


def test_gang_without_the_launcher_counts_and_sizes_the_workers_only() -> None:
    job = _wait_for_workers(
        mpijob(replica(1, container({"cpu": "1", "memory": "2Gi"})), replica(2, container({"cpu": "10"})))
    )
    members = min_member(job, launcher_in_gang=False)
    assert members == 2
    # Not upstream's tie rule on 3 replicas > 2 members, which would cut a worker and keep the launcher.
    resources = pod_group_min_resources(job, members, None, launcher_in_gang=False)
    assert strings(resources) == {"cpu": "20"}
    assert min_member(job) == 3
    assert strings(pod_group_min_resources(job, 3, None)) == {"cpu": "21", "memory": "2Gi"}
