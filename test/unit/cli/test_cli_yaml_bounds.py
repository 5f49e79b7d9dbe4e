"""`kubectl mpijob convert -f` and `submit -f` read YAML within bounds: aliases that would expand past the
bound (a "billion laughs", kept small here so the unbounded reading also ends), an alias inside its own
anchor, and nesting too deep are one line on stderr and exit code 1, never a traceback, and nothing is
sent."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
import yaml

from mpioperator.cli.main import main

HEAD = "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata:\n  name: lol\n"


def laughs(levels: int) -> str:
    """An MPIJob whose `lol` holds 10**levels strings through `levels` anchors of ten aliases each."""
    lines = [HEAD, "lol:\n", '  l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n']
    for level in range(1, levels):
        lines.append(f"  l{level}: &l{level} [{','.join([f'*l{level - 1}'] * 10)}]\n")
    return "".join(lines)


RECURSIVE = HEAD + "lol: &me [1, *me]\n"
DEEP = HEAD + "lol: " + "[" * 150 + "]" * 150 + "\n"
# Nothing listens there: a file that got as far as a request would fail naming the API server instead.
NOWHERE = {
    "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
    "users": [{"name": "u", "user": {"token": "t"}}],
    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "x",
}


def run(tmp_path: Path, command: str, text: str) -> tuple[int, str, float]:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(text)
    config = tmp_path / "config"
    config.write_text(yaml.safe_dump(NOWHERE))
    argv = [command, "-f", str(manifest)] + (["--kubeconfig", str(config)] if command == "submit" else [])
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    code = main(argv, out, err)
    return code, err.getvalue(), time.monotonic() - started


@pytest.mark.parametrize("command", ["convert", "submit"])
def test_aliases_expanding_past_the_bound_are_refused_in_one_line_at_once(
    tmp_path: Path, command: str
) -> None:
    # 10**6 strings from 541 bytes: enough to pass the bound, small enough that reading it unbounded ends.
    text = laughs(6)
    assert len(text) < 600
    code, err, seconds = run(tmp_path, command, text)
    assert (code, err.count("\n")) == (1, 1), err[:500]
    assert err.startswith("error: ") and "aliases expand to more than" in err
    assert seconds < 5


@pytest.mark.parametrize("command", ["convert", "submit"])
def test_an_alias_inside_its_own_anchor_is_refused_in_one_line(tmp_path: Path, command: str) -> None:
    code, err, _ = run(tmp_path, command, RECURSIVE)
    assert (code, err.count("\n")) == (1, 1), err[:500]
    assert "alias *me refers to its own node (line 5)" in err


@pytest.mark.parametrize("command", ["convert", "submit"])
def test_nesting_deeper_than_the_bound_is_refused_in_one_line(tmp_path: Path, command: str) -> None:
    code, err, _ = run(tmp_path, command, DEEP)
    assert (code, err.count("\n")) == (1, 1), err[:500]
    assert "nested deeper than 100 levels" in err


def test_a_manifest_sharing_a_container_through_an_alias_still_converts(tmp_path: Path) -> None:
    text = HEAD + (
        "spec:\n"
        "  mpiReplicaSpecs:\n"
        "    Launcher:\n"
        "      replicas: 1\n"
        "      template:\n"
        "        spec:\n"
        "          containers: &c [{name: main, image: pi}]\n"
        "    Worker:\n"
        "      replicas: 2\n"
        "      template:\n"
        "        spec:\n"
        "          containers: *c\n"
    )
    code, err, _ = run(tmp_path, "convert", text)
    assert code == 0, err
