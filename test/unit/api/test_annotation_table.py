"""The one table of the operator's `mpioperator.io/` keys: every key the docs name is in it, the prefix is
spelt once, and a sync reads a job's annotations once and validates them once."""

from __future__ import annotations

import asyncio
import re
import sys
import types
from pathlib import Path

from mpioperator.api import annotation_keys as keys
from mpioperator.api.objects import Obj
from test.unit.controller import sync_fixtures as fx
from test.unit.controller.jobs import reference_job

ROOT = Path(__file__).resolve().parents[3]
DOCUMENTED = re.compile(r"mpioperator\.io/[a-z][a-z-]*[a-z](?![-*a-z])")  # not `resume-*`


def test_docs_extensions_md_names_exactly_the_tables_keys() -> None:
    documented = set(DOCUMENTED.findall((ROOT / "docs" / "extensions.md").read_text()))
    in_table = {entry.key for entry in keys.TABLE} | set(keys.WRITTEN_BY_THE_OPERATOR)
    assert documented == in_table


def test_every_table_entry_has_a_reader_a_default_and_a_doc() -> None:
    spelt = [entry.key for entry in keys.TABLE]
    assert len(spelt) == len(set(spelt))
    for entry in keys.TABLE:
        assert entry.key.startswith(keys.PREFIX)
        assert entry.doc, entry.key
        assert callable(entry.read), entry.key


def test_the_annotation_prefix_is_spelt_once_in_the_product() -> None:
    spelt = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "mpioperator").rglob("*.py")
        if re.search(r"""=\s*["']mpioperator\.io/["']""", path.read_text())
    ]
    assert spelt == ["mpioperator/api/annotation_keys.py"]


def _calls_during_one_sync(job: Obj, names: set[str]) -> dict[str, int]:
    counted = dict.fromkeys(names, 0)
    package = str(ROOT / "mpioperator")

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        code = frame.f_code
        if event == "call" and code.co_name in counted and code.co_filename.startswith(package):
            counted[code.co_name] += 1

    scene = fx.Scene(job, *(fx.worker(job, i) for i in range(2)))
    sys.setprofile(profile)
    try:
        asyncio.run(scene.sync())
    finally:
        sys.setprofile(None)
    assert ("create", "jobs", "pi-launcher") in scene.writer.calls
    return counted


def test_a_sync_that_makes_the_launcher_validates_the_conveniences_once() -> None:
    job = reference_job(workers=2)
    job["metadata"]["annotations"] = {"mpioperator.io/launcher-program": "/opt/train --epochs 3"}
    container = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    del container["command"], container["args"]
    assert _calls_during_one_sync(job, {"validate_conveniences"}) == {"validate_conveniences": 1}
