"""What the generators (gen_crd.py, gen_install.py, gen_chart.py) do with their output: write the files,
or with --check leave them alone and fail with a diff when a committed one differs from what was
generated, so a stale copy is caught in the tests and in review."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def check_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check", action="store_true", help="compare with the committed files instead of writing them"
    )


def write_or_check(generator: str, outputs: Mapping[Path, str], *, check: bool) -> int:
    """Writes each file whose text differs from what was generated; with `check`, prints the diff of each
    instead and returns 1 when any differs."""
    stale = 0
    for path, wanted in outputs.items():
        have = path.read_text() if path.exists() else ""
        if have == wanted:
            continue
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        if check:
            stale += 1
            diff = difflib.unified_diff(
                have.splitlines(True), wanted.splitlines(True), str(shown), "generated"
            )
            sys.stdout.writelines(diff)
            print(f"{generator}: {shown} is stale; run python hack/{generator}.py", file=sys.stderr)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(wanted)
        print(f"wrote {shown} ({len(wanted.encode())} bytes)")
    return 1 if stale else 0
