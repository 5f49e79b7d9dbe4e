"""addResources (upstream's TestAddResources) and our scheduler-accurate pod requests."""

from __future__ import annotations

from typing import Any

from mpioperator.podgroup.resources import (
    add_resources,
    container_requests,
    effective_pod_requests,
    upstream_pod_requests,
)
from test.unit.podgroup.jobs import container, q, resources


def test_add_resources_minresources_is_nil_stays_nil() -> None:
    assert add_resources(None, resources({"cpu": "1"}), 2) is None


def test_add_resources_adds_a_new_resource_to_minresources() -> None:
    total = add_resources(q({"cpu": "10"}), resources({"memory": "16Gi"}), 1)
    assert total == q({"cpu": "10", "memory": "16Gi"})


def test_add_resources_increases_a_quantity_of_minresources() -> None:
    total = add_resources(q({"memory": "20Gi"}), resources({"memory": "10Gi"}), 1)
    assert total is not None
    assert str(total["memory"]) == "30Gi"


def test_add_resources_requests_win_over_limits_and_limit_only_names_are_added() -> None:
    requirements = resources(
        requests={"cpu": "10", "memory": "16Gi"},
        limits={"nvidia.com/gpu": "8", "cpu": "20", "memory": "32Gi"},
    )
    assert add_resources({}, requirements, 1) == q({"cpu": "10", "memory": "16Gi", "nvidia.com/gpu": "8"})


def test_add_resources_multiplies_by_replicas_and_leaves_the_input_unchanged() -> None:
    start = q({"cpu": "2"})
    total = add_resources(start, resources({"cpu": "10", "memory": "32Gi"}), 2)
    assert total == q({"cpu": "22", "memory": "64Gi"})
    assert start == q({"cpu": "2"})


def test_add_resources_empty_requirements_add_nothing() -> None:
    assert add_resources(q({"cpu": "1"}), {}, 5) == q({"cpu": "1"})


def test_container_requests_default_missing_requests_from_limits_per_resource() -> None:
    got = container_requests(resources({"cpu": "1"}, {"cpu": "4", "memory": "1Gi"}))
    assert got == q({"cpu": "1", "memory": "1Gi"})


def test_upstream_pod_requests_ignore_init_containers_and_overhead() -> None:
    spec: dict[str, Any] = {
        "containers": [container({"cpu": "1"}), container({"cpu": "2"}, name="b")],
        "initContainers": [container({"cpu": "8"}, name="init")],
        "overhead": {"cpu": "250m"},
    }
    assert upstream_pod_requests(spec) == q({"cpu": "3"})


def test_effective_requests_of_plain_containers_are_their_sum() -> None:
    spec = {"containers": [container({"cpu": "1", "memory": "1Gi"}), container({"cpu": "2"}, name="b")]}
    assert effective_pod_requests(spec) == q({"cpu": "3", "memory": "1Gi"})


def test_effective_requests_take_a_larger_init_container_per_resource() -> None:
    spec = {
        "containers": [container({"cpu": "1", "memory": "8Gi"})],
        "initContainers": [container({"cpu": "4", "memory": "1Gi"}, name="init")],
    }
    assert effective_pod_requests(spec) == q({"cpu": "4", "memory": "8Gi"})


def test_effective_requests_count_native_sidecars_with_containers_and_later_init_containers() -> None:
    sidecar = container({"cpu": "1"}, name="proxy") | {"restartPolicy": "Always"}
    early = container({"cpu": "3"}, name="early")
    late = container({"cpu": "2500m"}, name="late")
    main = container({"cpu": "1"})
    # early runs before the sidecar (3); late runs beside it (3.5); then main + sidecar (2).
    assert effective_pod_requests({"containers": [main], "initContainers": [early, sidecar, late]}) == q(
        {"cpu": "3500m"}
    )
    # Started first, the sidecar also runs beside `early`.
    assert effective_pod_requests({"containers": [main], "initContainers": [sidecar, early, late]}) == q(
        {"cpu": "4"}
    )
    # A sidecar alone is still counted with the main containers.
    assert effective_pod_requests({"containers": [main], "initContainers": [sidecar]}) == q({"cpu": "2"})


def test_effective_requests_default_init_container_requests_from_limits() -> None:
    spec = {
        "containers": [container({"cpu": "1"})],
        "initContainers": [container(limits={"nvidia.com/gpu": "2"}, name="init")],
    }
    assert effective_pod_requests(spec) == q({"cpu": "1", "nvidia.com/gpu": "2"})


def test_effective_requests_add_pod_overhead() -> None:
    spec = {
        "containers": [container({"cpu": "1", "memory": "1Gi"})],
        "overhead": {"cpu": "250m", "memory": "120Mi"},
    }
    got = effective_pod_requests(spec)
    assert got == q({"cpu": "1250m", "memory": "1144Mi"})
    assert str(got["memory"]) == "1144Mi"


def test_effective_requests_use_pod_level_requests_for_cpu_memory_and_hugepages_only() -> None:
    spec = {
        "containers": [container({"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"})],
        "resources": {
            "requests": {"cpu": "3"},
            "limits": {"memory": "4Gi", "hugepages-2Mi": "64Mi", "nvidia.com/gpu": "4"},
        },
        "overhead": {"cpu": "100m"},
    }
    assert effective_pod_requests(spec) == q(
        {"cpu": "3100m", "memory": "4Gi", "hugepages-2Mi": "64Mi", "nvidia.com/gpu": "1"}
    )


def test_effective_requests_of_an_empty_pod_are_empty() -> None:
    assert effective_pod_requests(None) == {}
    assert effective_pod_requests({"containers": [{"name": "c", "image": "i"}]}) == {}
