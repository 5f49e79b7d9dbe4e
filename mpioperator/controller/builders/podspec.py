"""Pod-template edits shared by workers and the launcher: SSH volume, hostname, restart policy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mpioperator.api import accessors
from mpioperator.api import constants as api
from mpioperator.api.names import secret_name
from mpioperator.api.objects import Obj

# Gang scheduling decorates pod templates (scheduler name, group label or annotation); None when off.
Decorator = Callable[[Obj], None]

SSH_VOLUME = "ssh-auth"
SSH_DEFAULT_MODE = 0o600


@dataclass(frozen=True, slots=True)
class SSHKeys:
    """The keys of the SSH Secret that pods mount as `id_rsa`, `id_rsa.pub` and `authorized_keys`."""

    private: str = "ssh-privatekey"
    public: str = "ssh-publickey"
    authorized: str = "ssh-publickey"


# The generated Secret's keys (upstream's), also those of a `kubernetes.io/ssh-auth` Secret.
UPSTREAM_KEYS = SSHKeys()


def ssh_volume(job: Obj, keys: SSHKeys = UPSTREAM_KEYS) -> Obj:
    secret: Obj = {
        # A Secret of the user's own is mounted at the same paths with the same mode (a decorator names
        # it); its keys may be named as the openmpi prototype's (controller/user_ssh_secret.py).
        "secretName": secret_name(job),
        "items": [
            {"key": keys.private, "path": "id_rsa"},
            {"key": keys.public, "path": "id_rsa.pub"},
            {"key": keys.authorized, "path": "authorized_keys"},
        ],
    }
    if accessors.ssh_auth_mount_path(job) == api.DEFAULT_SSH_AUTH_MOUNT_PATH:
        secret["defaultMode"] = SSH_DEFAULT_MODE
    return {"name": SSH_VOLUME, "secret": secret}


def add_volume(pod_spec: Obj, container: Obj, volume: Obj, mount_path: str) -> None:
    pod_spec["volumes"] = [*(pod_spec.get("volumes") or []), volume]
    container["volumeMounts"] = [
        *(container.get("volumeMounts") or []),
        {"name": volume["name"], "mountPath": mount_path},
    ]


def add_env(container: Obj, *pairs: tuple[str, str | None]) -> None:
    env = list(container.get("env") or [])
    for name, value in pairs:
        env.append({"name": name} if value is None else {"name": name, "value": value})
    container["env"] = env


def pod_restart_policy(replica_policy: str | None) -> str:
    if replica_policy == api.RESTART_POLICY_EXIT_CODE:
        return api.RESTART_POLICY_NEVER
    return replica_policy or api.RESTART_POLICY_NEVER


def set_host(pod_spec: Obj, hostname: str, job: Obj) -> None:
    pod_spec["hostname"] = hostname
    pod_spec["subdomain"] = job["metadata"]["name"]
    if pod_spec.get("hostNetwork"):
        pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"


def role_labels(job: Obj, role: str) -> dict[str, str]:
    return {
        api.LABEL_OPERATOR_NAME: api.OPERATOR_NAME,
        api.LABEL_JOB_NAME: job["metadata"]["name"],
        api.LABEL_JOB_ROLE: role,
        api.LABEL_LEGACY_JOB_NAME: job["metadata"]["name"],
        api.LABEL_LEGACY_ROLE_TYPE: role,
    }
