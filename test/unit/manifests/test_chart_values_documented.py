"""Every value of charts/mpi-operator has a schema entry with a description and a row in the README."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parents[3] / "charts" / "mpi-operator"


def schema_leaves(schema: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for key, sub in schema.get("properties", {}).items():
        if sub.get("type") == "object" and "properties" in sub:
            yield from schema_leaves(sub, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", sub


def value_leaves(values: dict[str, Any], schema: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """Keys of values.yaml down to where the schema stops describing structure (free-form maps)."""
    for key, value in values.items():
        sub = schema.get("properties", {}).get(key, {})
        if isinstance(value, dict) and "properties" in sub:
            yield from value_leaves(value, sub, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"


def test_every_value_is_in_the_schema_with_a_description_and_in_the_readme() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    described = {path: sub.get("description", "") for path, sub in schema_leaves(schema)}
    readme_rows = set(re.findall(r"^\| `([\w.]+)` \|", (CHART / "README.md").read_text(), flags=re.MULTILINE))
    keys = set(value_leaves(values, schema))
    assert keys == set(described)
    assert [k for k, text in described.items() if not text] == []
    assert readme_rows == keys
