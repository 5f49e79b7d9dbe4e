"""The headless Service through which pods resolve each other's hostnames."""

from __future__ import annotations

from mpioperator.api import accessors
from mpioperator.api import constants as api
from mpioperator.api.names import service_name
from mpioperator.api.objects import Obj
from mpioperator.api.ownership import child_metadata


def job_selector(job: Obj) -> dict[str, str]:
    return {api.LABEL_OPERATOR_NAME: api.OPERATOR_NAME, api.LABEL_JOB_NAME: job["metadata"]["name"]}


def new_service(job: Obj) -> Obj:
    spec: Obj = {"clusterIP": "None", "selector": job_selector(job)}
    if accessors.run_launcher_as_worker(job):
        spec["publishNotReadyAddresses"] = True
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": child_metadata(job, service_name(job)),
        "spec": spec,
    }
