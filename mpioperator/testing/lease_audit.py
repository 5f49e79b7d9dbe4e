"""Whether every write came from the replica holding the leader-election Lease, judged from the audit log.

The Lease says who leads: a write is allowed when the last successful write to the Lease received before it
(an acquisition or a renewal) named the writer's own identity, and that renewal had not yet expired
(`leaseDurationSeconds` after it was sent). Anything else is a write without the lease: before the writer
ever acquired it, after another replica took it over or after the writer released it, or after its own
renewals lapsed so long that another replica was entitled to take over.

A replica's identity comes from its own Lease writes: every one carries its `holderIdentity`, so each
credential (one token per replica process) is tied to the identity it wrote. The audit policy must log Lease
writes with their bodies (`audit_policy(..., bodies_of=[("coordination.k8s.io", "leases")])`).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from mpioperator.testing.audit import AuditRecord

LEASE_RESOURCE = "leases"


@dataclass(frozen=True, slots=True)
class LeaseWrite:
    """A successful write of the Lease: `holder` is "" for a release."""

    received: datetime
    credential: str
    holder: str
    duration: timedelta


@dataclass(frozen=True, slots=True)
class Violation:
    record: AuditRecord
    why: str

    def describe(self) -> str:
        r = self.record
        return (
            f"{r.received.isoformat()} {r.verb} {r.resource} {r.namespace}/{r.name} -> {r.code} "
            f"by {r.credential}: {self.why}"
        )


@dataclass(frozen=True, slots=True)
class Tenure:
    """One holder's unbroken hold of the Lease, from its acquisition to its last renewal."""

    holder: str
    acquired: datetime
    last_renewed: datetime
    ended_by: str  # "taken over", "released" or "still held"


def lease_writes(records: Iterable[AuditRecord], namespace: str, name: str) -> list[LeaseWrite]:
    """The successful writes of one Lease that carried a body, in the order the server received them."""
    out = []
    for r in records:
        if r.resource != LEASE_RESOURCE or r.namespace != namespace or r.name != name:
            continue
        if not r.succeeded or r.verb not in ("create", "update", "patch") or r.body is None:
            continue
        spec = r.body.get("spec") or {}
        out.append(
            LeaseWrite(
                received=r.received,
                credential=r.credential,
                holder=str(spec.get("holderIdentity") or ""),
                duration=timedelta(seconds=float(spec.get("leaseDurationSeconds") or 0)),
            )
        )
    return sorted(out, key=lambda w: w.received)


def identities(writes: Iterable[LeaseWrite]) -> dict[str, set[str]]:
    """Each credential's holder identities (one, for a well-behaved replica)."""
    found: dict[str, set[str]] = {}
    for w in writes:
        if w.holder:
            found.setdefault(w.credential, set()).add(w.holder)
    return found


def holder_credentials(writes: Iterable[LeaseWrite]) -> dict[str, str]:
    """Each holder identity's credential (the token of the process that wrote it)."""
    return {w.holder: w.credential for w in writes if w.holder}


def writes_without_lease(records: Sequence[AuditRecord], namespace: str, name: str) -> list[Violation]:
    """Every write other than to the Lease itself that its sender made without holding the Lease.

    Failed writes count too: a request a deposed leader sends is the fault even if the server refuses it.
    """
    writes = lease_writes(records, namespace, name)
    times = [w.received for w in writes]
    ids = identities(writes)
    violations = []
    for r in records:
        if r.resource == LEASE_RESOURCE and r.namespace == namespace and r.name == name:
            continue
        mine = ids.get(r.credential, set())
        if not mine:
            violations.append(Violation(r, "this credential never held the lease"))
            continue
        latest = bisect.bisect_right(times, r.received) - 1
        if latest < 0:
            violations.append(Violation(r, "before any replica held the lease"))
            continue
        last = writes[latest]
        if last.holder not in mine:
            whose = f"held by {last.holder}" if last.holder else "released"
            violations.append(Violation(r, f"the lease was {whose} since {last.received.isoformat()}"))
        elif r.received > last.received + last.duration:
            violations.append(
                Violation(r, f"own lease expired: last renewed {last.received.isoformat()}, {last.duration}")
            )
    return violations


def tenures(writes: Sequence[LeaseWrite]) -> list[Tenure]:
    """The Lease's holders in turn; a release ends a tenure, a write by another holder takes it over."""
    out: list[Tenure] = []
    current: Tenure | None = None
    for w in writes:
        if current is not None and w.holder == current.holder:
            current = Tenure(current.holder, current.acquired, w.received, current.ended_by)
            continue
        if current is not None:
            out.append(Tenure(current.holder, current.acquired, current.last_renewed, _ending(w)))
        current = Tenure(w.holder, w.received, w.received, "still held") if w.holder else None
    if current is not None:
        out.append(current)
    return out


def _ending(next_write: LeaseWrite) -> str:
    return "taken over" if next_write.holder else "released"


def handover_gaps(held: Sequence[Tenure]) -> list[float]:
    """Seconds between one holder's last renewal and the next holder's acquisition, for each change."""
    return [
        round((after.acquired - before.last_renewed).total_seconds(), 1)
        for before, after in itertools.pairwise(held)
    ]
