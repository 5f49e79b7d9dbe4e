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
from collections.abc import Mapping
from dataclasses import dataclass

from mpioperator.api import annotation_keys as keys
from mpioperator.api.annotation_keys import PROGRESS as PROGRESS
from mpioperator.api.annotation_keys import STALL_ACTION as STALL_ACTION
from mpioperator.api.annotation_keys import STALL_TIMEOUT as STALL_TIMEOUT
from mpioperator.api.field_errors import FieldError, JSONString, not_supported
from mpioperator.api.objects import Obj

COND_STALLED = "Stalled"
PROGRESS_JSON = keys.PROGRESS_JSON
STALL_FAIL = keys.STALL_FAIL
_ACTIONS = (keys.STALL_CONDITION_ONLY, keys.STALL_FAIL)
_seconds = keys.whole_number(keys.MAX_SECONDS)


@dataclass(frozen=True, slots=True)
class Settings:
    """How a job's launcher log is read, from its annotations (a bad value reads as absent: validation
    reports it)."""

    # `json`, the compiled line pattern, or None when the job reports no progress.
    progress_format: str | re.Pattern[str] | None = None
    # Seconds of silence before the job is Stalled; None when it is never.
    stall_timeout: int | None = None
    fails_when_stalled: bool = False

    @property
    def follows_log(self) -> bool:
        """Whether the operator reads the job's launcher log at all."""
        return self.progress_format is not None or self.stall_timeout is not None


def settings(found: Mapping[str, str]) -> Settings:
    """The log settings of a job whose annotations are `found` (annotation_keys.of)."""
    progress = found.get(PROGRESS)
    timeout = found.get(STALL_TIMEOUT)
    return Settings(
        progress_format=None if progress is None else keys.progress_format(progress),
        stall_timeout=(None if timeout is None else _seconds(timeout)) or None,
        fails_when_stalled=found.get(STALL_ACTION, "").strip() == STALL_FAIL,
    )


def validate_launcher_log(job: Obj, found: Mapping[str, str] | None = None) -> list[FieldError]:
    """What is wrong with the log annotations; `found`: the job's annotations when already read."""
    errors: list[FieldError] = []
    found = keys.of(job) if found is None else found
    pattern = (
        f"must be {PROGRESS_JSON!r} or a regular expression of at most {keys.MAX_PROGRESS_PATTERN} "
        "characters with a named group 'done'"
    )
    errors += keys.unreadable(found, PROGRESS, keys.progress_format, pattern)
    seconds = f"must be a whole number of seconds, at most {keys.MAX_SECONDS}"
    errors += keys.unreadable(found, STALL_TIMEOUT, _seconds, seconds)
    action = found.get(STALL_ACTION)
    if action is not None and action.strip() not in _ACTIONS:
        errors.append(not_supported(keys.field_path(STALL_ACTION), JSONString(action), _ACTIONS))
    return errors
