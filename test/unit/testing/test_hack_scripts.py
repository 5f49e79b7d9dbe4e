"""The hack/ scripts a new user runs first: no pipe whose reader closes early under pipefail (a SIGPIPE race
that ends a script with a bare 141), and a failing step named with its place instead of a bare exit code."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LIB = ROOT / "hack" / "lib.sh"

# Readers that stop reading before the writer is done: head, grep -q/-m/-l, sed with a quit command, awk
# with exit. Any of them under pipefail fails the pipeline whenever the writer writes after the close.
EARLY_CLOSING_READER = re.compile(
    r"\|\s*(?:head\b|grep\s+(?:-\w*[qml]\w*\b|--quiet|--max-count)|sed\b[^|]*(?<![A-Za-z])q(?![A-Za-z])|awk\b[^|]*\bexit\b)"
)


def early_closing_pipes(script: str) -> list[tuple[int, str]]:
    """The lines of a bash script that pipe into an early-closing reader, when the script sets pipefail."""
    if "pipefail" not in script:
        return []
    found = []
    for number, line in enumerate(script.splitlines(), start=1):
        code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
        if EARLY_CLOSING_READER.search(code):
            found.append((number, line.strip()))
    return found


def project_scripts() -> list[Path]:
    return [*sorted((ROOT / "hack").glob("*.sh")), ROOT / ".ci" / "run"]


def test_no_project_script_pipes_into_a_reader_that_closes_early() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line}"
        for path in project_scripts()
        for number, line in early_closing_pipes(path.read_text())
    ]
    assert not offenders, (
        "these pipe into a reader that closes early, which fails under pipefail when the writer gets "
        "SIGPIPE (read the whole output first, e.g. lib.sh's first_line):\n" + "\n".join(offenders)
    )


@pytest.mark.parametrize(
    "line",
    [
        '"$out/etcd" --version | head -1 >&2',
        "kubectl get pods | grep -q Running",
        "journalctl | grep -m1 started",
        "dmesg | sed -n '1p;1q'",
        "ps | awk '/x/ {print; exit}'",
    ],
)
def test_the_pipe_check_finds_each_early_closing_reader(line: str) -> None:
    script = f"#!/usr/bin/env bash\nset -euo pipefail\n{line}\n"
    assert early_closing_pipes(script) == [(3, line)]


def test_the_pipe_check_leaves_readers_that_read_everything_alone() -> None:
    script = (
        "set -euo pipefail\nls | sort | uniq -c\ngrep -q x file\n# a | head -1 in a comment\nps | grep -v x\n"
    )
    assert early_closing_pipes(script) == []


def run_bash(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "step.sh"
    script.write_text(f"set -euo pipefail\ncomponent=try\nsource {LIB}\n{body}\n")
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)


def test_a_failing_step_is_named_with_its_line_command_and_exit_code(tmp_path: Path) -> None:
    result = run_bash(tmp_path, 'echo started\nls /no/such/dir >/dev/null\necho "never here"')
    assert result.returncode == 2
    assert "never here" not in result.stdout
    assert "error: [try] failed (exit 2) at step.sh:5: ls /no/such/dir > /dev/null" in result.stderr


def test_a_failure_inside_a_function_is_told_once(tmp_path: Path) -> None:
    result = run_bash(tmp_path, "fetch() { false; }\nout=$(fetch)\necho never")
    assert result.returncode == 1
    assert result.stderr.count("error: [try] failed") == 1
    assert "never" not in result.stdout


def test_a_build_step_that_fails_shows_its_log_and_where_it_is(tmp_path: Path) -> None:
    result = run_bash(
        tmp_path,
        'broken() { echo "compiling"; echo "cc: fatal" >&2; return 3; }\nrun_step thing "$PWD" broken',
    )
    assert result.returncode == 1
    assert "cc: fatal" in result.stderr
    assert f"error: building thing failed (full log: {tmp_path}/build-thing.log)" in result.stderr


def test_first_line_reads_everything_and_prints_only_the_first_line(tmp_path: Path) -> None:
    # A writer with far more than a pipe buffer of output after its first line: `| head -1` under
    # pipefail fails on it whenever head closes first.
    result = run_bash(tmp_path, "first_line seq 1 200000\necho done")
    assert result.returncode == 0, result.stderr
    assert result.stderr == "1\n"
    assert result.stdout == "done\n"


def test_a_failure_inside_a_function_names_the_line_that_called_it(tmp_path: Path) -> None:
    result = run_bash(tmp_path, "prepare() {\n  false\n}\necho start\nprepare")
    assert result.returncode == 1
    assert "error: [try] failed (exit 1) at step.sh:5: false <- prepare called at step.sh:8" in result.stderr


def test_a_go_build_runs_once_then_its_whole_output_is_reused_and_a_partial_one_is_built_again(
    tmp_path: Path,
) -> None:
    build = (
        f'cache_root={tmp_path}/cache; out="$cache_root/bin/tool-v1"\n'
        'reuse_or_lock tool "$out/tool" "$out/tool"\n'
        'echo built >>"$cache_root/builds"; printf "#!/bin/sh\\n" >"$out/tool"; chmod +x "$out/tool"\n'
        'build_done "$out/tool"'
    )
    out = tmp_path / "cache" / "bin" / "tool-v1"
    first, second = run_bash(tmp_path, build), run_bash(tmp_path, build)
    assert (first.returncode, first.stdout) == (0, f"{out}/tool\n")
    assert (second.returncode, second.stdout) == (0, f"{out}/tool\n")
    assert (tmp_path / "cache" / "builds").read_text() == "built\n", "the second run reused the first's build"
    (out / ".complete").unlink()  # a build cut short before its stamp
    assert run_bash(tmp_path, build).returncode == 0
    assert (tmp_path / "cache" / "builds").read_text() == "built\nbuilt\n"
    assert (tmp_path / "cache" / ".build-tool.lock").exists()
