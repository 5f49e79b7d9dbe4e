"""A launcher's log in memory, served as pods/log serves it (sinceTime, tailLines, limitBytes and the
kubelet's RFC 3339 timestamps), for the launcher log feature's tests."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from mpioperator.clock import FakeClock
from mpioperator.kube import errors
from mpioperator.kube.log_options import WHOLE_LOG, LogOptions
from test.unit.controller.sync_fixtures import Scene


def kubelet_stamp(when: dt.datetime) -> str:
    """RFC 3339 with nanoseconds, trailing zeros dropped, as the kubelet stamps each log line."""
    fraction = f"{when.microsecond * 1000:09d}".rstrip("0")
    return when.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


class MemoryLogs:
    def __init__(self) -> None:
        self.clock = FakeClock()  # the test sets the Scene's
        self.lines: list[tuple[dt.datetime, str]] = []
        self.calls: list[dict[str, Any]] = []
        self.failing = False

    def write(self, *lines: str) -> None:
        """The launcher prints these lines now."""
        self.lines += [(self.clock.utcnow(), line) for line in lines]

    async def pod_log(self, name: str, namespace: str, options: LogOptions = WHOLE_LOG) -> str:
        container, tail_lines, since_time = options.container, options.tail_lines, options.since_time
        limit_bytes, timestamps = options.limit_bytes, options.timestamps
        self.calls.append(
            {"name": name, "container": container, "since_time": since_time, "tail_lines": tail_lines}
            | {"limit_bytes": limit_bytes, "timestamps": timestamps}
        )
        if self.failing:
            raise errors.ApiError(500, "InternalError", "the kubelet cannot be reached")
        since = dt.datetime.fromisoformat(since_time.replace("Z", "+00:00")) if since_time else None
        chosen = [(at, line) for at, line in self.lines if since is None or at >= since]
        if tail_lines is not None:
            chosen = chosen[-tail_lines:]
        text = "".join(f"{kubelet_stamp(at)} {line}\n" if timestamps else f"{line}\n" for at, line in chosen)
        return text.encode(errors="replace")[:limit_bytes].decode(errors="replace") if limit_bytes else text


async def sync_keeping_status(scene: Scene) -> float | None:
    """One sync, after which the cache holds the status it wrote (as the informer would soon show it);
    the sync's requeue_after."""
    before = len(scene.writer.log)
    result = await scene.sync()
    writes = [c for c in scene.writer.log[before:] if (c.verb, c.resource) == ("update_status", "mpijobs")]
    if writes and writes[-1].body is not None:
        scene.job["status"] = copy.deepcopy(writes[-1].body["status"])
        version = int(scene.job["metadata"].get("resourceVersion") or 5)
        scene.job["metadata"]["resourceVersion"] = str(version + 1)
    return result.requeue_after
