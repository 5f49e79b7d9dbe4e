"""A test that leaves asyncio tasks pending fails at teardown, with the tasks named.

Async tests and fixtures share one session event loop (setup.cfg), as the operator's one loop owns all of
its state. The price of sharing is that a task a test forgets keeps running during later tests, where it
fails or writes in someone else's name. Per-test loops would not remove the forgotten task, only cancel it
silently when the loop closes; this check names it instead, then cancels it so that later tests start clean.

Fixtures wider than a test (module or session scope, e.g. a controller shared by a module's tests) may own
tasks that outlive a test. While such a fixture is set up a context variable names it; every task created
under it inherits the variable, including the tasks those tasks create later, and the loop's task factory
records it. A task is leaked when it is pending after a test's teardown, was not pending before its setup
and no wider fixture owns it.
"""

from __future__ import annotations

import asyncio
import sys
import weakref
from collections.abc import AsyncIterator, Coroutine, Generator, Iterator
from contextvars import Context, ContextVar
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

# Left for the task to wind down after it is cancelled, before the next test starts anyway.
CANCEL_GRACE_SECONDS = 5.0

_owner: ContextVar[str | None] = ContextVar("leaked_tasks_owner", default=None)


@dataclass(frozen=True)
class _Origin:
    owner: str | None
    created_at: str


_origins: weakref.WeakKeyDictionary[asyncio.Task[Any], _Origin] = weakref.WeakKeyDictionary()
_session_loop = pytest.StashKey[asyncio.AbstractEventLoop]()


def _creation_site() -> str:
    """The innermost frame outside asyncio that created the task (cheaper than a whole stack)."""
    frame = sys._getframe(2)
    while frame.f_back is not None and "asyncio" in frame.f_code.co_filename:
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


def _task_factory(
    loop: asyncio.AbstractEventLoop,
    coro: Coroutine[Any, Any, Any],
    *,
    context: Context | None = None,
) -> asyncio.Task[Any]:
    task = asyncio.Task(coro, loop=loop, context=context)
    owner = context.get(_owner) if context is not None else _owner.get()
    _origins[task] = _Origin(owner, _creation_site())
    return task


@pytest_asyncio.fixture(scope="session", loop_scope="session", autouse=True)
async def _record_task_origins(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    loop = asyncio.get_running_loop()
    loop.set_task_factory(_task_factory)  # type: ignore[arg-type]
    request.config.stash[_session_loop] = loop
    yield
    del request.config.stash[_session_loop]


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Generator[None, object, object]:
    if fixturedef.scope == "function":
        return (yield)
    token = _owner.set(f"{fixturedef.scope}-scoped fixture {fixturedef.argname}")
    try:
        return (yield)
    finally:
        _owner.reset(token)


def _pending(config: pytest.Config) -> set[asyncio.Task[Any]]:
    loop = config.stash.get(_session_loop, None)
    if loop is None or loop.is_closed():
        return set()
    return {task for task in asyncio.all_tasks(loop) if not task.done()}


def _describe(task: asyncio.Task[Any]) -> str:
    origin = _origins.get(task)
    created = origin.created_at if origin is not None else "an unknown place"
    return f"{task.get_name()} running {task.get_coro()!r}, created at {created}"


def _cancel(loop: asyncio.AbstractEventLoop, tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    if not loop.is_running():
        loop.run_until_complete(asyncio.wait(tasks, timeout=CANCEL_GRACE_SECONDS))


# A function-scoped autouse fixture of the root conftest is set up before every other function-scoped
# fixture and torn down after them, but before any wider fixture: its teardown sees exactly what the test
# and its own fixtures left behind (a hook around the whole teardown would come after the session loop's
# Runner has silently cancelled what the session's last test left).
@pytest.fixture(autouse=True)
def _no_leaked_tasks(request: pytest.FixtureRequest) -> Iterator[None]:
    before = _pending(request.config)
    yield
    leaked = [
        task
        for task in _pending(request.config)
        if task not in before and (origin := _origins.get(task)) is not None and origin.owner is None
    ]
    if leaked:
        _cancel(request.config.stash[_session_loop], leaked)
        lines = "\n  ".join(sorted(_describe(task) for task in leaked))
        pytest.fail(
            f"{len(leaked)} asyncio task(s) still pending after the test and its fixtures ended "
            f"(cancelled now):\n  {lines}",
            pytrace=False,
        )
