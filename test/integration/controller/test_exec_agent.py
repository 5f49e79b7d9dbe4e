"""The exec launch agent's RBAC on a real API server: a job's launcher ServiceAccount may exec into its own
workers and into nothing else, the Role follows the job's worker count, and an operator without
--exec-agent holds the job with a condition and one Warning event."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio
import yaml

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.operator import service_account_token
from mpioperator.testing.pki import write_kubeconfig
from test.integration.controller.actors import Actors
from test.integration.controller.conftest import running_controller
from test.integration.controller.waits import condition_appears

Obj = dict[str, Any]
REPO = Path(__file__).resolve().parents[3]
IMAGE = "mpioperator/kubectl-delivery:latest"
EXEC = {"mpioperator.io/launch-agent": "exec"}
RBAC = "/apis/rbac.authorization.k8s.io/v1/namespaces"


def exec_job(name: str, workers: int = 2) -> Obj:
    return mpijob(name, workers=workers, annotations=EXEC)


def can_i(cluster: LocalCluster, ns: str, account: str, verb: str, what: str, name: str) -> bool:
    """`kubectl auth can-i` impersonating the ServiceAccount: a SelfSubjectAccessReview made as it."""
    resource, _, subresource = what.partition("/")
    target = f"{resource}/{name}" if name else resource
    args = ["auth", "can-i", verb, target, "-n", ns, f"--as=system:serviceaccount:{ns}:{account}"]
    if subresource:
        args.append(f"--subresource={subresource}")
    answer = cluster.kubectl(*args, check=False)
    said = answer.stdout.split()
    assert said and said[0] in ("yes", "no"), answer.stderr  # "no - RBAC: ..." says why, too
    return said[0] == "yes"


@pytest_asyncio.fixture
async def a(mpijob_crd: LocalCluster, make_namespace: Any) -> AsyncIterator[Actors]:
    """The actors of a namespace of its own, watched by a controller that may grant the exec launch agent
    (its tests' `a`)."""
    ns = make_namespace(mpijob_crd)
    async with running_controller(mpijob_crd, ns, settings={"exec_agent_image": IMAGE}) as h:
        yield Actors(h.cluster, ns)


def role(a: Actors, name: str) -> Obj | None:
    return a.rest.get_or_none(f"{RBAC}/{a.ns}/roles/{name}")


async def test_a_launcher_account_may_exec_into_its_own_workers_and_is_refused_another_jobs_pod(
    a: Actors,
) -> None:
    a.submit(exec_job("alpha"))
    a.submit(exec_job("beta"))
    await a.until_true(lambda: len(a.worker_pods("alpha")) == 2, "alpha's workers")
    await a.until_true(lambda: len(a.worker_pods("beta")) == 2, "beta's workers")
    await a.until_true(lambda: a.launcher_job("alpha") is not None, "alpha's launcher Job")

    launcher = a.launcher_job("alpha")
    assert launcher is not None
    assert launcher["spec"]["template"]["spec"]["serviceAccountName"] == "alpha-launcher"
    for kind in ("serviceaccounts", "roles", "rolebindings"):
        root = "/api/v1/namespaces" if kind == "serviceaccounts" else RBAC
        found = a.rest.get(f"{root}/{a.ns}/{kind}/alpha-launcher")
        (owner,) = found["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("MPIJob", "alpha", True)

    account = "alpha-launcher"
    assert can_i(a.cluster, a.ns, account, "create", "pods/exec", "alpha-worker-0")
    assert can_i(a.cluster, a.ns, account, "create", "pods/exec", "alpha-worker-1")
    assert can_i(a.cluster, a.ns, account, "get", "pods", "alpha-worker-1")
    assert not can_i(a.cluster, a.ns, account, "create", "pods/exec", "beta-worker-0")
    assert not can_i(a.cluster, a.ns, account, "get", "pods", "beta-worker-0")
    launcher_pod_name = "alpha-launcher-x7k2p"  # any other pod name: the launcher's own included
    assert not can_i(a.cluster, a.ns, account, "create", "pods/exec", launcher_pod_name)
    assert not can_i(a.cluster, a.ns, account, "list", "pods", "")
    assert not can_i(a.cluster, a.ns, "beta-launcher", "create", "pods/exec", "alpha-worker-0")


async def test_the_role_follows_the_worker_count(a: Actors) -> None:
    a.submit(exec_job("grow", workers=1))
    await a.until_true(lambda: role(a, "grow-launcher") is not None, "grow's Role")
    assert not can_i(a.cluster, a.ns, "grow-launcher", "create", "pods/exec", "grow-worker-1")

    a.patch_spec("grow", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 2}}}})

    await a.until_true(
        lambda: "grow-worker-1" in str((role(a, "grow-launcher") or {}).get("rules")),
        "the Role to name the new worker",
    )
    assert can_i(a.cluster, a.ns, "grow-launcher", "create", "pods/exec", "grow-worker-1")


