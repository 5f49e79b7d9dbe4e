"""Random valid MPIJobs through defaulting, validation, every child builder (with each gang-scheduling
backend) and the status computation: nothing raises, and what comes out keeps its basic promises.

Example counts are fixed and the examples derandomized (test/fuzz: profile `ci`), so CI runs the same
examples every time; HYPOTHESIS_PROFILE=explore draws new ones.
"""

from __future__ import annotations

import copy
import datetime as dt
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mpioperator.api.defaults import set_defaults
from mpioperator.api.objects import Obj
from mpioperator.api.validation import validate_mpijob
from mpioperator.controller.builders import configmap, launcher_job, secret, service
from mpioperator.controller.conditions import is_finished
from mpioperator.controller.controller import gang_backend
from mpioperator.controller.decorators import compose
from mpioperator.controller.status import compute_status
from mpioperator.podgroup import maths
from mpioperator.podgroup.backend import decorator_for
from mpioperator.podgroup.quantity import parse_resource_list
from test.fuzz import specs, states

SPECS = 400
BUILDS = 200
STATUSES = 600
BACKENDS = ("", "volcano", "scheduler-plugins-scheduler")
valid_jobs = specs.mpijobs(max_workers=5000, unit_only=True)


def priority_of(name: str) -> int | None:
    return specs.PRIORITY_CLASSES.get(name)


def round_trips(obj: Obj) -> bool:
    """Plain JSON all the way down: what goes on the wire is what was built."""
    return bool(json.loads(json.dumps(obj)) == obj)


def scheduling_policy_of(job: Obj) -> Obj:
    found: Obj = (job["spec"].get("runPolicy") or {}).get("schedulingPolicy") or {}
    return found


def expected_pod_group(job: Obj, backend: str, launcher_exists: bool) -> Obj:
    """The PodGroup upstream-behaviour §3.3-§3.5 and decisions-local L2 describe, worked out here from
    the spec, apart from a computed minResources (pinned by test_podgroup_maths)."""
    spec = job["spec"]
    policy = scheduling_policy_of(job)
    replicas = spec["mpiReplicaSpecs"]
    workers = int((replicas.get("Worker") or {}).get("replicas") or 0)
    if "minAvailable" in policy:
        members = int(policy["minAvailable"])
    else:
        # L2: a launcher made only once the workers are Ready joins the gang only once it exists.
        waits = spec["launcherCreationPolicy"] == "WaitForWorkersReady" and workers > 0
        members = workers + (0 if waits and not launcher_exists else 1)
    group_spec: Obj = {"minMember": members} if members else {}
    if backend == "volcano":
        queue = policy.get("queue") or (job["metadata"].get("annotations") or {}).get(
            "scheduling.volcano.sh/queue-name"
        )
        if queue:
            group_spec["queue"] = queue
        templates = [(replicas.get(kind) or {}).get("template") or {} for kind in ("Launcher", "Worker")]
        candidates = [policy.get("priorityClass")] + [
            (t.get("spec") or {}).get("priorityClassName") for t in templates
        ]
        priority_class = next((name for name in candidates if name), None)
        if priority_class:
            group_spec["priorityClassName"] = priority_class
        api_version = "scheduling.volcano.sh/v1beta1"
    else:
        group_spec["scheduleTimeoutSeconds"] = policy.get("scheduleTimeoutSeconds", 0)
        api_version = "scheduling.x-k8s.io/v1alpha1"
    meta = job["metadata"]
    owner = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "ownerReferences": [owner]},
        "spec": group_spec,
    }


def sample_indices(workers: int, extra: int) -> list[int]:
    """The first and last worker and one in between: they differ only in their index."""
    return sorted({0, workers - 1, extra % workers}) if workers else []


@settings(max_examples=SPECS)
@given(valid_jobs)
def test_valid_specs_default_idempotently_and_pass_validation(job: Obj) -> None:
    submitted = copy.deepcopy(job)
    defaulted = set_defaults(job)
    assert job == submitted, "defaulting must not change the cached object"
    assert set_defaults(defaulted) == defaulted
    assert validate_mpijob(defaulted) == []
    assert round_trips(defaulted)


