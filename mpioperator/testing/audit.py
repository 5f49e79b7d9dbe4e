"""Who wrote what: the API server's audit log, filtered to one user's writes.

apiserver_request_total has no user label, and the scheduler, the controller-manager and kwok write to the
same resources, so per-operator write counts come from the audit log, which names the user of every request.
Each record also carries the credential that made it: for a ServiceAccount token the server reports the
token's id (`authentication.kubernetes.io/credential-id`, `JTI=...`), so two processes running as the same
ServiceAccount with tokens of their own are told apart without giving either different permissions.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
LEASES = ("leases",)  # renewed every few seconds whatever the load: not a cost of any job


CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
# (API group, plural): "" is the core group.
GroupResource = tuple[str, str]


def audit_policy(
    user: str, *, bodies_of: Sequence[GroupResource] = (), deletes_of: Sequence[GroupResource] = ()
) -> dict[str, object]:
    """Metadata for `user`'s writes, once each (at ResponseComplete); nothing for anyone else but deletes
    of the resources in `deletes_of`, for checks that need to know who else removed what.

    Writes to the resources in `bodies_of` are logged with their request body (level Request), for checks
    that need what was written, such as a Lease's holder.
    """
    rules: list[dict[str, object]] = [
        {
            "level": "Request",
            "users": [user],
            "verbs": list(WRITE_VERBS),
            "resources": [{"group": group, "resources": [plural]}],
        }
        for group, plural in bodies_of
    ]
    rules.append({"level": "Metadata", "users": [user], "verbs": list(WRITE_VERBS)})
    rules += [
        {"level": "Metadata", "verbs": ["delete"], "resources": [{"group": group, "resources": [plural]}]}
        for group, plural in deletes_of
    ]
    rules.append({"level": "None"})
    return {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived", "ResponseStarted"],
        "rules": rules,
    }


AUDIT_LOG_MAX_MB = 1_000_000


def apiserver_audit_args(
    workdir: Path,
    user: str,
    *,
    bodies_of: Sequence[GroupResource] = (),
    deletes_of: Sequence[GroupResource] = (),
) -> tuple[list[str], Path]:
    """kube-apiserver flags that log `user`'s writes (see `audit_policy`), and the log's path."""
    workdir.mkdir(parents=True, exist_ok=True)
    policy = workdir / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump(audit_policy(user, bodies_of=bodies_of, deletes_of=deletes_of)))
    log = workdir / "audit.log"
    # The API server rotates its audit log at 100 MB unless told otherwise, and the readers here follow
    # one file by its offset: at 10,000 MPIJobs the log passed 100 MB and the tail read mid-line from the
    # new file. A bound in megabytes no local run reaches keeps it one file.
    return [
        f"--audit-policy-file={policy}",
        f"--audit-log-path={log}",
        "--audit-log-format=json",
        f"--audit-log-maxsize={AUDIT_LOG_MAX_MB}",
    ], log


@dataclass
class Writes:
    """Write requests by (verb, resource), where resource is `plural` or `plural/subresource`."""

    by_kind: Counter[tuple[str, str]] = field(default_factory=Counter)
    failed: Counter[tuple[str, str]] = field(default_factory=Counter)

    def total(self, *, excluding: Iterable[str] = ()) -> int:
        skip = set(excluding)
        return sum(n for (_, resource), n in self.by_kind.items() if resource not in skip)

    def minus(self, other: Writes) -> Writes:
        return Writes(self.by_kind - other.by_kind, self.failed - other.failed)


def count_writes(lines: Iterable[str], user: str) -> Writes:
    writes = Writes()
    for line in lines:
        if not line.strip():
            continue
        event = json.loads(line)
        if event.get("stage") != "ResponseComplete" or event.get("verb") not in WRITE_VERBS:
            continue
        if (event.get("user") or {}).get("username") != user:
            continue
        ref = event.get("objectRef") or {}
        resource = ref.get("resource", "?")
        if ref.get("subresource"):
            resource = f"{resource}/{ref['subresource']}"
        key = (event["verb"], resource)
        writes.by_kind[key] += 1
        if int((event.get("responseStatus") or {}).get("code", 0)) >= 300:
            writes.failed[key] += 1
    return writes


def read_writes(log: Path, user: str) -> Writes:
    if not log.exists():
        return Writes()
    with log.open() as lines:
        return count_writes(lines, user)


class WritesTail:
    """`user`'s writes so far in an audit log the API server keeps appending to, read incrementally.

    Re-reading the whole log on every poll costs the benchmark's own CPU in proportion to the writes
    already made, which at thousands of MPIJobs competes with the operator being measured.
    """

    def __init__(self, log: Path, user: str) -> None:
        self.log = log
        self.user = user
        self._offset = 0
        self._partial = b""
        self._seen = Writes()

    def read(self) -> Writes:
        if self.log.exists():
            with self.log.open("rb") as f:
                if os.fstat(f.fileno()).st_size < self._offset:
                    raise RuntimeError(f"{self.log} is shorter than what was read of it: rotated?")
                f.seek(self._offset)
                chunk = f.read()
            self._offset += len(chunk)
            complete, _, self._partial = (self._partial + chunk).rpartition(b"\n")
            if complete:
                new = count_writes(complete.decode().splitlines(), self.user)
                self._seen.by_kind.update(new.by_kind)
                self._seen.failed.update(new.failed)
        return Writes(Counter(self._seen.by_kind), Counter(self._seen.failed))


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One completed write request: when the server received and answered it, who sent it, what it was."""

    received: datetime
    completed: datetime
    user: str
    credential: str
    verb: str
    resource: str
    namespace: str
    name: str
    code: int
    body: dict[str, Any] | None = None

    @property
    def succeeded(self) -> bool:
        return 200 <= self.code < 300