async def test_without_the_operator_flag_the_job_is_held_with_a_condition_and_one_warning(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    ns = make_namespace(mpijob_crd)
    async with running_controller(mpijob_crd, ns) as h:
        a = Actors(h.cluster, ns)
        a.submit(exec_job("held"))

        found = await condition_appears(a, "held", "ExecAgentNotAllowed", "the ExecAgentNotAllowed condition")
        assert found["status"] == "True"
        assert "--exec-agent" in found["message"]
        # A later change of the job syncs it again: still no pods, and no second event.
        a.patch_spec("held", {"metadata": {"labels": {"touched": "yes"}}})
        await a.until_true(
            lambda: a.event_reasons("held").count("ExecAgentNotAllowed") == 1, "the one Warning event"
        )
        a.patch_spec("held", {"spec": {"runPolicy": {"backoffLimit": 2}}})
        await a.until_true(lambda: bool(a.status("held").get("startTime")), "a synced status")
        assert a.worker_pods("held") == []
        assert a.launcher_job("held") is None
        assert role(a, "held-launcher") is None
        assert a.event_reasons("held").count("ExecAgentNotAllowed") == 1


async def test_a_pod_of_someone_elses_with_a_workers_name_is_never_granted(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    """A job named so that its worker names match a pod it does not control must not get exec into it."""
    ns = make_namespace(mpijob_crd)
    pod = {"metadata": {"name": "squat-worker-0"}, "spec": {"containers": [{"name": "db", "image": "db"}]}}
    mpijob_crd.rest.create(f"/api/v1/namespaces/{ns}/pods", pod)
    async with running_controller(mpijob_crd, ns, settings={"exec_agent_image": IMAGE}) as h:
        a = Actors(h.cluster, ns)
        a.submit(exec_job("squat", workers=2))

        await a.until_true(lambda: "ErrResourceExists" in a.event_reasons("squat"), "the job refused the pod")
        assert not can_i(mpijob_crd, ns, "squat-launcher", "create", "pods/exec", "squat-worker-0")
        assert not can_i(mpijob_crd, ns, "squat-launcher", "get", "pods", "squat-worker-0")
        assert a.launcher_job("squat") is None


def operator_rights_in(cluster: LocalCluster, ns: str, kubeconfig: Path) -> Path:
    """A ServiceAccount in `ns` with the manifests' ClusterRole and the exec-agent component's, bound in
    `ns` only (a cluster-wide binding would outlive the test for the session's other tests)."""
    cluster.kubectl("apply", "--server-side", "-f", str(REPO / "manifests/base/cluster-role.yaml"))
    component = yaml.safe_load_all((REPO / "manifests/components/exec-agent/cluster-role.yaml").read_text())
    role = next(doc for doc in component if doc["kind"] == "ClusterRole")
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(role))
    cluster.rest.create(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "operator"}})
    for cluster_role in ("mpi-operator", role["metadata"]["name"]):
        binding = {
            "metadata": {"name": cluster_role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
            "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": ns}],
        }
        cluster.rest.create(f"{RBAC}/{ns}/rolebindings", binding)
    token = service_account_token(cluster, ns, "operator")
    return write_kubeconfig(kubeconfig, server=cluster.server, ca_file=cluster.ca_file, token=token)


async def test_the_operator_with_the_components_rights_grants_a_launcher_exec_on_its_workers(
    mpijob_crd: LocalCluster, make_namespace: Any, tmp_path: Path
) -> None:
    """Not as the cluster's administrator: RBAC lets the operator grant only what it holds, and bind only
    a Role that exists."""
    ns = make_namespace(mpijob_crd)
    kubeconfig = operator_rights_in(mpijob_crd, ns, tmp_path / "operator.kubeconfig")
    settings = {"exec_agent_image": IMAGE}
    async with running_controller(mpijob_crd, ns, settings=settings, kubeconfig=kubeconfig) as h:
        a = Actors(h.cluster, ns)
        a.submit(exec_job("own"))

        await a.until_true(lambda: a.launcher_job("own") is not None, "own's launcher Job")
        assert can_i(mpijob_crd, ns, "own-launcher", "create", "pods/exec", "own-worker-1")
        assert not can_i(mpijob_crd, ns, "own-launcher", "create", "pods/exec", "someone-else")


