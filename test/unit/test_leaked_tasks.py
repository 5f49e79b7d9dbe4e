"""A test that leaves an asyncio task pending fails at teardown with the task named, and the task is
cancelled before the next test; tasks owned by a wider fixture, and the tasks those spawn, are allowed."""

from __future__ import annotations

import pytest

INI = """[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = session
asyncio_default_test_loop_scope = session
"""

TESTS = """
import asyncio

import pytest


@pytest.fixture(scope="module")
async def shared_worker():
    spawn = asyncio.Event()
    children = []

    async def work():
        await spawn.wait()
        children.append(asyncio.create_task(asyncio.sleep(3600), name="module-worker-child"))
        await asyncio.sleep(3600)

    worker = asyncio.create_task(work(), name="module-worker")
    yield spawn
    worker.cancel()
    for child in children:
        child.cancel()


async def test_forgets_a_task():
    asyncio.create_task(asyncio.sleep(3600), name="forgotten-sleeper")


async def test_next_finds_the_forgotten_task_gone():
    names = {task.get_name() for task in asyncio.all_tasks() if not task.done()}
    assert "forgotten-sleeper" not in names


async def test_awaits_its_task():
    await asyncio.create_task(asyncio.sleep(0), name="awaited")


async def test_makes_a_module_fixture_spawn_a_task(shared_worker):
    shared_worker.set()
    await asyncio.sleep(0.05)
    names = {task.get_name() for task in asyncio.all_tasks() if not task.done()}
    assert "module-worker-child" in names
"""


def test_a_forgotten_task_fails_its_test_and_nothing_else(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makeconftest('pytest_plugins = ["test.leaked_tasks"]\n')
    pytester.makepyfile(test_tasks=TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_forgets_a_task*",
            "1 asyncio task(s) still pending after the test and its fixtures ended (cancelled now):",
            "  forgotten-sleeper running <coroutine object sleep *>, created at *test_tasks.py:* in test_forgets_a_task",
        ]
    )
    assert "module-worker" not in result.stdout.str()
