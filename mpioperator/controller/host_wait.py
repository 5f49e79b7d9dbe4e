"""Whether a launcher's `wait-for-hosts` init container gave up (`mpioperator.io/wait-for-ssh-port`).

The waiter gives up when its hosts are not all reachable within the job's start-up deadline, and says which
in its termination message. The job then fails as a missed start-up deadline does (one Warning event, the
`Failed` condition with reason `WorkerStartupDeadlineExceeded`), and its launcher Job is stopped whatever
the `cleanPodPolicy`: restarted in place, the waiter would only wait again, counting against
`backoffLimit`, for a job that has already failed.

The pod cache keeps no container names (pod_cache.py), so the waiter is known by its exit code and the
prefix of its message together, which no container of the user's writes by chance.
"""

from __future__ import annotations

from collections.abc import Iterable

from mpioperator.api.extensions.host_wait import EXIT_DEADLINE, MESSAGE_PREFIX
from mpioperator.api.objects import Obj


def _gave_up(status: Obj) -> str | None:
    """What the waiter said if this run of the container, or the last one, was the waiter giving up."""
    for state in (status.get("state") or {}, status.get("lastState") or {}):
        ended = state.get("terminated") or {}
        message = str(ended.get("message") or "")
        if ended.get("exitCode") == EXIT_DEADLINE and message.startswith(MESSAGE_PREFIX):
            return message.removeprefix(MESSAGE_PREFIX).strip()
    return None


def gave_up(launcher_pods: Iterable[Obj]) -> str:
    """What the first launcher pod whose waiter gave up said, or "" when none did."""
    for pod in launcher_pods:
        for status in (pod.get("status") or {}).get("initContainerStatuses") or ():
            words = _gave_up(status)
            if words is not None:
                name = pod["metadata"].get("name", "")
                return f"launcher {name} gave up waiting for its hosts: {words}"
    return ""
