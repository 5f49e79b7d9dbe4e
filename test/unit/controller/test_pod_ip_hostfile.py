"""The hostfile of pod IPs (`mpioperator.io/hostfile-addresses: ip`), and the ConfigMap's size up front."""

from __future__ import annotations

from pathlib import Path

import yaml

from mpioperator.api.extensions import launch
from mpioperator.api.objects import Obj
from mpioperator.controller.builders import configmap
from mpioperator.controller.features.pod_ip_hostfile import dns_hostfile_bytes, listed_addresses
from mpioperator.controller.sync import SyncSettings
from mpioperator.kube.resources import CONFIG_MAPS
from test.unit.controller.sync_fixtures import (
    Scene,
    job,
    shared_children,
    worker,
)

IP = launch.HOSTFILE_ADDRESSES


def ip_job(workers: int = 2) -> Obj:
    made = job(workers)
    made["metadata"].setdefault("annotations", {})[IP] = "ip"
    return made


def with_ip(pod: Obj, ip: str) -> Obj:
    pod["status"]["podIP"] = ip
    return pod


def config_map_written(scene: Scene) -> Obj:
    for call in reversed(scene.writer.log):
        if call.resource == CONFIG_MAPS.plural and call.body is not None:
            return call.body
    raise AssertionError(f"no ConfigMap written: {scene.writer.calls}")


def test_the_hostfile_lists_each_workers_pod_ip_in_index_order_and_discover_hosts_the_running_ones() -> None:
    pi = ip_job(3)
    pods = [with_ip(worker(pi, 0), "10.0.0.7"), with_ip(worker(pi, 1, "Pending"), "10.0.0.5"), worker(pi, 2)]
    addresses = {"pi-worker-0": "10.0.0.7", "pi-worker-1": "10.0.0.5"}

    made = configmap.new_config_map(pi, pods, "", addresses)

    assert made["data"][configmap.HOSTFILE] == "10.0.0.7 slots=1\n10.0.0.5 slots=1\n"
    assert made["data"][configmap.DISCOVER_HOSTS] == "#!/bin/sh\necho 10.0.0.7\n"


def test_without_addresses_the_hostfile_is_upstreams_dns_names() -> None:
    pi = job(2)

    made = configmap.new_config_map(pi, [], "")

    assert made["data"][configmap.HOSTFILE] == (
        "pi-worker-0.pi.default.svc slots=1\npi-worker-1.pi.default.svc slots=1\n"
    )


def test_the_addresses_listed_are_read_back_in_both_hostfile_formats() -> None:
    assert listed_addresses("10.0.0.1 slots=2\n10.0.0.2 slots=2\n", openmpi=True) == {"10.0.0.1", "10.0.0.2"}
    assert listed_addresses("10.0.0.1:2\n\n10.0.0.2:2\n", openmpi=False) == {"10.0.0.1", "10.0.0.2"}


async def test_the_launcher_waits_until_every_worker_has_an_ip() -> None:
    pi = ip_job(2)
    scene = Scene(pi, *shared_children(pi), with_ip(worker(pi, 0), "10.0.0.1"), worker(pi, 1, "Pending"))

    await scene.sync()

    assert ("create", "jobs", "pi-launcher") not in scene.writer.calls
    assert config_map_written(scene)["data"][configmap.HOSTFILE] == "10.0.0.1 slots=1\n"


async def test_the_launcher_waits_until_the_cached_config_map_lists_every_ip() -> None:
    pi = ip_job(2)
    pods = [with_ip(worker(pi, 0), "10.0.0.1"), with_ip(worker(pi, 1), "10.0.0.2")]
    # The cache still holds the ConfigMap from before the second worker had its IP: this sync writes it,
    # and the launcher is made by the sync that sees the write.
    stale = shared_children(pi, pods[:1])
    stale[1]["data"][configmap.HOSTFILE] = "10.0.0.1 slots=1\n"
    scene = Scene(pi, *stale, *pods)

    await scene.sync()

    assert config_map_written(scene)["data"][configmap.HOSTFILE] == "10.0.0.1 slots=1\n10.0.0.2 slots=1\n"
    assert ("create", "jobs", "pi-launcher") not in scene.writer.calls


async def test_the_launcher_is_made_once_the_cached_config_map_lists_every_workers_ip() -> None:
    pi = ip_job(2)
    pods = [with_ip(worker(pi, 0), "10.0.0.1"), with_ip(worker(pi, 1), "10.0.0.2")]
    shared = shared_children(pi, pods)
    shared[1] = configmap_with(shared[1], configmap.new_config_map(pi, pods, "", ip_map(pods)))
    scene = Scene(pi, *shared, *pods)

    await scene.sync()

    assert ("create", "jobs", "pi-launcher") in scene.writer.calls
    assert not [c for c in scene.writer.calls if c[1] == "configmaps"]


