"""The one reader of running launchers' logs (decisions-local L49): what the progress and stall features
know of each opted-in job's output.

Reads are bounded three ways, so a thousand running jobs cannot flood the API server or hold a sync:
- per job: at most one read every `interval` seconds (the sync comes back for the next one);
- overall: a token bucket of `qps` reads a second (burst `burst`), taken without waiting: a read the
  bucket refuses is skipped until the job's next turn, never queued;
- per read: only what was written since the last line already seen (`sinceTime` and the kubelet's line
  timestamps), at most TAIL_LINES lines and LIMIT_BYTES bytes, within READ_TIMEOUT seconds.

What is known of a job is held in memory (a new leader starts its clock afresh, so a stall can only
come later, never sooner) and kept for at most MAX_JOBS jobs.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections import OrderedDict
from dataclasses import dataclass

import structlog

from mpioperator.api.objects import Obj
from mpioperator.clock import Clock
from mpioperator.controller.ports import PodLogs
from mpioperator.controller.progress import Progress, latest
from mpioperator.kube import errors
from mpioperator.kube.log_options import LogOptions
from mpioperator.tokenbucket import TokenBucket

log = structlog.get_logger(__name__)

TAIL_LINES = 200
LIMIT_BYTES = 64 * 1024
READ_TIMEOUT = 5.0
MAX_JOBS = 20_000
DEFAULT_INTERVAL = 30.0
DEFAULT_QPS = 10.0
DEFAULT_BURST = 20

_STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z")


@dataclass(frozen=True, slots=True)
class FollowSettings:
    interval: float = DEFAULT_INTERVAL
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST


@dataclass(slots=True)
class Followed:
    """What is known of one job's current launcher pod."""

    pod_uid: str
    # Wall-clock times: when the pod was first seen running, last read, last gave new output or progress.
    seen: dt.datetime
    # The last turn taken (a read sent, refused or failed) and the last read that was answered.
    last_turn: dt.datetime | None = None
    last_read: dt.datetime | None = None
    last_output: dt.datetime | None = None
    last_stamp: tuple[dt.datetime, int] | None = None
    last_stamp_count: int = 0
    progress: Progress | None = None
    progress_at: dt.datetime | None = None

    def active_since(self, with_progress: bool) -> dt.datetime:
        """Since when the job has shown no sign of life: new progress when it reports progress, else new
        output; the pod's first sighting before either."""
        last = self.progress_at if with_progress else self.last_output
        return last or self.seen


def stamp_of(line: str) -> tuple[tuple[dt.datetime, int] | None, str]:
    """The kubelet's timestamp at the start of `line` (timestamps=true) and the rest of the line."""
    head, _, rest = line.partition(" ")
    found = _STAMP.fullmatch(head)
    if found is None:
        return None, line
    try:
        second = dt.datetime.fromisoformat(found.group(1)).replace(tzinfo=dt.UTC)
    except ValueError:
        return None, line
    return (second, int((found.group(2) or "0").ljust(9, "0"))), rest


class LogFollower:
    def __init__(self, logs: PodLogs, clock: Clock, settings: FollowSettings | None = None) -> None:
        self._logs = logs
        self.settings = settings or FollowSettings()
        self._budget = TokenBucket(self.settings.qps, self.settings.burst, clock)
        self._jobs: OrderedDict[str, Followed] = OrderedDict()
        # Counts for the benchmark and the tests: reads sent, refused by the budget, failed.
        self.reads = 0
        self.refused = 0
        self.failures = 0

    def known(self, uid: str) -> Followed | None:
        return self._jobs.get(uid)

    def forget(self, uid: str) -> None:
        self._jobs.pop(uid, None)

    def _state(self, uid: str, pod_uid: str, now: dt.datetime) -> Followed:
        state = self._jobs.get(uid)
        if state is None or state.pod_uid != pod_uid:
            state = self._jobs[uid] = Followed(pod_uid, now)  # a new attempt's launcher starts afresh
        self._jobs.move_to_end(uid)
        while len(self._jobs) > MAX_JOBS:
            self._jobs.popitem(last=False)
        return state

    def due_in(self, uid: str, now: dt.datetime) -> float:
        """Seconds until the job's next read is due (at least one)."""
        state = self._jobs.get(uid)
        if state is None or state.last_turn is None:
            return self.settings.interval
        return max(1.0, self.settings.interval - (now - state.last_turn).total_seconds())

    async def read(
        self,
        uid: str,
        pod: Obj,
        container: str | None,
        progress: str | re.Pattern[str] | None,
        now: dt.datetime,
    ) -> Followed:
        """Read what the launcher pod wrote since the last read, if the job's turn has come and the budget
        allows; what is known of the job either way."""
        state = self._state(uid, pod["metadata"].get("uid", ""), now)
        if state.last_turn is not None and (now - state.last_turn).total_seconds() < self.settings.interval:
            return state
        state.last_turn = now  # a refused or failed read waits for the job's next turn too
        if not self._budget.try_take():
            self.refused += 1
            return state
        meta = pod["metadata"]
        since = state.last_stamp[0].strftime("%Y-%m-%dT%H:%M:%SZ") if state.last_stamp else None
        self.reads += 1
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                options = LogOptions(
                    container=container,
                    tail_lines=TAIL_LINES,
                    since_time=since,
                    limit_bytes=LIMIT_BYTES,
                    timestamps=True,
                )
                text = await self._logs.pod_log(meta["name"], meta.get("namespace", ""), options)
        except (errors.ApiError, TimeoutError) as exc:
            # Not a sign of life nor of its absence: the job is judged by its next read.
            self.failures += 1
            log.debug(
                "reading a launcher's log failed",
                pod=f"{meta.get('namespace')}/{meta['name']}",
                error=str(exc),
            )
            return state
        state.last_read = now
        lines = self._new_lines(state, text)
        if lines:
            state.last_output = now
        if (
            progress is not None
            and (found := latest(progress, lines)) is not None
            and found != state.progress
        ):
            state.progress, state.progress_at = found, now
        return state

    @staticmethod
    def _new_lines(state: Followed, text: str) -> list[str]:
        """The lines after those already seen; a last line cut by limitBytes is left for the next read.
        Lines may share a timestamp, so how many of the last one's were seen is kept too."""
        lines = text.split("\n")
        if len(text.encode("utf-8", "replace")) >= LIMIT_BYTES and len(lines) > 1:
            lines = lines[:-1]
        seen, seen_count = state.last_stamp, state.last_stamp_count
        new: list[str] = []
        for line in lines:
            if not line:
                continue
            stamp, rest = stamp_of(line)
            if stamp is not None and seen is not None:
                if stamp < seen:
                    continue
                if stamp == seen and seen_count > 0:
                    seen_count -= 1
                    continue
            if stamp is not None:
                if stamp == state.last_stamp:
                    state.last_stamp_count += 1
                else:
                    state.last_stamp, state.last_stamp_count = stamp, 1
            new.append(rest)
        return new
