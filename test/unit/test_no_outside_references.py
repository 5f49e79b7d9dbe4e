"""The controller's and the API's code points only at documents in the repository: no issue numbers and
no sections of documents that are not in it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = re.compile(r"issue \d+|upstream #\d+|§|\bD\d+ #\d+|\(D\d+\)|Appendix [A-Z]")


def test_controller_and_api_cite_no_issue_and_no_outside_document() -> None:
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for package in ("controller", "api")
        for path in sorted((ROOT / "mpioperator" / package).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert cited == []
