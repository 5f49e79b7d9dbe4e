"""Our opt-in behaviour, as annotations under our own prefix (decisions.md D8; docs/extensions.md).

Upstream's spec stays as it is: typed clients built on upstream's structs drop unknown spec fields on a
read-modify-write, but keep annotations. CEL in a CRD cannot read annotations, so a bad value is reported
by the controller's validation (the `Invalid` condition) instead of being refused at apply time.
"""

from __future__ import annotations

import re

from mpioperator.api.field_errors import FieldError, JSONString, invalid, not_supported
from mpioperator.api.objects import Obj

PREFIX = "mpioperator.io/"
WORKER_STARTUP_DEADLINE = f"{PREFIX}worker-startup-deadline-seconds"
KEEP_FAILED_LAUNCHER = f"{PREFIX}keep-failed-launcher"
# How the launcher's MPI reaches the workers: `ssh` (upstream's) or `exec` (the API server's pods/exec,
# which the operator must be allowed to grant: --exec-agent).
LAUNCH_AGENT = f"{PREFIX}launch-agent"
AGENT_SSH = "ssh"
AGENT_EXEC = "exec"
_AGENTS = (AGENT_SSH, AGENT_EXEC)
# Where the exec agent's launcher finds kubectl and the agent script (an emptyDir the operator mounts).
EXEC_AGENT_DIR = "/opt/mpioperator-exec"
WAIT_FOR_SSH_PORT = f"{PREFIX}wait-for-ssh-port"
_PORT = re.compile(r"[0-9]{1,5}")
_BOOLEANS = ("false", "true")
# As Kubernetes' own second counts (activeDeadlineSeconds): an int64. ASCII digits only, as Go's
# strconv reads them: str.isdigit() also takes "²", which int() then refuses.
MAX_SECONDS = 2**63 - 1
_DIGITS = re.compile(r"[0-9]{1,19}")


def _annotations(job: Obj) -> dict[str, str]:
    found = (job.get("metadata") or {}).get("annotations") or {}
    return {k: str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def whole_seconds(value: str) -> int | None:
    """A whole, non-negative number of seconds up to MAX_SECONDS; None for anything else."""
    text = value.strip()
    if _DIGITS.fullmatch(text) is None:
        return None
    seconds = int(text)
    return seconds if seconds <= MAX_SECONDS else None


def worker_startup_deadline(job: Obj) -> int | None:
    """The job's own deadline in seconds (0: none), or None when it does not set one (or sets it badly)."""
    value = _annotations(job).get(WORKER_STARTUP_DEADLINE)
    return None if value is None else whole_seconds(value)


def keep_failed_launcher(job: Obj) -> bool:
    return _annotations(job).get(KEEP_FAILED_LAUNCHER, "").strip().lower() == "true"


def exec_agent(job: Obj) -> bool:
    return _annotations(job).get(LAUNCH_AGENT, "").strip() == AGENT_EXEC


def wait_for_ssh_port(job: Obj) -> int | None:
    """The port the launcher waits for on every host before its own container starts; None: no wait."""
    value = _annotations(job).get(WAIT_FOR_SSH_PORT)
    return None if value is None else _port(value)


def waits_for_running_workers(job: Obj) -> bool:
    """Whether the launcher waits for its hosts through the exec agent: there is no sshd to connect to, so
    the operator makes the launcher Job only once every worker pod is Running (the port is not used)."""
    return exec_agent(job) and wait_for_ssh_port(job) is not None


def _port(value: str) -> int | None:
    text = value.strip()
    if _PORT.fullmatch(text) is None:
        return None
    port = int(text)
    return port if 0 < port < 65536 else None


def validate_annotations(job: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    annotations = _annotations(job)
    path = "metadata.annotations[{}]"
    deadline = annotations.get(WORKER_STARTUP_DEADLINE)
    if deadline is not None and whole_seconds(deadline) is None:
        errors.append(
            invalid(
                path.format(WORKER_STARTUP_DEADLINE),
                JSONString(deadline),
                f"must be a whole number of seconds, at most {MAX_SECONDS}",
            )
        )
    keep = annotations.get(KEEP_FAILED_LAUNCHER)
    if keep is not None and keep.strip().lower() not in _BOOLEANS:
        errors.append(not_supported(path.format(KEEP_FAILED_LAUNCHER), JSONString(keep), _BOOLEANS))
    agent = annotations.get(LAUNCH_AGENT)
    if agent is not None and agent.strip() not in _AGENTS:
        errors.append(not_supported(path.format(LAUNCH_AGENT), JSONString(agent), _AGENTS))
    port = annotations.get(WAIT_FOR_SSH_PORT)
    if port is not None and _port(port) is None:
        errors.append(
            invalid(path.format(WAIT_FOR_SSH_PORT), JSONString(port), "must be a port number, 1-65535")
        )
    return errors
