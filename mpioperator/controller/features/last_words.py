"""The failed rank named, and the last words kept (docs/extensions.md, `status.lastWords`).

When the launcher ends badly, its termination message (the kubelet's tail of its log: the launcher
container's terminationMessagePolicy is FallbackToLogsOnError) says which rank failed and how
(failed_rank.py). That rank's pod is found from the hostfile's order, its node read once from the API
server, and the last lines of its own log read while it still exists: this happens in `follow`, which
runs before the status step of the same sync, so before the job is Failed and before any cleanup
(cleanPodPolicy Running or All) deletes the pods. The Failed condition and its event then begin with the
rank, its pod, its node and its exit code or signal, and `status.lastWords` keeps the bounded lines of both
logs on the MPIJob for good.

A failure is read once per launcher Job; what is kept in memory is bounded, and once written the status
itself keeps it (a finished job's status is never recomputed).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import structlog

from mpioperator.api import accessors, names
from mpioperator.api import constants as api
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj
from mpioperator.controller import conditions, failed_rank
from mpioperator.controller.feature import Feature, FeaturePorts, Seen
from mpioperator.controller.problems import last_bad_end, readable
from mpioperator.kube import errors
from mpioperator.kube.log_options import LogOptions
from mpioperator.kube.resources import PODS

log = structlog.get_logger(__name__)

STATUS_FIELD = "lastWords"
MAX_LINES = 20
MAX_LINE_BYTES = 2048
# Jobs whose failure is remembered in memory until their status has it.
CAPACITY = 2_000


def bounded_lines(text: str, lines: int = MAX_LINES, line_bytes: int = MAX_LINE_BYTES) -> list[str]:
    """The last `lines` non-empty lines of `text`, readable, each cut to its last `line_bytes` bytes."""
    tail = readable(text[-lines * (line_bytes + 1) :])
    kept = [line for line in tail.splitlines() if line.strip()][-lines:]
    return [line.encode()[-line_bytes:].decode(errors="ignore") for line in kept]


def clause(words: Obj) -> str:
    """`rank 3 on pod x-worker-1 (node n) ended with exit code 7`: the start of the Failed message."""
    if words.get("rank") is None and not words.get("pod"):
        return ""
    who = f"rank {words['rank']}" if words.get("rank") is not None else "a rank"
    where = f" on pod {words['pod']}" if words.get("pod") else ""
    node = f" (node {words['node']})" if words.get("node") else ""
    if words.get("signal") is not None:
        ending = f"signal {words['signal']}" + (
            f" ({words['signalName']})" if words.get("signalName") else ""
        )
    elif words.get("exitCode") is not None:
        ending = f"exit code {words['exitCode']}"
    else:
        ending = "an unknown ending"
    return f"{who}{where}{node} ended with {ending}"


class LastWordsFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        self._p = ports
        # job uid -> (launcher Job uid, what is kept)
        self._kept: OrderedDict[str, tuple[str, Obj]] = OrderedDict()

    def _launcher(self, job: Obj) -> Obj | None:
        return self._p.listers.jobs.get(accessors.namespace(job), names.launcher_name(job))

    async def follow(self, job: Obj, ext: Extensions, workers: list[Obj]) -> None:
        uid = job["metadata"].get("uid", "")
        if (job.get("status") or {}).get(STATUS_FIELD):
            self._kept.pop(uid, None)  # the status has it now
            return
        launcher = self._launcher(job)
        if launcher is None:
            return
        launcher_uid = launcher["metadata"].get("uid", "")
        if uid in self._kept and self._kept[uid][0] == launcher_uid:
            return
        ended = [p for p in self._p.listers.pods.owned_by(launcher_uid) if last_bad_end(p) is not None]
        if not ended:
            return
        pod = max(ended, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "")
        ended_with = last_bad_end(pod) or {}
        message = str(ended_with.get("message") or "")
        code = ended_with.get("exitCode")
        words = await self._read(job, pod, message, code if isinstance(code, int) else None)
        self._kept[uid] = (launcher_uid, words)
        self._kept.move_to_end(uid)
        while len(self._kept) > CAPACITY:
            self._kept.popitem(last=False)

    async def _read(self, job: Obj, launcher_pod: Obj, message: str, exit_code: int | None) -> Obj:
        words: Obj = {
            "launcher": {"pod": launcher_pod["metadata"].get("name", ""), "lines": bounded_lines(message)}
        }
        failure = failed_rank.parse(message, exit_code)
        if failure is None:
            return words
        if failure.rank is not None:
            words["rank"] = failure.rank
        if failure.signal is not None:
            words["signal"] = failure.signal
            if failure.signal_name:
                words["signalName"] = failure.signal_name
        elif failure.exit_code is not None:
            words["exitCode"] = failure.exit_code
        host = failed_rank.pod_of(job, failure)
        if host is None:
            return words
        if host == names.launcher_name(job):
            # The launcher ran the rank (runLauncherAsWorker): its log is the launcher's, kept above.
            words["pod"] = launcher_pod["metadata"].get("name", "")
            node = (launcher_pod.get("spec") or {}).get("nodeName")
            if node:
                words["node"] = node
            return words
        words["pod"] = host
        pod = await self._get_pod(job, host)
        if pod is not None:
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                words["node"] = node
        lines = await self._log_lines(job, host)
        if lines is not None:
            words["worker"] = {"pod": host, "lines": lines}
        return words

    async def _get_pod(self, job: Obj, name: str) -> Obj | None:
        try:
            return await self._p.writer.get(PODS, name, accessors.namespace(job))
        except errors.ApiError as exc:
            log.info("cannot read the failed rank's pod", pod=name, error=str(exc))
            return None

    async def _log_lines(self, job: Obj, name: str) -> list[str] | None:
        if self._p.logs is None:
            return None
        try:
            options = LogOptions(tail_lines=MAX_LINES, limit_bytes=MAX_LINES * (MAX_LINE_BYTES + 1))
            text = await self._p.logs.pod_log(name, accessors.namespace(job), options)
        except errors.ApiError as exc:
            log.info("cannot read the failed rank's log", pod=name, error=str(exc))
            return None
        return bounded_lines(text)

    def _current(self, job: Obj) -> Obj | None:
        kept = self._kept.get(job["metadata"].get("uid", ""))
        launcher = self._launcher(job)
        if kept is None or launcher is None or kept[0] != launcher["metadata"].get("uid", ""):
            return None
        return kept[1]

    def failure_detail(self, job: Obj, ext: Extensions, detail: str) -> str:
        words = self._current(job)
        said = clause(words) if words is not None else ""
        return "; ".join(part for part in (said, detail) if part)

    def describe(self, job: Obj, ext: Extensions, status: Obj, seen: Seen) -> None:
        words = self._current(job)
        if words is not None and conditions.is_true(status, api.COND_FAILED) and not status.get(STATUS_FIELD):
            status[STATUS_FIELD] = _copy(words)


def _copy(words: Obj) -> dict[str, Any]:
    return {k: (dict(v) if isinstance(v, dict) else v) for k, v in words.items()}
