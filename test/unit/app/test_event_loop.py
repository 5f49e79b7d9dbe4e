"""The operator's event loop: uvloop's where it is installed, asyncio's own without it."""

from __future__ import annotations

import asyncio
import sys

import pytest

from mpioperator.app import event_loop


async def _running_loop_name() -> str:
    await asyncio.sleep(0)
    return event_loop.loop_name(asyncio.get_running_loop())


def test_the_operator_runs_on_uvloop_where_it_is_installed() -> None:
    assert event_loop.run(_running_loop_name()) == "uvloop"


def test_without_uvloop_the_operator_runs_on_asyncios_own_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # what an install without it (Windows) imports
    assert event_loop.loop_factory() is None
    assert event_loop.run(_running_loop_name()) == "asyncio"


def test_a_coroutines_result_and_its_exception_come_back_as_from_asyncio_run() -> None:
    async def fails() -> None:
        raise LookupError("from the loop")

    async def answers() -> int:
        return 42

    assert event_loop.run(answers()) == 42
    with pytest.raises(LookupError, match="from the loop"):
        event_loop.run(fails())
