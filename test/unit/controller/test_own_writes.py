"""What the controller remembers of its own writes while its cache has not caught up with them."""

from __future__ import annotations

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.children import RecentlyDeleted
from mpioperator.controller.errors import SyncError
from mpioperator.controller.status_writer import RecentStatusWrites, write_if_changed
from mpioperator.kube import errors


def mpijob(version: str, status: Obj | None = None) -> Obj:
    return {
        "metadata": {"name": "pi", "namespace": "ns", "uid": "u-1", "resourceVersion": version},
        "spec": {},
        "status": status or {},
    }


def test_a_deleted_pod_is_remembered_and_an_unknown_one_is_not() -> None:
    deleted = RecentlyDeleted()
    deleted.add("pod-1")
    assert deleted.seen("pod-1")
    assert not deleted.seen("pod-2")
    assert not deleted.seen("")


def test_recently_deleted_forgets_the_oldest_beyond_its_capacity() -> None:
    deleted = RecentlyDeleted(capacity=2)
    for uid in ("a", "b", "c"):
        deleted.add(uid)
    assert not deleted.seen("a")
    assert deleted.seen("b") and deleted.seen("c")


def test_our_write_stands_in_for_the_cached_version_it_replaced() -> None:
    recent = RecentStatusWrites()
    written = mpijob("11", {"conditions": [{"type": "Created"}]})
    recent.remember(mpijob("10"), written)
    assert recent.freshest(mpijob("10")) is written


def test_a_cache_that_moved_on_wins_and_the_memory_is_dropped() -> None:
    recent = RecentStatusWrites()
    recent.remember(mpijob("10"), mpijob("11"))
    newer = mpijob("12")
    assert recent.freshest(newer) is newer
    # Dropped: even the replaced version is now taken from the cache as it is.
    stale = mpijob("10")
    assert recent.freshest(stale) is stale


def test_another_job_is_not_affected() -> None:
    recent = RecentStatusWrites()
    recent.remember(mpijob("10"), mpijob("11"))
    other = mpijob("10")
    other["metadata"]["uid"] = "u-2"
    assert recent.freshest(other) is other


class RecordingWriter:
    """A writer that answers status PUTs like the API server: the object with a new resourceVersion,
    or a Conflict when the body's resourceVersion is not the current one."""

    def __init__(self, current: str) -> None:
        self.current = current
        self.puts: list[str] = []

    async def update_status(self, res: object, body: Obj, namespace: str | None = None) -> Obj:
        self.puts.append(body["metadata"]["resourceVersion"])
        if body["metadata"]["resourceVersion"] != self.current:
            raise errors.Conflict(409, "Conflict", "the object has been modified")
        self.current = str(int(self.current) + 1)
        answer = dict(body)
        answer["metadata"] = {**body["metadata"], "resourceVersion": self.current}
        return answer


async def test_a_second_status_write_before_the_cache_catches_up_does_not_conflict() -> None:
    writer = RecordingWriter(current="10")
    recent = RecentStatusWrites()
    cached = mpijob("10")
    assert await write_if_changed(writer, cached, {"conditions": [{"type": "Created"}]}, recent)  # type: ignore[arg-type]
    # The cache still shows version 10; the next sync starts from what we wrote instead.
    base = recent.freshest(cached)
    assert await write_if_changed(writer, base, {"conditions": [{"type": "Running"}]}, recent)  # type: ignore[arg-type]
    assert writer.puts == ["10", "11"]


async def test_an_unchanged_status_is_not_written_again_while_the_cache_lags() -> None:
    writer = RecordingWriter(current="10")
    recent = RecentStatusWrites()
    cached = mpijob("10")
    status = {"conditions": [{"type": "Created"}]}
    await write_if_changed(writer, cached, status, recent)  # type: ignore[arg-type]
    assert not await write_if_changed(writer, recent.freshest(cached), status, recent)  # type: ignore[arg-type]
    assert writer.puts == ["10"]


class ServerWithNewer(RecordingWriter):
    """Another client wrote the job after our cache read it: `get` answers the server's newer object."""

    def __init__(self, newer: Obj | None) -> None:
        super().__init__(current=newer["metadata"]["resourceVersion"] if newer else "0")
        self.newer = newer
        self.gets = 0

    async def get(self, res: object, name: str, namespace: str | None = None) -> Obj:
        self.gets += 1
        if self.newer is None:
            raise errors.NotFound(404, "NotFound", f'mpijobs "{name}" not found')
        return self.newer


async def test_a_conflict_writes_nothing_over_the_newer_status_and_the_next_sync_starts_from_it() -> None:
    theirs = {"conditions": [{"type": "QuotaReserved"}]}
    writer = ServerWithNewer(mpijob("12", theirs))
    recent = RecentStatusWrites()
    cached = mpijob("10")

    with pytest.raises(SyncError):
        await write_if_changed(writer, cached, {"conditions": [{"type": "Created"}]}, recent)  # type: ignore[arg-type]

    assert writer.puts == ["10"]
    assert recent.freshest(cached)["status"] == theirs


async def test_a_conflict_over_a_job_deleted_meanwhile_is_nothing_to_write() -> None:
    writer = ServerWithNewer(None)

    written = await write_if_changed(writer, mpijob("10"), {"conditions": [{"type": "Created"}]})  # type: ignore[arg-type]

    assert not written
    assert writer.puts == ["10"] and writer.gets == 1


def test_a_stand_in_stays_while_the_cache_holds_any_version_it_replaced() -> None:
    recent = RecentStatusWrites()
    recent.remember(mpijob("10"), mpijob("11"))
    latest = mpijob("12")
    recent.remember(mpijob("11"), latest)
    # Our two writes in a row, the cache showing neither or only the first of them yet.
    assert recent.freshest(mpijob("10")) is latest
    assert recent.freshest(mpijob("11")) is latest