async def test_a_worker_made_again_with_a_new_ip_is_written_into_the_hostfile() -> None:
    pi = ip_job(2)
    before = [with_ip(worker(pi, 0), "10.0.0.1"), with_ip(worker(pi, 1), "10.0.0.2")]
    shared = shared_children(pi, before)
    shared[1] = configmap_with(shared[1], configmap.new_config_map(pi, before, "", ip_map(before)))
    after = [with_ip(worker(pi, 0), "10.0.0.1"), with_ip(worker(pi, 1), "10.0.0.9")]
    scene = Scene(pi, *shared, *after)

    await scene.sync()

    assert config_map_written(scene)["data"][configmap.HOSTFILE] == "10.0.0.1 slots=1\n10.0.0.9 slots=1\n"


async def test_a_job_without_the_annotation_makes_its_launcher_before_its_workers_have_ips() -> None:
    pi = job(2)
    scene = Scene(pi, *shared_children(pi), worker(pi, 0, "Pending"), worker(pi, 1, "Pending"))

    await scene.sync()

    assert ("create", "jobs", "pi-launcher") in scene.writer.calls


async def test_a_job_whose_dns_hostfile_outgrows_a_config_map_is_invalid_and_told_of_the_ip_hostfile() -> (
    None
):
    big = long_named(job(4_000))
    size = dns_hostfile_bytes(big, "")
    assert size > configmap.DATA_LIMIT
    scene = Scene(big, settings=SyncSettings(max_worker_replicas=20_000))

    await scene.sync()

    assert scene.writer.calls == [("update_status", "mpijobs", big["metadata"]["name"])]
    invalid = [c for c in scene.written_status()["conditions"] if c["type"] == "Invalid"]
    assert invalid and f"take {size} bytes" in invalid[0]["message"] and IP in invalid[0]["message"]
    assert [(t, r) for t, r, _ in scene.recorder.events] == [("Warning", "ValidationError")]


async def test_the_same_job_with_a_hostfile_of_ips_is_valid_and_makes_its_children() -> None:
    big = long_named(ip_job(4_000))
    scene = Scene(big, settings=SyncSettings(max_worker_replicas=20_000))

    await scene.sync()

    name = big["metadata"]["name"]
    assert scene.writer.calls[:3] == [
        ("create", "services", name),
        ("create", "configmaps", f"{name}-config"),
        ("create", "secrets", f"{name}-ssh"),
    ]
    assert ("create", "pods", f"{name}-worker-3999") in scene.writer.calls


def test_a_hostfile_of_ips_with_the_exec_agent_is_refused() -> None:
    pi = ip_job(2)
    pi["metadata"]["annotations"][launch.LAUNCH_AGENT] = "exec"

    problems = launch.validate_annotations(pi)

    assert [p.field for p in problems] == [f"metadata.annotations[{IP}]"]


def test_an_unknown_address_kind_is_refused() -> None:
    pi = job(2)
    pi["metadata"]["annotations"] = {IP: "ipv6"}

    problems = launch.validate_annotations(pi)

    assert [p.field for p in problems] == [f"metadata.annotations[{IP}]"]


def long_named(made: Obj) -> Obj:
    """The job under a 40-letter name in a 40-letter namespace: 4,000 workers' DNS names outgrow 1 MiB (the
    operator's --max-worker-replicas raised above them, as an administrator of big jobs does)."""
    made["metadata"]["name"] = "n" * 40
    made["metadata"]["namespace"] = "s" * 40
    return made


def ip_map(pods: list[Obj]) -> dict[str, str]:
    return {p["metadata"]["name"]: p["status"]["podIP"] for p in pods}


def configmap_with(cached: Obj, made: Obj) -> Obj:
    cached["data"] = made["data"]
    return cached


def test_the_ip_hostfile_example_is_the_pi_example_with_the_annotation_only() -> None:
    examples = Path(__file__).resolve().parents[3] / "examples" / "v2beta1"
    pi = yaml.safe_load((examples / "pi" / "pi.yaml").read_text())
    example = yaml.safe_load((examples / "extensions" / "pi-ip-hostfile.yaml").read_text())

    pi["metadata"] = {"name": "pi-ip-hostfile", "annotations": {IP: "ip"}}
    assert example == pi
    assert launch.ip_hostfile(example)
    assert not launch.validate_annotations(example)
