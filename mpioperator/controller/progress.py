"""Progress read off launcher log lines (mpioperator.io/progress; docs/extensions.md): pure functions.

The lines are a program's output, so nothing in them is trusted: a line is cut to MAX_LINE characters
before it is parsed, numbers must be finite and not negative, and only MAX_METRICS metrics are kept, each
name and value cut to MAX_METRIC_TEXT characters. A line that does not parse is not progress.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field

import orjson

from mpioperator.api.objects import Obj
from mpioperator.controller.conditions import format_time

MAX_LINE = 4096
MAX_METRICS = 8
MAX_METRIC_TEXT = 63


@dataclass(frozen=True, slots=True)
class Progress:
    done: float
    total: float | None = None
    metrics: dict[str, str] = field(default_factory=dict)

    def percent(self) -> int | None:
        if self.total is None or self.total <= 0:
            return None
        return max(0, min(100, math.floor(100 * self.done / self.total)))

    def text(self) -> str:
        """What `kubectl get mpijobs -o wide` shows in its PROGRESS column."""
        done = _number(self.done)
        if self.total is None:
            return done
        percent = self.percent()
        shown = f"{done}/{_number(self.total)}"
        return f"{shown} ({percent}%)" if percent is not None else shown

    def status(self, updated: dt.datetime) -> Obj:
        """`status.progress` as the CRD has it."""
        out: Obj = {"done": self.done, "text": self.text(), "lastUpdateTime": format_time(updated)}
        if self.total is not None:
            out["total"] = self.total
        if (percent := self.percent()) is not None:
            out["percent"] = percent
        if self.metrics:
            out["metrics"] = dict(self.metrics)
        return out


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _count(value: object) -> float | None:
    """A finite, non-negative number (JSON's or text's); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float):
        return None
    number = float(value)
    if not math.isfinite(number) or number < 0:
        return None
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _metrics(pairs: object) -> dict[str, str]:
    if not isinstance(pairs, dict):
        return {}
    kept: dict[str, str] = {}
    for name, value in pairs.items():
        if len(kept) == MAX_METRICS:
            break
        if not isinstance(name, str) or not name or isinstance(value, dict | list) or value is None:
            continue
        text = (
            _number(value) if isinstance(value, int | float) and not isinstance(value, bool) else str(value)
        )
        kept[name[:MAX_METRIC_TEXT]] = text[:MAX_METRIC_TEXT]
    return kept


def parse_json(line: str) -> Progress | None:
    """`{"step": .., "total": .., "metrics": {..}}` (total and metrics optional)."""
    text = line[:MAX_LINE].strip()
    if not text.startswith("{"):
        return None
    try:
        found = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(found, dict) or (done := _count(found.get("step"))) is None:
        return None
    total = _count(found.get("total")) if "total" in found else None
    return Progress(done, total, _metrics(found.get("metrics")))


def parse_pattern(pattern: re.Pattern[str], line: str) -> Progress | None:
    """The line's first match of `pattern`: its group `done`, `total` if it has one, the rest metrics."""
    found = pattern.search(line[:MAX_LINE])
    if found is None:
        return None
    groups = found.groupdict()
    done = _count(groups.pop("done", None))
    if done is None:
        return None
    total_text = groups.pop("total", None)
    total = None if total_text is None else _count(total_text)
    return Progress(done, total, _metrics({k: v for k, v in groups.items() if v is not None}))


def latest(how: str | re.Pattern[str], lines: list[str]) -> Progress | None:
    """The progress of the last line that reports it; `how` is `json` or the line pattern."""
    for line in reversed(lines):
        found = parse_json(line) if isinstance(how, str) else parse_pattern(how, line)
        if found is not None:
            return found
    return None