@settings(max_examples=BUILDS)
@given(valid_jobs, st.integers(0, 10**6), st.booleans())
def test_every_builder_builds_every_child_of_a_valid_spec(
    job: Obj, extra: int, launcher_exists: bool
) -> None:
    job = set_defaults(job)
    name, namespace, uid = job["metadata"]["name"], job["metadata"]["namespace"], job["metadata"]["uid"]
    workers = int((job["spec"]["mpiReplicaSpecs"].get("Worker") or {}).get("replicas") or 0)
    indices = sample_indices(workers, extra)
    keys = secret.new_ssh_secret(job)
    assert secret.has_expected_keys(keys)
    children = [service.new_service(job), keys]
    for backend_name in BACKENDS:
        backend = gang_backend(backend_name)
        decorate = [d] if (d := decorator_for(backend, job)) else []
        pods = [compose.new_worker(job, i, decorate) for i in indices]
        launcher, _ = compose.new_launcher_job(job, decorate)
        template, _ = compose.launcher_pod_template(job, decorate)
        resumed = copy.deepcopy(launcher["spec"]["template"])
        launcher_job.merge_scheduling_directives(resumed, template)
        children += [*pods, launcher, configmap.new_config_map(job, pods)]
        if backend.enabled:
            group = backend.new_pod_group(
                job, priority_of, launcher_in_gang=maths.launcher_in_gang(job, launcher_exists)
            )
            expected = expected_pod_group(job, backend_name, launcher_exists)
            expected_spec = expected["spec"]
            assert {k: v for k, v in group.items() if k != "spec"} == {
                k: v for k, v in expected.items() if k != "spec"
            }
            assert {k: v for k, v in group["spec"].items() if k != "minResources"} == expected_spec
            explicit = scheduling_policy_of(job).get("minResources")
            if explicit is not None:
                assert parse_resource_list(group["spec"].get("minResources") or {}) == parse_resource_list(
                    explicit
                )
            elif not expected_spec.get("minMember"):
                assert "minResources" not in group["spec"]  # nothing to reserve for an empty gang
            # The update check agrees: what was built equals what the spec asks for.
            if "minResources" in group["spec"]:
                expected_spec = {**expected_spec, "minResources": explicit or group["spec"]["minResources"]}
            assert backend.pod_group_spec_equal(group, {"spec": expected_spec})
            children.append(group)
        for i, pod in zip(indices, pods, strict=True):
            assert pod["metadata"]["name"] == pod["spec"]["hostname"] == f"{name}-worker-{i}"
            assert len(pod["metadata"]["name"]) <= 63
        assert launcher["metadata"]["name"] == f"{name}-launcher"
        assert launcher["spec"]["template"]["spec"]["restartPolicy"] in ("Never", "OnFailure")
    for child in children:
        assert child["metadata"]["namespace"] == namespace
        assert [ref["uid"] for ref in child["metadata"].get("ownerReferences") or ()] in ([uid], [])
        assert round_trips(child)
    hosts = configmap.hostfile(job).splitlines()
    assert len(hosts) == workers + (1 if job["spec"].get("runLauncherAsWorker") else 0)


@settings(max_examples=STATUSES)
@given(
    specs.mpijobs(max_workers=6),
    st.one_of(st.none(), states.launcher_job()),
    st.lists(states.pod("launcher-pod"), max_size=3),
    st.data(),
    states.prior_status(),
    states.moments(),
)
def test_status_computation_never_raises_and_a_second_look_changes_nothing(
    job: Obj,
    launcher: Obj | None,
    launcher_pods: list[Obj],
    data: st.DataObject,
    prior: Obj,
    now: dt.datetime,
) -> None:
    job = set_defaults(job)
    job["status"] = prior
    workers = int((job["spec"]["mpiReplicaSpecs"].get("Worker") or {}).get("replicas") or 0)
    observed = data.draw(st.lists(states.pod("w"), max_size=workers))
    result = compute_status(job, launcher=launcher, launcher_pods=launcher_pods, workers=observed, now=now)
    status = result.status
    assert round_trips(status)
    kinds = [c["type"] for c in status.get("conditions") or ()]
    assert len(kinds) == len(set(kinds)), kinds
    assert all(e.reason and e.type in ("Normal", "Warning") for e in result.events)
    if is_finished(status) and status.get("completionTime"):
        return  # the sync never computes a finished job's status again (it only cleans up)
    again = compute_status(
        {**job, "status": status}, launcher=launcher, launcher_pods=launcher_pods, workers=observed, now=now
    )
    assert again.events == []
    assert again.status == status
