"""Whole-job restarts: the opt-in annotations, and which attempt a child belongs to (docs/extensions.md).

MPI cannot lose a rank, so a failed or evicted worker ends the job under upstream's rules. With
`mpioperator.io/restart-policy` the job is started again as a whole instead, at most
`mpioperator.io/max-restarts` times. The number of restarts done lives in `status.restarts` (in the API
server, so a new leader continues the count), and every child of an attempt carries it as the label
`mpioperator.io/attempt`, so a pod of an earlier attempt is never taken for one of the current attempt.
"""

from __future__ import annotations

import re

from mpioperator.api.field_errors import FieldError, JSONString, invalid, not_supported
from mpioperator.api.objects import Obj

PREFIX = "mpioperator.io/"
RESTART_POLICY = f"{PREFIX}restart-policy"
MAX_RESTARTS = f"{PREFIX}max-restarts"
ATTEMPT_LABEL = f"{PREFIX}attempt"

NEVER = "Never"
ON_WORKER_FAILURE = "OnWorkerFailure"
ON_FAILURE = "OnFailure"  # a worker's or the launcher's
POLICIES = (NEVER, ON_WORKER_FAILURE, ON_FAILURE)

DEFAULT_MAX_RESTARTS = 3
# An int32, as status counts are; far beyond any sensible number of restarts.
MAX_MAX_RESTARTS = 2**31 - 1
_DIGITS = re.compile(r"[0-9]{1,10}")


def _annotations(job: Obj) -> dict[str, str]:
    found = (job.get("metadata") or {}).get("annotations") or {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _count(value: str) -> int | None:
    """A whole, non-negative number in ASCII digits up to MAX_MAX_RESTARTS; None for anything else."""
    text = value.strip()
    if _DIGITS.fullmatch(text) is None:
        return None
    number = int(text)
    return number if number <= MAX_MAX_RESTARTS else None


def policy(job: Obj) -> str:
    """The job's restart policy; Never when it sets none (or a bad one, which validation reports)."""
    value = _annotations(job).get(RESTART_POLICY, NEVER).strip()
    return value if value in POLICIES else NEVER


def enabled(job: Obj) -> bool:
    return policy(job) != NEVER


def restarts_launcher(job: Obj) -> bool:
    return policy(job) == ON_FAILURE


def max_restarts(job: Obj) -> int:
    value = _annotations(job).get(MAX_RESTARTS)
    parsed = None if value is None else _count(value)
    return DEFAULT_MAX_RESTARTS if parsed is None else parsed


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


def labelled(job: Obj) -> bool:
    """Whether the job's children carry their attempt: once it opts in, and for good once it restarted
    (an annotation removed later must not make the current attempt's children look like older ones)."""
    return enabled(job) or current_attempt(job) > 0


def attempt_labels(job: Obj) -> dict[str, str]:
    """The label a new child carries: none unless the job opted in, so others stay as upstream's."""
    return {ATTEMPT_LABEL: str(current_attempt(job))} if labelled(job) else {}


def validate_restarts(job: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    annotations = _annotations(job)
    path = "metadata.annotations[{}]"
    value = annotations.get(RESTART_POLICY)
    if value is not None and value.strip() not in POLICIES:
        errors.append(not_supported(path.format(RESTART_POLICY), JSONString(value), POLICIES))
    limit = annotations.get(MAX_RESTARTS)
    if limit is not None and _count(limit) is None:
        errors.append(
            invalid(
                path.format(MAX_RESTARTS),
                JSONString(limit),
                f"must be a whole number, at most {MAX_MAX_RESTARTS}",
            )
        )
    return errors
