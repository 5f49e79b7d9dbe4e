"""Elastic bounds (docs/extensions.md): `mpioperator.io/min-workers` and `mpioperator.io/max-workers`.

`kubectl scale` and a HorizontalPodAutoscaler set spec.mpiReplicaSpecs[Worker].replicas through the CRD's
scale subresource, which cannot see annotations (neither can the CRD's CEL, nor an admission policy on the
scale subresource, whose object is a Scale). So a count outside the bounds is not refused at the API: the
operator runs the nearest bound instead and says so (decisions-local L50).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mpioperator.api import accessors
from mpioperator.api import annotation_keys as keys
from mpioperator.api import constants as api
from mpioperator.api.annotation_keys import MAX_WORKERS as MAX_WORKERS
from mpioperator.api.annotation_keys import MIN_WORKERS as MIN_WORKERS
from mpioperator.api.field_errors import FieldError, JSONString, invalid
from mpioperator.api.objects import Obj

_count = keys.whole_number(keys.MAX_WORKER_BOUND)


@dataclass(frozen=True, slots=True)
class Bounds:
    low: int | None
    high: int | None

    def clamp(self, replicas: int) -> int:
        if self.high is not None and replicas > self.high:
            return self.high
        if self.low is not None and replicas < self.low:
            return self.low
        return replicas


def _read(found: Mapping[str, str], key: str) -> int | None:
    value = found.get(key)
    return None if value is None else _workers(value)


def _workers(text: str) -> int | None:
    number = _count(text)
    return number if number is not None and number >= 1 else None


def read_bounds(found: Mapping[str, str]) -> Bounds | None:
    """The bounds of a job whose annotations are `found` (annotation_keys.of), None when it sets neither
    (or sets them badly: validation reports that)."""
    low, high = _read(found, MIN_WORKERS), _read(found, MAX_WORKERS)
    if low is None and high is None:
        return None
    if low is not None and high is not None and low > high:
        return None
    return Bounds(low, high)


@dataclass(frozen=True, slots=True)
class Clamp:
    asked: int
    runs: int

    def message(self, found: Bounds) -> str:
        if found.high is not None and self.asked > found.high:
            side = f"above {MAX_WORKERS} {found.high}"
        else:
            side = f"below {MIN_WORKERS} {found.low}"
        return (
            f"spec.mpiReplicaSpecs[Worker].replicas {self.asked} is {side}: "
            f"the job runs {self.runs} workers until it is scaled within its bounds"
        )


def clamp_to(job: Obj, found: Bounds | None) -> Clamp | None:
    """The worker count the job runs when its spec asks for one outside its bounds `found`; None when
    within."""
    if found is None or accessors.replica_spec(job, api.WORKER) is None:
        return None
    asked = accessors.worker_replicas(job)
    runs = found.clamp(asked)
    return None if runs == asked else Clamp(asked, runs)


def validate_bounds(job: Obj, found: Mapping[str, str] | None = None) -> list[FieldError]:
    """What is wrong with the bounds' annotations; `found`: the job's annotations when already read."""
    errors: list[FieldError] = []
    found = keys.of(job) if found is None else found
    detail = f"must be a whole number of workers, 1 to {keys.MAX_WORKER_BOUND}"
    for key in (MIN_WORKERS, MAX_WORKERS):
        errors += keys.unreadable(found, key, _workers, detail)
    low, high = _read(found, MIN_WORKERS), _read(found, MAX_WORKERS)
    if low is not None and high is not None and low > high:
        errors.append(
            invalid(
                keys.field_path(MIN_WORKERS),
                JSONString(found[MIN_WORKERS]),
                f"must not be more than {MAX_WORKERS} ({high})",
            )
        )
    return errors
