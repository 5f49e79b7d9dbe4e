"""A node's sweep walks its cgroup tree while the kernel removes the cgroups of containers whose shims exit:
a directory listed by its parent can be gone before the walk looks inside it. The walk goes on with what
is left instead of failing the sweep (and the next cluster's start with it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from mpioperator.testing.node import host

NODE = "mpioperator-test1"


def pod_tree(mount: Path) -> tuple[Path, Path]:
    """The node's root with two containers of one pod, each with its processes."""
    pod = mount / NODE / "kubepods" / "besteffort" / "pod1"
    kept, vanishing = pod / "container-kept", pod / "container-exiting"
    for directory in (kept, vanishing):
        directory.mkdir(parents=True)
    (kept / "cgroup.procs").write_text("101\n102\n")
    (vanishing / "cgroup.procs").write_text("201\n")
    return kept, vanishing


def vanish_before_listing(monkeypatch: pytest.MonkeyPatch, doomed: Path) -> None:
    """The kernel removes `doomed` after its parent was listed and before anyone scans it."""
    real_scandir = os.scandir

    def scandir(path: object) -> Iterator[os.DirEntry[str]]:
        if Path(str(path)) == doomed and doomed.exists():
            (doomed / "cgroup.procs").unlink()
            doomed.rmdir()
        return real_scandir(path)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(os, "scandir", scandir)


def test_the_sweep_removes_the_nodes_cgroups_when_a_container_cgroup_vanishes_during_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(host, "cgroup_mounts", lambda: [tmp_path])
    kept, vanishing = pod_tree(tmp_path)
    (kept / "cgroup.procs").unlink()  # a real cgroup's files go with its directory; rmdir needs it empty here
    vanish_before_listing(monkeypatch, vanishing)

    host.remove_cgroup_root(NODE)

    assert not (tmp_path / NODE).exists()
    assert list(tmp_path.iterdir()) == []


def test_the_nodes_processes_are_found_when_a_container_cgroup_vanishes_during_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(host, "cgroup_mounts", lambda: [tmp_path])
    _kept, vanishing = pod_tree(tmp_path)
    vanish_before_listing(monkeypatch, vanishing)

    assert host.cgroup_pids(NODE) == {101, 102}


def test_the_nodes_processes_are_found_at_every_depth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(host, "cgroup_mounts", lambda: [tmp_path])
    pod_tree(tmp_path)
    (tmp_path / NODE / "cgroup.procs").write_text("7\n")

    assert host.cgroup_pids(NODE) == {7, 101, 102, 201}
