"""hostfile and discover_hosts.sh, byte for byte (§2.6.2): upstream's TestNewConfigMap and
TestUpdateDiscoverHostsInConfigMap cases."""

from __future__ import annotations

from typing import Any

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.builders.configmap import discover_hosts, hostfile, new_config_map
from test.unit.controller.jobs import OWNER, pod, reference_job, with_spec


def _job(implementation: str = "OpenMPI", workers: int | None = 2, **spec: Any) -> Obj:
    return with_spec(reference_job(workers), mpiImplementation=implementation, **spec)


def _config_map(hostfile_text: str, script: str = "#!/bin/sh\n") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "pi-config",
            "namespace": "default",
            "labels": {"app": "pi"},
            "ownerReferences": [OWNER],
        },
        "data": {"hostfile": hostfile_text, "discover_hosts.sh": script},
    }


NEW_CONFIG_MAP_CASES = [
    pytest.param(
        _job(),
        "",
        _config_map("pi-worker-0.pi.default.svc slots=1\npi-worker-1.pi.default.svc slots=1\n"),
        id="openmpi-defaults",
    ),
    pytest.param(
        _job(runLauncherAsWorker=True),
        "",
        _config_map(
            "pi-launcher.pi.default.svc slots=1\n"
            "pi-worker-0.pi.default.svc slots=1\n"
            "pi-worker-1.pi.default.svc slots=1\n",
            "#!/bin/sh\necho pi-launcher.pi.default.svc\n",
        ),
        id="openmpi-launcher-as-worker",
    ),
    pytest.param(
        _job(workers=None, runLauncherAsWorker=True),
        "",
        _config_map("pi-launcher.pi.default.svc slots=1\n", "#!/bin/sh\necho pi-launcher.pi.default.svc\n"),
        id="launcher-as-worker-without-workers",
    ),
    pytest.param(_job(workers=None), "", _config_map(""), id="no-hosts-at-all"),
    pytest.param(
        _job(slotsPerWorker=10),
        "",
        _config_map("pi-worker-0.pi.default.svc slots=10\npi-worker-1.pi.default.svc slots=10\n"),
        id="openmpi-slots",
    ),
    pytest.param(
        _job(),
        "cluster.local",
        _config_map(
            "pi-worker-0.pi.default.svc.cluster.local slots=1\npi-worker-1.pi.default.svc.cluster.local slots=1\n"
        ),
        id="openmpi-cluster-domain",
    ),
    pytest.param(
        _job("Intel", slotsPerWorker=10),
        "",
        _config_map("pi-worker-0.pi.default.svc:10\npi-worker-1.pi.default.svc:10\n"),
        id="intel-slots",
    ),
    pytest.param(
        _job("Intel", runLauncherAsWorker=True),
        "cluster.local",
        _config_map(
            "pi-launcher.pi.default.svc.cluster.local:1\n"
            "pi-worker-0.pi.default.svc.cluster.local:1\n"
            "pi-worker-1.pi.default.svc.cluster.local:1\n",
            "#!/bin/sh\necho pi-launcher.pi.default.svc.cluster.local\n",
        ),
        id="intel-launcher-as-worker-cluster-domain",
    ),
    pytest.param(
        _job("MPICH", slotsPerWorker=10),
        "",
        _config_map("pi-worker-0.pi.default.svc:10\npi-worker-1.pi.default.svc:10\n"),
        id="mpich-slots",
    ),
    pytest.param(
        _job("MPICH"),
        "cluster.local",
        _config_map(
            "pi-worker-0.pi.default.svc.cluster.local:1\npi-worker-1.pi.default.svc.cluster.local:1\n"
        ),
        id="mpich-cluster-domain",
    ),
]


@pytest.mark.parametrize(("job", "domain", "expected"), NEW_CONFIG_MAP_CASES)
def test_new_config_map(job: Obj, domain: str, expected: Obj) -> None:
    assert new_config_map(job, [], domain) == expected


def test_hostfile_comes_from_replica_count_not_from_pods() -> None:
    job = _job(workers=3)
    assert hostfile(job).count("\n") == 3
    assert new_config_map(job, [pod("pi-worker-0", "Running")])["data"]["hostfile"] == hostfile(job)


DISCOVER_CASES = [
    pytest.param(_job(), [], "", "#!/bin/sh\n", id="no-pods"),
    pytest.param(
        _job(),
        [pod("pi-worker-0", "Running"), pod("pi-worker-1", "Running")],
        "",
        "#!/bin/sh\necho pi-worker-0.pi.default.svc\necho pi-worker-1.pi.default.svc\n",
        id="running-pods",
    ),
    pytest.param(
        _job(),
        [
            pod("pi-worker-0", "Pending"),
            pod("pi-worker-1", "Running"),
            pod("pi-worker-2", "Failed"),
            pod("pi-worker-3", "Succeeded"),
        ],
        "",
        "#!/bin/sh\necho pi-worker-1.pi.default.svc\n",
        id="only-running-pods",
    ),
    pytest.param(
        _job(runLauncherAsWorker=True),
        [pod("pi-worker-0", "Running")],
        "",
        "#!/bin/sh\necho pi-launcher.pi.default.svc\necho pi-worker-0.pi.default.svc\n",
        id="launcher-as-worker-first",
    ),
    pytest.param(
        _job(),
        [pod("pi-worker-0", "Running")],
        "cluster.local",
        "#!/bin/sh\necho pi-worker-0.pi.default.svc.cluster.local\n",
        id="cluster-domain",
    ),
    pytest.param(
        _job(workers=11),
        [pod("pi-worker-2", "Running"), pod("pi-worker-10", "Running"), pod("pi-worker-1", "Running")],
        "",
        "#!/bin/sh\n"
        "echo pi-worker-1.pi.default.svc\n"
        "echo pi-worker-10.pi.default.svc\n"
        "echo pi-worker-2.pi.default.svc\n",
        id="plain-string-sort",
    ),
    pytest.param(
        _job(workers=1),
        [pod("pi-worker-5", "Running", namespace="other")],
        "",
        "#!/bin/sh\necho pi-worker-5.pi.other.svc\n",
        id="beyond-replicas-and-pod-namespace",
    ),
]


@pytest.mark.parametrize(("job", "pods", "domain", "expected"), DISCOVER_CASES)
def test_update_discover_hosts(job: Obj, pods: list[Obj], domain: str, expected: str) -> None:
    assert discover_hosts(job, pods, domain) == expected
    assert new_config_map(job, pods, domain)["data"]["discover_hosts.sh"] == expected
