"""Whole-job restarts: the opt-in annotations, and which attempt a child belongs to (docs/extensions.md).

MPI cannot lose a rank, so a failed or evicted worker ends the job under upstream's rules. With
`mpioperator.io/restart-policy` the job is started again as a whole instead, at most
`mpioperator.io/max-restarts` times. The number of restarts done lives in `status.restarts` (in the API
server, so a new leader continues the count), and every child of an attempt carries it as the label
`mpioperator.io/attempt`, so a pod of an earlier attempt is never taken for one of the current attempt.

Attempts are spaced by an exponential back-off (`mpioperator.io/restart-backoff-seconds` the first wait,
doubling with each quick restart up to MAX_BACKOFF_SECONDS), and an operator flag caps `max-restarts`:
a worker that exits at once would otherwise cost a whole attempt's writes every few seconds, for ever.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mpioperator.api import annotation_keys as keys
from mpioperator.api.annotation_keys import ATTEMPT_LABEL as ATTEMPT_LABEL
from mpioperator.api.annotation_keys import DEFAULT_MAX_RESTARTS as DEFAULT_MAX_RESTARTS
from mpioperator.api.annotation_keys import MAX_MAX_RESTARTS as MAX_MAX_RESTARTS
from mpioperator.api.annotation_keys import MAX_RESTARTS as MAX_RESTARTS
from mpioperator.api.annotation_keys import NEVER as NEVER
from mpioperator.api.annotation_keys import ON_FAILURE as ON_FAILURE
from mpioperator.api.annotation_keys import ON_WORKER_FAILURE as ON_WORKER_FAILURE
from mpioperator.api.annotation_keys import POLICIES as POLICIES
from mpioperator.api.annotation_keys import RESTART_BACKOFF as RESTART_BACKOFF
from mpioperator.api.annotation_keys import RESTART_POLICY as RESTART_POLICY
from mpioperator.api.field_errors import FieldError, JSONString, invalid, not_supported
from mpioperator.api.objects import Obj

# The operator's --max-restarts-cap by default: what a job may ask for unless the administrator says more.
DEFAULT_MAX_RESTARTS_CAP = 100

# The wait before a restart's new attempt: the annotation's (or the default) first, doubled with each
# restart whose attempt failed within RESET_AFTER_SECONDS of starting, never above the cap. An attempt
# that ran that long failed for a reason of its own, so its restart waits the first wait again.
DEFAULT_BACKOFF_SECONDS = keys.DEFAULT_BACKOFF_SECONDS
MAX_BACKOFF_SECONDS = 300
RESET_AFTER_SECONDS = 600


# A whole, non-negative number in ASCII digits up to MAX_MAX_RESTARTS; None for anything else.
_count = keys.whole_number(MAX_MAX_RESTARTS)


@dataclass(frozen=True, slots=True)
class Settings:
    """A job's whole-job restart settings, read from its annotations (a bad value reads as the default:
    validation reports it)."""

    policy: str = NEVER
    max_restarts: int = DEFAULT_MAX_RESTARTS
    # The first wait between attempts.
    backoff_seconds: int = DEFAULT_BACKOFF_SECONDS
    # max-restarts as written, for the operator's cap (validate_cap).
    max_restarts_text: str | None = None

    @property
    def enabled(self) -> bool:
        return self.policy != NEVER

    @property
    def restarts_launcher(self) -> bool:
        return self.policy == ON_FAILURE

    def next_delay(self, previous: int | None, quick: bool) -> int:
        """The wait before the next attempt, given the wait before the failed one (None for the first
        restart) and whether that attempt failed quickly (within RESET_AFTER_SECONDS of its start)."""
        first = self.backoff_seconds
        if previous is None or previous <= 0 or not quick:
            return first
        return max(first, min(MAX_BACKOFF_SECONDS, previous * 2))

    def labelled(self, job: Obj) -> bool:
        """Whether the job's children carry their attempt: once it opts in, and for good once it
        restarted (an annotation removed later must not make the current attempt's children look like
        older ones)."""
        return self.enabled or current_attempt(job) > 0

    def attempt_labels(self, job: Obj) -> dict[str, str]:
        """The label a new child carries: none unless the job opted in, so others stay as upstream's."""
        return {ATTEMPT_LABEL: str(current_attempt(job))} if self.labelled(job) else {}


