#!/usr/bin/env python3
"""Turn the replace block of a published go.mod into `go mod edit -replace=` arguments.

Reads `go mod edit -json <go.mod>` on stdin, prints one `-replace=old=new@version` per line.
Used by hack/build-scheduler-plugins.sh for its throw-away wrapper module.

A replacement whose exact version the configured module proxy does not serve (the proxy of some
machines holds only a sparse set of k8s.io staging patch releases; `go` then fails with
"reading .../@v/v0.34.7.mod: 403 Forbidden ... This module version is not available") is swapped
for the nearest served patch release of the same minor: the next higher one, else the next lower one.
Staging modules keep their API within a minor, and most of these are only in the module graph, not
in the scheduler binary. A module with no served release of that minor keeps its original line:
unused replacements are never fetched, and a used one then fails with go's own message.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def _parse(version: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a plain release; None for pre-releases and pseudo-versions."""
    parts = version.removeprefix("v").split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


def _served(path: str, version: str) -> bool:
    """Whether the proxy serves this version and the checksum database vouches for it.

    `go list -m` alone is not enough: some versions are listed and served but their checksum lookup
    fails ("verifying go.mod: ... sumdb/sum.golang.org/lookup/...: 404 Not Found"). A download checks both
    and leaves the module in the cache, where the build would have fetched it anyway.
    """
    result = subprocess.run(
        ["go", "mod", "download", "-json", f"{path}@{version}"], capture_output=True, text=True, check=False
    )
    return result.returncode == 0


def _served_versions(path: str) -> list[str]:
    result = subprocess.run(
        ["go", "list", "-m", "-versions", path], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        return []
    return result.stdout.split()[1:]


def nearest_patch(wanted: str, available: list[str]) -> str | None:
    """The closest release in `available` with the same major.minor as `wanted`, higher preferred."""
    target = _parse(wanted)
    if target is None:
        return None
    same_minor = sorted(
        (parsed, v) for v in available if (parsed := _parse(v)) is not None and parsed[:2] == target[:2]
    )
    higher = [v for parsed, v in same_minor if parsed > target]
    lower = [v for parsed, v in same_minor if parsed < target]
    if higher:
        return higher[0]
    if lower:
        return lower[-1]
    return None


def replace_args(gomod: dict[str, Any]) -> list[str]:
    args = []
    for r in gomod.get("Replace") or []:
        old, new = r["Old"], r["New"]
        version = new.get("Version")
        if not version:
            sys.exit(f"unexpected local replace {r}")
        if not _served(new["Path"], version):
            candidates = _served_versions(new["Path"])
            substitute = nearest_patch(version, candidates)
            while substitute is not None and not _served(new["Path"], substitute):
                candidates.remove(substitute)
                substitute = nearest_patch(version, candidates)
            if substitute is not None:
                print(f"{new['Path']}@{version} is not served; using {substitute}", file=sys.stderr)
                version = substitute
        args.append(f"-replace={old['Path']}={new['Path']}@{version}")
    return args


def main() -> None:
    print("\n".join(replace_args(json.load(sys.stdin))))


if __name__ == "__main__":
    main()
