"""Waits on an MPIJob's status that return what they waited for, typed."""

from __future__ import annotations

from typing import Any

from test.integration.controller.actors import TIMEOUT, Actors

Obj = dict[str, Any]


async def condition_appears(a: Actors, job: str, cond_type: str, what: str, timeout: float = TIMEOUT) -> Obj:
    """The job's `cond_type` condition once it exists (any status)."""
    found = await a.until(lambda: a.condition(job, cond_type), what, timeout)
    assert found is not None
    return found