def settings(found: Mapping[str, str]) -> Settings:
    """The restart settings of a job whose annotations are `found` (annotation_keys.of)."""
    value = found.get(RESTART_POLICY, NEVER).strip()
    limit = found.get(MAX_RESTARTS)
    parsed = None if limit is None else _count(limit)
    backoff = found.get(RESTART_BACKOFF)
    first = None if backoff is None else _backoff(backoff)
    return Settings(
        policy=value if value in POLICIES else NEVER,
        max_restarts=DEFAULT_MAX_RESTARTS if parsed is None else parsed,
        backoff_seconds=DEFAULT_BACKOFF_SECONDS if first is None else first,
        max_restarts_text=limit,
    )


def _backoff(text: str) -> int | None:
    """The first back-off in seconds, 1 to MAX_BACKOFF_SECONDS; None for anything else."""
    first = _count(text)
    return first if first is not None and 1 <= first <= MAX_BACKOFF_SECONDS else None


def next_delay(job: Obj, previous: int | None, quick: bool) -> int:
    return settings(keys.of(job)).next_delay(previous, quick)


def labelled(job: Obj) -> bool:
    return settings(keys.of(job)).labelled(job)


def attempt_labels(job: Obj) -> dict[str, str]:
    return settings(keys.of(job)).attempt_labels(job)


def restart_delay(status: Obj) -> int | None:
    """The wait before the current attempt, from the status (None before the first back-off)."""
    value = status.get("restartDelaySeconds")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def restarts(status: Obj) -> int:
    """Restarts done so far, from the status (0 when it has none or a value that is not a count)."""
    value = status.get("restarts")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def current_attempt(job: Obj) -> int:
    return restarts(job.get("status") or {})


def attempt_of(obj: Obj) -> int:
    """The attempt a child was made for: its label, or 0 for one made without (before the job opted in).
    A label that is not a count is read as -1, an attempt that is never current."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    value = labels.get(ATTEMPT_LABEL)
    if value is None:
        return 0
    parsed = _count(str(value))
    return -1 if parsed is None else parsed


def validate_restarts(job: Obj, found: Mapping[str, str] | None = None) -> list[FieldError]:
    """What is wrong with the restart annotations; `found`: the job's annotations when already read."""
    errors: list[FieldError] = []
    annotations = keys.of(job) if found is None else found
    value = annotations.get(RESTART_POLICY)
    if value is not None and value.strip() not in POLICIES:
        errors.append(not_supported(keys.field_path(RESTART_POLICY), JSONString(value), POLICIES))
    count = f"must be a whole number, at most {MAX_MAX_RESTARTS}"
    errors += keys.unreadable(annotations, MAX_RESTARTS, _count, count)
    seconds = f"must be a whole number of seconds from 1 to {MAX_BACKOFF_SECONDS}"
    return errors + keys.unreadable(annotations, RESTART_BACKOFF, _backoff, seconds)


def validate_cap(asked: Settings, cap: int) -> list[FieldError]:
    """`max-restarts` above what the operator allows (--max-restarts-cap): each restart costs a whole
    attempt's writes, so an administrator bounds how many one job may make."""
    limit = asked.max_restarts_text
    count = None if limit is None else _count(limit)
    if limit is None or count is None or count <= cap:
        return []
    return [
        invalid(
            keys.field_path(MAX_RESTARTS),
            JSONString(limit),
            f"must be at most {cap} (the operator's --max-restarts-cap)",
        )
    ]
