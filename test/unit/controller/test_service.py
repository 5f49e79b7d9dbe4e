"""The headless Service and the child names (§2.6.1, Appendix A)."""

from __future__ import annotations

import pytest

from mpioperator.api import names
from mpioperator.api.ownership import controller_ref, is_controlled_by
from mpioperator.controller.builders.service import new_service
from test.unit.controller.jobs import OWNER, reference_job, with_spec


def test_service_renders_appendix_a() -> None:
    assert new_service(reference_job()) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "pi",
            "namespace": "default",
            "labels": {"app": "pi"},
            "ownerReferences": [OWNER],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {
                "training.kubeflow.org/operator-name": "mpi-operator",
                "training.kubeflow.org/job-name": "pi",
            },
        },
    }


def test_service_publishes_not_ready_addresses_only_when_launcher_works() -> None:
    job = with_spec(reference_job(), runLauncherAsWorker=True)
    assert new_service(job)["spec"]["publishNotReadyAddresses"] is True
    assert "publishNotReadyAddresses" not in new_service(reference_job())["spec"]


def test_child_names_follow_upstream() -> None:
    job = reference_job()
    assert names.service_name(job) == "pi"
    assert names.config_map_name(job) == "pi-config"
    assert names.secret_name(job) == "pi-ssh"
    assert names.launcher_name(job) == "pi-launcher"
    assert names.worker_name(job, 12) == "pi-worker-12"
    assert names.pod_group_name(job) == "pi"


def test_controller_ref_is_the_single_controller_owner() -> None:
    assert controller_ref(reference_job()) == OWNER


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        ([OWNER], True),
        ([], False),
        ([{**OWNER, "uid": "other"}], False),
        ([{**OWNER, "controller": False}], False),
        # Only the UID counts, as upstream compares: a renamed owner entry still matches.
        ([{**OWNER, "name": "renamed"}], True),
    ],
)
def test_is_controlled_by_compares_controller_uid(refs: list[dict[str, object]], expected: bool) -> None:
    obj = {"metadata": {"name": "x", "ownerReferences": refs}}
    assert is_controlled_by(obj, reference_job()) is expected
