"""The local registry is CNCF distribution itself: it starts on loopback, answers for names it lacks, and stops.
What buildah pushes to it is read back in test_images_on_this_machine.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mpioperator.testing.images.ensure import registry_config_digest
from mpioperator.testing.process import pid_alive
from mpioperator.testing.registry import LocalRegistry


@pytest.fixture(scope="module")
def local_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRegistry]:
    root = tmp_path_factory.mktemp("registry")
    registry = LocalRegistry(root / "storage", work_dir=root / "work")
    registry.start()
    yield registry
    registry.stop()


def test_a_name_that_was_never_pushed_is_unknown(local_registry: LocalRegistry) -> None:
    assert registry_config_digest(local_registry.address, "mpioperator/does-not-exist:latest") is None


def test_stop_ends_the_registry_process(tmp_path: Path) -> None:
    registry = LocalRegistry(tmp_path / "storage")
    registry.start()
    pid = registry.pid
    assert pid is not None
    assert registry.address.startswith("127.0.0.1:")
    registry.stop()
    assert not pid_alive(pid)
