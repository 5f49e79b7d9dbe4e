"""The exec launch agent's objects (docs/extensions.md): the launcher's MPI reaches its workers through the
API server's exec instead of ssh, so workers need no sshd.

Per job: a ServiceAccount the launcher runs as, a Role that lets it `get` and exec into the worker pods
the job controls and nothing else (by `resourceNames`), and the RoleBinding between them, all named
`<job>-launcher` (upstream v1's names) and owned by the MPIJob, so the garbage collector deletes them with
it. The launcher gets a static kubectl and the agent script from an init container, through an emptyDir,
so the user's image needs nothing but `/bin/sh`.
"""

from __future__ import annotations

from mpioperator.api import accessors, annotation_keys
from mpioperator.api import constants as api
from mpioperator.api.extensions import launch
from mpioperator.api.names import launcher_name
from mpioperator.api.objects import Obj
from mpioperator.api.ownership import child_metadata
from mpioperator.controller.builders.podspec import Decorator, add_env, add_volume

AGENT_VOLUME = "mpi-exec-agent"
AGENT_DIR = launch.EXEC_AGENT_DIR
AGENT = f"{AGENT_DIR}/kubexec.sh"
DELIVERY_CONTAINER = "kubectl-delivery"
# The delivery's user when the launcher must not run as root and names no user of its own: the
# conventional "nonroot" uid, the operator image's.
DELIVERY_USER = 65532
# Which container of a worker pod the agent execs into: the worker template's first (the main one).
CONTAINER_ENV = "MPIOPERATOR_EXEC_CONTAINER"
# On an exec-agent job while the operator may hold grants for it: they are revoked before the job goes.
FINALIZER = annotation_keys.EXEC_GRANTS_FINALIZER
# On the per-job ServiceAccount, Role and RoleBinding the operator makes, with the job's uid.
GRANT_LABEL = annotation_keys.EXEC_GRANT_LABEL


def account_name(job: Obj) -> str:
    return launcher_name(job)


def _metadata(job: Obj) -> Obj:
    """The job's controller reference and the operator's label with the job's uid, which also finds the
    Role and binding once an orphaning deletion has taken the reference away."""
    meta = child_metadata(job, account_name(job))
    meta["labels"][GRANT_LABEL] = job["metadata"].get("uid", "")
    return meta


def made_for(obj: Obj, job: Obj) -> bool:
    """Whether `obj` carries the label the operator puts on what it makes for `job`."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    uid = job["metadata"].get("uid", "")
    return bool(uid) and labels.get(GRANT_LABEL) == uid


def new_service_account(job: Obj) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _metadata(job),
    }


def new_role(job: Obj, workers: list[str]) -> Obj:
    """Exec into, and read, these pods and no other: the job's own workers, as made (the caller names only
    pods the job controls, so a pod of someone else's that has a worker's name is never granted). No
    workers, no rules: an empty resourceNames would mean every pod."""
    rules: list[Obj] = []
    if workers:
        rules = [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": workers},
            {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"], "resourceNames": workers},
        ]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _metadata(job),
        "rules": rules,
    }


def new_role_binding(job: Obj) -> Obj:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _metadata(job),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account_name(job)},
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": account_name(job),
                "namespace": job["metadata"].get("namespace", ""),
            }
        ],
    }


def agent_env(job: Obj) -> list[tuple[str, str | None]]:
    """What tells each MPI to start its daemons with the agent instead of ssh. The ssh options upstream's
    variables still pass (`-o ConnectionAttempts=10`) are skipped by the agent."""
    implementation = accessors.mpi_implementation(job)
    env: list[tuple[str, str | None]]
    if implementation == api.INTEL:
        env = [("I_MPI_HYDRA_BOOTSTRAP", "rsh"), ("I_MPI_HYDRA_BOOTSTRAP_EXEC", AGENT)]
    elif implementation == api.MPICH:
        env = [("HYDRA_LAUNCHER", "rsh"), ("HYDRA_LAUNCHER_EXEC", AGENT)]
    else:
        # mpirun hands its MCA settings to the daemons it starts, whose launch component checks at start
        # that the agent exists, on a worker that has none, and the daemon dies. A list takes the first
        # that exists: the agent on the launcher, `sh` (never used, no tree spawn) on a worker.
        agents = f"{AGENT} : sh"
        env = [
            ("OMPI_MCA_plm_rsh_agent", agents),
            # A tree spawn has daemons on workers start further daemons, with an agent only the
            # launcher has; Open MPI 5's launcher already starts every daemon itself (prrte_env).
            ("OMPI_MCA_plm_rsh_no_tree_spawn", "1"),
            ("PRTE_MCA_plm_ssh_agent", agents),
        ]
    container = ((accessors.replica_spec(job, api.WORKER) or {}).get("template") or {}).get("spec") or {}
    first = (container.get("containers") or [{}])[0]
    env.append((CONTAINER_ENV, str(first.get("name", ""))))
    return env


def decorate_launcher(job: Obj, template: Obj, image: str) -> None:
    """The launcher pod template runs as the job's ServiceAccount, with its token, the agent delivered
    into an emptyDir and its MPI pointed at it."""
    spec = template["spec"]
    spec["serviceAccountName"] = account_name(job)
    # A kubectl inside the pod authenticates with the mounted token.
    spec["automountServiceAccountToken"] = True
    container = spec["containers"][0]
    add_volume(spec, container, {"name": AGENT_VOLUME, "emptyDir": {}}, AGENT_DIR)
    delivery: Obj = {
        "name": DELIVERY_CONTAINER,
        "image": image,
        "args": [AGENT_DIR],
        "volumeMounts": [{"name": AGENT_VOLUME, "mountPath": AGENT_DIR}],
    }
    delivery["securityContext"] = delivery_security(spec, container)
    spec["initContainers"] = [*(spec.get("initContainers") or []), delivery]
    add_env(container, *agent_env(job))


def delivery_security(spec: Obj, launcher: Obj) -> Obj:
    """The delivery container's securityContext: what Pod Security's `restricted` level asks of every
    container, always (a copy needs no privilege, capability or system call beyond the runtime's
    default), and the launcher's user, so the copied files are that user's to run. A launcher asked to
    run as non-root is matched: the delivery image's own user is root, so without a uid of the launcher's
    it runs as DELIVERY_USER (the files stay readable and executable by every user)."""
    pod = spec.get("securityContext") or {}
    own = launcher.get("securityContext") or {}
    security: Obj = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    user = own.get("runAsUser", pod.get("runAsUser"))
    if user is not None:
        security["runAsUser"] = user
    if "runAsGroup" in own:
        security["runAsGroup"] = own["runAsGroup"]
    if own.get("runAsNonRoot", pod.get("runAsNonRoot")) is True:
        security["runAsNonRoot"] = True
        security.setdefault("runAsUser", DELIVERY_USER)
    return security


def with_exec_agent(decorate: Decorator | None, job: Obj, image: str) -> Decorator:
    """The launcher's decorator: gang scheduling's (when on), then the agent's."""

    def both(template: Obj) -> None:
        if decorate is not None:
            decorate(template)
        decorate_launcher(job, template, image)

    return both
