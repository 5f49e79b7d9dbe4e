"""Lease records and the acquire/renew decision, as pure functions (client-go leaderelection semantics).

Expiry is judged by *our* monotonic clock from the moment we last saw the record change, never by comparing
the holder's renewTime with our wall clock, so clock skew between replicas cannot steal a valid lease.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True)
class LeaderRecord:
    holder: str
    lease_duration_seconds: int
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int


def _micro_time(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def record_from_lease(lease: dict[str, Any]) -> LeaderRecord:
    spec = lease.get("spec") or {}
    return LeaderRecord(
        holder=spec.get("holderIdentity") or "",
        lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=_parse_time(spec.get("acquireTime")),
        renew_time=_parse_time(spec.get("renewTime")),
        transitions=int(spec.get("leaseTransitions") or 0),
    )


def lease_spec(record: LeaderRecord) -> dict[str, Any]:
    return {
        "holderIdentity": record.holder,
        "leaseDurationSeconds": record.lease_duration_seconds,
        "acquireTime": _micro_time(record.acquire_time),
        "renewTime": _micro_time(record.renew_time),
        "leaseTransitions": record.transitions,
    }


def new_lease(name: str, namespace: str, record: LeaderRecord) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": lease_spec(record),
    }


def held_by_other(current: LeaderRecord, identity: str, *, observed_at: float, now: float) -> bool:
    """True while someone else holds a lease that has not expired by our own clock."""
    if not current.holder or current.holder == identity:
        return False
    return observed_at + current.lease_duration_seconds > now


def next_record(
    current: LeaderRecord | None, identity: str, *, lease_duration: float, wall_now: datetime
) -> LeaderRecord:
    """The record we write to take or keep the lease."""
    duration = max(1, round(lease_duration))
    if current is None:
        return LeaderRecord(identity, duration, wall_now, wall_now, 0)
    if current.holder == identity:
        return replace(current, lease_duration_seconds=duration, renew_time=wall_now)
    return LeaderRecord(identity, duration, wall_now, wall_now, current.transitions + 1)


def released(current: LeaderRecord, wall_now: datetime) -> LeaderRecord:
    """What a leader writes on graceful shutdown so a standby can take over at its next retry."""
    return replace(current, holder="", lease_duration_seconds=1, acquire_time=wall_now, renew_time=wall_now)
