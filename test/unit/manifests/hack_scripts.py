"""The hack/ generators loaded from their paths (hack/ is not a package), for their tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[3]


def load_hack_script(name: str) -> ModuleType:
    """hack/NAME.py as a module."""
    spec = importlib.util.spec_from_file_location(name, REPO / "hack" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
