"""Who wrote what: the API server's audit log, filtered to one user's writes.

apiserver_request_total has no user label, and the scheduler, the controller-manager and kwok write to the
same resources, so per-operator write counts come from the audit log, which names the user of every request.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
LEASES = ("leases",)  # renewed every few seconds whatever the load: not a cost of any job


def audit_policy(user: str) -> dict[str, object]:
    """Metadata for `user`'s writes, once each (at ResponseComplete); nothing for anyone else."""
    return {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived", "ResponseStarted"],
        "rules": [
            {"level": "Metadata", "users": [user], "verbs": list(WRITE_VERBS)},
            {"level": "None"},
        ],
    }


def apiserver_audit_args(workdir: Path, user: str) -> tuple[list[str], Path]:
    """kube-apiserver flags that log `user`'s writes, and the log's path."""
    workdir.mkdir(parents=True, exist_ok=True)
    policy = workdir / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump(audit_policy(user)))
    log = workdir / "audit.log"
    return [f"--audit-policy-file={policy}", f"--audit-log-path={log}", "--audit-log-format=json"], log


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


def minimum_writes_per_job(workers: int) -> int:
    """The fewest writes that can carry one MPIJob from creation to Succeeded with cleanPodPolicy Running.

    Creates: Service, ConfigMap, Secret, the workers, the launcher Job. One ConfigMap update once the
    workers run (discover_hosts.sh lists them). Three status writes, one per condition the API shows
    (Created, Running, Succeeded), and three Normal events for them. The workers deleted at the end.
    """
    return (4 + workers) + 1 + 3 + 3 + workers
