"""The real node's pods share one cgroup, made by the harness before the kubelet starts. With the kernel's
autogroups every host session (a build, each process of the control planes) weighs as much as a cgroup
of the default weight, so at the default the node's pods together got what one busy host process got."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpioperator.testing.node import host


def fake_mounts(tmp_path: Path) -> dict[str, Path]:
    """A cgroup v1 cpu hierarchy, a cpuset one and a v2 unified one, with the root knobs each has."""
    cpu, cpuset, unified = tmp_path / "cpu", tmp_path / "cpuset", tmp_path / "unified"
    for mount in (cpu, cpuset, unified):
        mount.mkdir()
    (cpu / "cpu.shares").write_text("1024\n")
    (cpuset / "cpuset.cpus").write_text("0-1\n")
    (cpuset / "cpuset.mems").write_text("0\n")
    (unified / "cpu.weight").write_text("100\n")
    return {"cpu": cpu, "cpuset": cpuset, "unified": unified}


def make_knobs(directory: Path) -> None:
    """What the kernel puts into a new cgroup directory of each kind."""
    if directory.parent.name == "cpu":
        (directory / "cpu.shares").write_text("1024\n")
    if directory.parent.name == "cpuset":
        (directory / "cpuset.cpus").write_text("")
        (directory / "cpuset.mems").write_text("")
    if directory.parent.name == "unified":
        (directory / "cpu.weight").write_text("100\n")


def test_the_nodes_cgroup_root_weighs_as_much_as_several_busy_host_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mounts = fake_mounts(tmp_path)
    monkeypatch.setattr(host, "cgroup_mounts", lambda: list(mounts.values()))
    real_mkdir = Path.mkdir

    def mkdir_with_knobs(self: Path, *args: object, **kwargs: object) -> None:
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]
        make_knobs(self)

    monkeypatch.setattr(Path, "mkdir", mkdir_with_knobs)

    host.create_cgroup_root("mpioperator-test0")

    node = "mpioperator-test0"
    # At least four times the default of each hierarchy (v1 cpu.shares 1024, v2 cpu.weight 100): against
    # one busy host session the pods get four fifths of the CPUs or more, not half.
    shares = int((mounts["cpu"] / node / "cpu.shares").read_text())
    weight = int((mounts["unified"] / node / "cpu.weight").read_text())
    assert shares >= 4 * 1024 and weight >= 4 * 100, (shares, weight)
    assert shares // 1024 == weight // 100, (shares, weight)
    # The cpuset still gets its parent's CPUs and memory nodes.
    assert (mounts["cpuset"] / node / "cpuset.cpus").read_text() == "0-1\n"