async def test_a_job_that_waits_for_its_hosts_gets_its_launcher_once_every_worker_pod_runs(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    ns = make_namespace(mpijob_crd)
    async with running_controller(mpijob_crd, ns, settings={"exec_agent_image": IMAGE}) as h:
        a = Actors(h.cluster, ns)
        body = exec_job("patient")
        body["metadata"]["annotations"]["mpioperator.io/wait-for-ssh-port"] = "22"
        await a.submitted_with_workers(body)
        a.set_pod("patient-worker-0", "Running", ready=False)
        await a.until_true(
            lambda: a.status("patient").get("replicaStatuses", {}).get("Worker") == {"active": 1},
            "one running worker seen",
        )
        await a.until_true(h.controller.queue_idle, "every sync to have run")
        assert a.launcher_job("patient") is None, "made while a worker was still Pending"

        # Running, not Ready: the exec agent needs a running container, not the user's readiness.
        a.set_pod("patient-worker-1", "Running", ready=False)

        await a.until_true(lambda: a.launcher_job("patient") is not None, "the launcher Job")
        spec = (a.launcher_job("patient") or {})["spec"]["template"]["spec"]
        inits = [c["name"] for c in spec.get("initContainers") or ()]
        assert "mpioperator-wait-for-hosts" not in inits, "no sshd on the workers to connect to"


# --- the grants follow the live workers -------------------------------------------------------------------

HOLD = "test.mpioperator.io/hold"
FINALIZER = "mpioperator.io/exec-grants"


def granted(a: Actors, job: str) -> list[str] | None:
    """The worker pods the job's Role names ([] for a Role without rules); None when there is no Role."""
    found = role(a, f"{job}-launcher")
    if found is None:
        return None
    rules = found.get("rules") or []
    return sorted(rules[0]["resourceNames"]) if rules else []


def binding(a: Actors, name: str) -> Obj | None:
    return a.rest.get_or_none(f"{RBAC}/{a.ns}/rolebindings/{name}")


def hold(a: Actors, pod: str) -> None:
    """A finalizer of the test's keeps the pod terminating once deleted, as a kubelet stopping it would."""
    a.rest.merge_patch(a.path("pods", pod), {"metadata": {"finalizers": [HOLD]}})


def release_held(a: Actors) -> None:
    for pod in a.items("pods"):
        if HOLD in (pod["metadata"].get("finalizers") or ()):
            a.rest.merge_patch(a.path("pods", pod["metadata"]["name"]), {"metadata": {"finalizers": None}})


async def test_a_worker_being_deleted_leaves_the_role(a: Actors) -> None:
    a.submit(exec_job("shrink"))
    await a.until_true(lambda: granted(a, "shrink") == ["shrink-worker-0", "shrink-worker-1"], "the Role")
    hold(a, "shrink-worker-1")
    try:
        a.rest.delete(a.path("pods", "shrink-worker-1"))

        await a.until_true(lambda: granted(a, "shrink") == ["shrink-worker-0"], "the Role to shrink")
        assert not can_i(a.cluster, a.ns, "shrink-launcher", "create", "pods/exec", "shrink-worker-1")
    finally:
        release_held(a)


async def test_a_suspended_jobs_role_grants_nothing(a: Actors) -> None:
    a.submit(exec_job("nap"))
    await a.until_true(lambda: granted(a, "nap") == ["nap-worker-0", "nap-worker-1"], "the Role")

    a.patch_spec("nap", {"spec": {"runPolicy": {"suspend": True}}})

    await a.until_true(lambda: granted(a, "nap") == [], "the Role to grant nothing")
    assert not can_i(a.cluster, a.ns, "nap-launcher", "create", "pods/exec", "nap-worker-0")


async def test_a_finished_jobs_role_grants_nothing_once_its_workers_are_cleaned_up(a: Actors) -> None:
    body = exec_job("done")
    body["spec"]["runPolicy"] = {"cleanPodPolicy": "Running"}
    await a.submitted_with_workers(body)
    a.set_workers("done", "Running", ready=True)
    await a.until_true(lambda: a.launcher_job("done") is not None, "done's launcher Job")
    assert granted(a, "done") == ["done-worker-0", "done-worker-1"]

    a.set_launcher_job("done", "Complete")

    await a.until_true(lambda: granted(a, "done") == [], "the Role to grant nothing")


async def test_a_whole_job_restart_takes_the_attempts_workers_out_of_the_role(a: Actors) -> None:
    body = exec_job("again")
    body["metadata"]["annotations"]["mpioperator.io/restart-policy"] = "OnWorkerFailure"
    a.submit(body)
    await a.until_true(lambda: granted(a, "again") == ["again-worker-0", "again-worker-1"], "the Role")
    for pod in ("again-worker-0", "again-worker-1"):
        hold(a, pod)
    try:
        a.set_pod("again-worker-1", "Failed")

        await a.until_true(lambda: a.status("again").get("restarts") == 1, "the restart")
        # The attempt's workers are held terminating, so the next attempt's are not made yet.
        await a.until_true(lambda: granted(a, "again") == [], "the Role to grant nothing")
    finally:
        release_held(a)
    await a.until_true(
        lambda: granted(a, "again") == ["again-worker-0", "again-worker-1"], "the next attempt's workers"
    )


async def test_removing_the_annotation_revokes_the_grant(a: Actors) -> None:
    a.submit(exec_job("plain"))
    await a.until_true(lambda: granted(a, "plain") == ["plain-worker-0", "plain-worker-1"], "the Role")

    a.patch_spec("plain", {"metadata": {"annotations": {"mpioperator.io/launch-agent": None}}})

    await a.until_true(lambda: granted(a, "plain") in (None, []), "the Role to grant nothing")
    await a.until_true(lambda: binding(a, "plain-launcher") is None, "the binding to go")
    assert not can_i(a.cluster, a.ns, "plain-launcher", "create", "pods/exec", "plain-worker-0")


async def test_an_orphan_deletion_leaves_an_empty_role_and_no_binding(a: Actors) -> None:
    a.submit(exec_job("orphan"))
    await a.until_true(lambda: granted(a, "orphan") == ["orphan-worker-0", "orphan-worker-1"], "the Role")
    await a.until_true(lambda: binding(a, "orphan-launcher") is not None, "the binding")

    a.rest.delete(a.path("mpijobs", "orphan"), {"propagationPolicy": "Orphan"})

    await a.until_true(lambda: granted(a, "orphan") in (None, []), "the Role to grant nothing")
    await a.until_true(lambda: binding(a, "orphan-launcher") is None, "the binding to go")
    assert not can_i(a.cluster, a.ns, "orphan-launcher", "create", "pods/exec", "orphan-worker-0")
    # There is no garbage collector on this tier: Kubernetes' own `orphan` finalizer stays, ours goes.
    await a.until_true(
        lambda: (
            FINALIZER not in ((a.get("mpijobs", "orphan") or {}).get("metadata", {}).get("finalizers") or ())
        ),
        "the operator's finalizer to go",
    )


async def test_a_pre_created_role_that_names_the_job_as_controller_is_refused(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    """Made by someone else before the operator saw the job (and bound by them as they like): never filled."""
    ns = make_namespace(mpijob_crd)
    a = Actors(mpijob_crd, ns)
    made = a.submit(exec_job("planted"))
    owner = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "name": "planted",
        "uid": made["metadata"]["uid"],
        "controller": True,
    }
    planted = {"metadata": {"name": "planted-launcher", "ownerReferences": [owner]}, "rules": []}
    mpijob_crd.rest.create(f"{RBAC}/{ns}/roles", planted)
    async with running_controller(mpijob_crd, ns, settings={"exec_agent_image": IMAGE}) as h:
        a = Actors(h.cluster, ns)

        found = await condition_appears(a, "planted", "ChildRejected", "the ChildRejected condition")
        assert "Role planted-launcher" in found["message"]
        # Held: only its re-check (L11) is left in the queue, delayed.
        queue = h.controller.queue
        await a.until_true(lambda: len(queue) == 0 and queue.processing == 0, "every sync but the re-check")
        assert granted(a, "planted") == []
        assert a.launcher_job("planted") is None
        assert a.event_reasons("planted").count(found["reason"]) == 1


async def test_an_operator_restarted_without_the_flag_revokes_the_grant_and_removes_its_finalizer(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    ns = make_namespace(mpijob_crd)
    async with running_controller(mpijob_crd, ns, settings={"exec_agent_image": IMAGE}) as h:
        a = Actors(h.cluster, ns)
        a.submit(exec_job("off"))
        await a.until_true(lambda: granted(a, "off") == ["off-worker-0", "off-worker-1"], "the Role")
        await a.until_true(lambda: binding(a, "off-launcher") is not None, "the binding")

    async with running_controller(mpijob_crd, ns) as h:
        a = Actors(h.cluster, ns)

        await a.until_true(lambda: granted(a, "off") == [], "the Role to grant nothing")
        await a.until_true(lambda: binding(a, "off-launcher") is None, "the binding to go")
        await a.until_true(
            lambda: not (a.get("mpijobs", "off") or {}).get("metadata", {}).get("finalizers"),
            "the finalizer to go",
        )
        await condition_appears(a, "off", "ExecAgentNotAllowed", "the job held without the flag")