def _timestamp(text: str) -> datetime:
    return datetime.fromisoformat(text)


def parse_record(line: str) -> AuditRecord | None:
    """The write a ResponseComplete audit line describes; None for anything else."""
    if not line.strip():
        return None
    event = json.loads(line)
    if event.get("stage") != "ResponseComplete" or event.get("verb") not in WRITE_VERBS:
        return None
    user = event.get("user") or {}
    username = str(user.get("username") or "")
    ids = (user.get("extra") or {}).get(CREDENTIAL_ID) or ()
    ref = event.get("objectRef") or {}
    resource = str(ref.get("resource", "?"))
    if ref.get("subresource"):
        resource = f"{resource}/{ref['subresource']}"
    body = event.get("requestObject")
    return AuditRecord(
        received=_timestamp(event["requestReceivedTimestamp"]),
        completed=_timestamp(event["stageTimestamp"]),
        user=username,
        # A token without an id (a static token, an older server) is known by its user alone.
        credential=str(ids[0]) if ids else username,
        verb=str(event["verb"]),
        resource=resource,
        namespace=str(ref.get("namespace") or ""),
        name=str(ref.get("name") or ""),
        code=int((event.get("responseStatus") or {}).get("code", 0)),
        body=body if isinstance(body, dict) else None,
    )


def read_records(log: Path, user: str | None) -> list[AuditRecord]:
    """Every write `user` (None: anyone) sent, in the order the server received them."""
    if not log.exists():
        return []
    records = []
    with log.open() as lines:
        for line in lines:
            record = parse_record(line)
            if record is not None and user in (None, record.user):
                records.append(record)
    return sorted(records, key=lambda r: r.received)


_ABSENT, _PRESENT, _MAYBE = "absent", "present", "maybe"


def committed_creates(records: Iterable[AuditRecord], resource: str) -> Counter[tuple[str, str]]:
    """How many times each (namespace, name) of `resource` was created (see `committed_create_records`)."""
    return Counter((r.namespace, r.name) for r in committed_create_records(records, resource))


def committed_create_records(records: Iterable[AuditRecord], resource: str) -> list[AuditRecord]:
    """The creates of `resource` that committed, records in the order received.

    A create answered 2xx counts. So does one answered 5xx that committed all the same, which an API server
    shutting down does: its handler times out (504) while the write reaches etcd. Such a create counts once
    the next write to that name shows the object was there (a delete, update or patch that succeeded, or a
    create refused with 409). A 5xx create sent while an earlier create of the name stands cannot have
    committed, so it never counts; nor does one whose next write found nothing (404).
    """
    state: dict[tuple[str, str], str] = {}
    pending: dict[tuple[str, str], AuditRecord] = {}  # the 5xx create a name's MAYBE state stands for
    committed: list[AuditRecord] = []
    for r in records:
        if r.resource != resource:
            continue
        key = (r.namespace, r.name)
        was = state.get(key, _ABSENT)
        if r.verb == "create" and r.succeeded:
            committed.append(r)
            state[key] = _PRESENT
        elif r.verb == "create" and r.code >= 500:
            state[key] = _PRESENT if was == _PRESENT else _MAYBE
            if was != _PRESENT:
                pending[key] = r
        elif r.code == 404:
            state[key] = _ABSENT
        elif r.succeeded or (r.verb == "create" and r.code == 409):
            if was == _MAYBE:
                committed.append(pending[key])
            state[key] = _ABSENT if r.verb == "delete" and r.succeeded else _PRESENT
    return committed


def minimum_writes_per_job(workers: int) -> int:
    """The fewest writes that can carry one MPIJob from creation to Succeeded with cleanPodPolicy Running.

    Creates: Service, ConfigMap, Secret, the workers, the launcher Job. One ConfigMap update once the
    workers run (discover_hosts.sh lists them). Three status writes, one per condition the API shows
    (Created, Running, Succeeded), and three Normal events for them. The workers deleted at the end.
    """
    return (4 + workers) + 1 + 3 + 3 + workers
