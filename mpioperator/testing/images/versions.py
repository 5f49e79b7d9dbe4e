"""The pinned versions of hack/versions.env, read the way bash's `source` would for plain KEY=VALUE lines."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
VERSIONS_FILE = REPO_ROOT / "hack" / "versions.env"


def parse_versions(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip().strip("'\"")
    return out


def pinned(name: str) -> str:
    versions = parse_versions(VERSIONS_FILE.read_text())
    if name not in versions:
        raise KeyError(f"{name} is not pinned in {VERSIONS_FILE}")
    return versions[name]
