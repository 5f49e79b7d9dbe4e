"""What a job asks of the operator's reading of its launcher's log (docs/extensions.md): progress in its
status, and the `Stalled` condition when the log stays silent too long.

`mpioperator.io/progress` says how progress is printed: `json` for JSON lines with `step`, `total` and
`metrics` (rank 0's), or a regular expression whose named group `done` (and optionally `total`) it
captures; any other named group is a metric. `mpioperator.io/stall-timeout-seconds` is the silence
after which the job is Stalled; `mpioperator.io/stall-action: fail` then fails a job that has no restart
policy (with one, the job restarts as a whole instead).
"""

from __future__ import annotations

import re

from mpioperator.api import annotation_keys as keys
from mpioperator.api.annotation_keys import PROGRESS as PROGRESS
from mpioperator.api.annotation_keys import STALL_ACTION as STALL_ACTION
from mpioperator.api.annotation_keys import STALL_TIMEOUT as STALL_TIMEOUT
from mpioperator.api.field_errors import FieldError, JSONString, invalid, not_supported
from mpioperator.api.objects import Obj

COND_STALLED = "Stalled"
PROGRESS_JSON = keys.PROGRESS_JSON
STALL_FAIL = keys.STALL_FAIL
_ACTIONS = (keys.STALL_CONDITION_ONLY, keys.STALL_FAIL)
_seconds = keys.whole_number(keys.MAX_SECONDS)


def progress_format(job: Obj) -> str | re.Pattern[str] | None:
    """`json`, the compiled line pattern, or None when the job reports no progress (or says it badly)."""
    value = keys.of(job).get(PROGRESS)
    return None if value is None else keys.progress_format(value)


def stall_timeout(job: Obj) -> int | None:
    """Seconds of silence before the job is Stalled; None (or 0) when it is never."""
    value = keys.of(job).get(STALL_TIMEOUT)
    seconds = None if value is None else _seconds(value)
    return seconds or None


def fails_when_stalled(job: Obj) -> bool:
    return keys.of(job).get(STALL_ACTION, "").strip() == STALL_FAIL


def follows_log(job: Obj) -> bool:
    """Whether the operator reads the job's launcher log at all."""
    return progress_format(job) is not None or stall_timeout(job) is not None


def validate_launcher_log(job: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    found = keys.of(job)
    progress = found.get(PROGRESS)
    if progress is not None and keys.progress_format(progress) is None:
        errors.append(
            invalid(
                keys.field_path(PROGRESS),
                JSONString(progress),
                f"must be {PROGRESS_JSON!r} or a regular expression of at most {keys.MAX_PROGRESS_PATTERN} "
                "characters with a named group 'done'",
            )
        )
    timeout = found.get(STALL_TIMEOUT)
    if timeout is not None and _seconds(timeout) is None:
        errors.append(
            invalid(
                keys.field_path(STALL_TIMEOUT),
                JSONString(timeout),
                f"must be a whole number of seconds, at most {keys.MAX_SECONDS}",
            )
        )
    action = found.get(STALL_ACTION)
    if action is not None and action.strip() not in _ACTIONS:
        errors.append(not_supported(keys.field_path(STALL_ACTION), JSONString(action), _ACTIONS))
    return errors
