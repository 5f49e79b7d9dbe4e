"""structlog set-up: JSON lines in a cluster, readable console output on a terminal.

Context variables (e.g. the MPIJob key bound by a worker for the length of a sync) are merged into every line.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog


def _level(verbosity: int) -> int:
    # klog's -v: 0-3 are informational, 4+ is per-object debug.
    return logging.DEBUG if verbosity >= 4 else logging.INFO


def configure(*, log_format: str = "auto", verbosity: int = 0, stream: TextIO | None = None) -> None:
    out = stream or sys.stderr
    use_json = log_format == "json" or (log_format == "auto" and not out.isatty())
    renderer: Any = structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_level(verbosity)),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
