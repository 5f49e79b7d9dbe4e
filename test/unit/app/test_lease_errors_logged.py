"""The operator's elector says why a renewal failed: main passes a logger as its on_error."""

from __future__ import annotations

import asyncio

import pytest
import structlog

from mpioperator.app.main import _lease_error
from mpioperator.clock import FakeClock, settle
from mpioperator.leaderelection.elector import LeaderElector, LeadershipLost
from test.unit.leaderelection.test_elector import NAME, NS, RETRY, MemoryLeases, forever


async def test_a_failed_renewal_reaches_the_log_before_leadership_is_lost() -> None:
    clock, leases = FakeClock(), MemoryLeases()
    elector = LeaderElector(
        leases, name=NAME, namespace=NS, identity="me", clock=clock, retry_period=RETRY, on_error=_lease_error
    )
    task = asyncio.ensure_future(elector.run(forever))
    await settle()
    leases.fail_writes = True
    with structlog.testing.capture_logs() as logs:
        await clock.advance(RETRY)
        await clock.advance(RETRY)
        with pytest.raises(LeadershipLost):
            await task

    said = [(e["log_level"], e["event"], e["error"]) for e in logs]
    assert said and set(said) == {
        ("warning", "lease attempt failed", "ConnectionError: apiserver unreachable")
    }
