"""Which rank failed, read off what mpirun printed last, and which of the job's pods held it.

Each MPI words its report differently (the texts are pinned by test/unit/controller/test_failed_rank.py,
copied from real runs):

* Open MPI 4 (`mpirun`) and Open MPI 5 (PRRTE's `prterun`): a box naming the first process to exit
  non-zero (`Process name: [[jobid,1],3]` or `[prterun-host-1@1,3]`, then `Exit code: 7`), or a line
  `... noticed that process rank 3 with PID 0 on node host exited on signal 9 (Killed).`
* MPICH and Intel MPI (both Hydra): a rank that exits non-zero is not named at all (MPICH 4.3 prints
  nothing; Intel MPI 2021 names a rank it killed while cleaning up, `KILLED BY SIGNAL: 9`), unless
  mpiexec runs with `-print-all-exitcodes`: `[mpiexec@launcher] Exit codes: [host] 0,1792` then one line
  per host, each rank's code in hostfile order (MPICH gives the raw wait status, Intel MPI the exit code).
  A rank killed by a signal is named by the `BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES` box:
  `PID 218 RUNNING AT host` (MPICH) or `RANK 2 PID 39 RUNNING AT host` (Intel MPI), then
  `EXIT CODE: 9` or `KILLED BY SIGNAL: 9 (Killed)`. A box naming SIGKILL while mpirun itself exited
  with another code names a victim of the cleanup, not the failed rank, and is not believed.

The text is the launcher's (untrusted, possibly cut at any byte): every read is bounded, and anything
unexpected gives no answer rather than an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpioperator.api import accessors, names
from mpioperator.api.objects import Obj

# What is read of the text at all: the end, where mpirun writes its report.
MAX_TEXT = 16 * 1024

_OMPI_NAME = re.compile(r"Process name:\s*\[(?:\[\d+,\d+\]|[^\]\s@]{1,253}@\d+),(\d{1,9})\]")
_OMPI_EXIT = re.compile(r"Exit code:\s*(-?\d{1,9})")
_OMPI_NODE = re.compile(r"(?:Process host|Local host|Hostname):\s*(\S{1,253})")
_OMPI_SIGNAL = re.compile(
    r"noticed that process rank (\d{1,9}) with PID \d+ on node (\S{1,253}) exited on signal (\d{1,3})"
    r"(?: \(([^)\n]{1,40})\))?"
)
_OMPI_IMPROPER = re.compile(
    r"has exited due to process rank (\d{1,9}) with PID \d+ on\s+node (\S{1,253}) exiting improperly"
)
_HYDRA_BAD = "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES"
_HYDRA_AT = re.compile(r"=\s+(?:RANK (\d{1,9}) )?PID \d+ RUNNING AT (\S{1,253})")
_HYDRA_EXIT = re.compile(r"=\s+EXIT CODE:\s*(-?\d{1,9})")
_HYDRA_SIGNAL = re.compile(r"=\s+KILLED BY SIGNAL:\s*(\d{1,3})(?: \(([^)\n]{1,40})\))?")
_HYDRA_EXIT_STRING = re.compile(r"EXIT STRING: ([^\n(]{0,40}?) ?\(signal (\d{1,3})\)")
_HYDRA_CODES = re.compile(r"\] Exit codes: ((?:\[[^\]\s]{1,260}\] [0-9,]{1,4000}\n?){1,1000})")
_HYDRA_HOST_CODES = re.compile(r"\[([^\]\s]{1,260})\] ([0-9,]{1,4000})")
SIGKILL = 9
# How a rank killed by mpirun's cleanup ends: SIGKILL, as a wait status or as a shell's exit code.
_KILLED = (SIGKILL, 128 + SIGKILL)


@dataclass(frozen=True, slots=True)
class RankFailure:
    """What mpirun said of the first process that failed; any part it did not say is None."""

    rank: int | None
    host: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    signal_name: str | None = None

    def ending(self) -> str:
        if self.signal is not None:
            name = f" ({self.signal_name})" if self.signal_name else ""
            return f"signal {self.signal}{name}"
        if self.exit_code is not None:
            return f"exit code {self.exit_code}"
        return "an unknown ending"


def parse(text: str, exit_code: int | None = None) -> RankFailure | None:
    """The failed rank that mpirun reported at the end of `text`, None if it reported none; `exit_code`:
    how mpirun itself ended, when known."""
    text = text[-MAX_TEXT:]
    return _hydra_codes(text) or _hydra(text, exit_code) or _open_mpi(text)


def _ending_of(status: int) -> tuple[int | None, int | None]:
    """(exit code, signal) of a value in Hydra's table: a raw wait status above 255 (MPICH), else an
    exit code (Intel MPI)."""
    if status > 255:
        return (None, status & 0x7F) if status & 0x7F else (status >> 8, None)
    return status, None


def _hydra_codes(text: str) -> RankFailure | None:
    table = _last(_HYDRA_CODES, text)
    if table is None:
        return None
    rank = 0
    failed: list[RankFailure] = []
    for host, codes in _HYDRA_HOST_CODES.findall(table.group(1)):
        for value in codes.split(","):
            if not value:
                continue
            code, signal = _ending_of(int(value))
            if code or signal:
                failed.append(RankFailure(rank, _short(host), exit_code=code, signal=signal))
            rank += 1
    if not failed:
        return None
    # The ranks mpirun killed once the first one failed end by SIGKILL: name one that did not, if any.
    return next((f for f in failed if f.signal not in _KILLED and f.exit_code not in _KILLED), failed[0])


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    found = list(pattern.finditer(text))  # the text is bounded (MAX_TEXT)
    return found[-1] if found else None


def _open_mpi(text: str) -> RankFailure | None:
    signalled = _last(_OMPI_SIGNAL, text)
    if signalled is not None:
        rank, host, number, name = signalled.groups()
        return RankFailure(int(rank), _short(host), signal=int(number), signal_name=name)
    named = _last(_OMPI_NAME, text)
    if named is not None:
        after = text[named.end() : named.end() + 512]
        code = _OMPI_EXIT.search(after)
        node = _OMPI_NODE.search(text[max(0, named.start() - 512) : named.end() + 512])
        return RankFailure(
            int(named.group(1)),
            _short(node.group(1)) if node else None,
            exit_code=int(code.group(1)) if code else None,
        )
    improper = _last(_OMPI_IMPROPER, text)
    if improper is not None:
        return RankFailure(int(improper.group(1)), _short(improper.group(2)))
    return None


def _hydra(text: str, exit_code: int | None) -> RankFailure | None:
    start = text.find(_HYDRA_BAD)
    if start < 0:
        return None
    box = text[start : start + 1024]
    at = _HYDRA_AT.search(box)
    code = _HYDRA_EXIT.search(box)
    signalled = _HYDRA_SIGNAL.search(box) or _HYDRA_EXIT_STRING.search(text[start : start + 2048])
    rank = int(at.group(1)) if at and at.group(1) is not None else None
    host = _short(at.group(2)) if at else None
    if rank is None and host is None:
        return None
    if signalled is not None:
        signal = int(signalled.group(2) if signalled.re is _HYDRA_EXIT_STRING else signalled.group(1))
        name = signalled.group(1) if signalled.re is _HYDRA_EXIT_STRING else signalled.group(2)
        if signal == SIGKILL and exit_code is not None and exit_code not in _KILLED:
            return None
        return RankFailure(rank, host, signal=signal, signal_name=name or None)
    return RankFailure(rank, host, exit_code=int(code.group(1)) if code else None)


def _short(host: str) -> str:
    """A host as the hostfile's first DNS label names it: the pod's hostname."""
    return host.split(".", 1)[0].split(":", 1)[0]


def hosts(job: Obj) -> list[str]:
    """The pods' hostnames in hostfile order: the launcher first when it runs as a worker."""
    workers = accessors.worker_replicas(job) if accessors.replica_spec(job, "Worker") else 0
    order = [names.launcher_name(job)] if accessors.run_launcher_as_worker(job) else []
    return order + [names.worker_name(job, i) for i in range(workers)]


def pod_of(job: Obj, failure: RankFailure) -> str | None:
    """The name of the pod that ran the failed rank: the host mpirun named when it is one of the job's,
    else the hostfile's host of that rank (each host holds slotsPerWorker ranks, in order)."""
    order = hosts(job)
    if failure.host is not None and failure.host in order:
        return failure.host
    if failure.rank is None:
        return None
    slots = max(1, accessors.slots_per_worker(job))
    index = failure.rank // slots
    return order[index] if 0 <= index < len(order) else None
