"""The Kubernetes OpenAPI v3 document, turned into structural CRD schemas: hack/gen_crd.py embeds the
PodTemplateSpec it resolves from the pinned k8s.io/kubernetes module's document (in the Go module cache,
downloaded by hack/build-control-plane.sh)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
Schema = dict[str, Any]

CORE = "io.k8s.api.core.v1."
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
INT_OR_STRING: Schema = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
}
SPECIAL: dict[str, Schema] = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        **INT_OR_STRING,
        "pattern": (
            r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
            r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
        ),
    },
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": INT_OR_STRING,
    META + "Time": {"type": "string", "format": "date-time"},
    META + "MicroTime": {"type": "string", "format": "date-time"},
}
# Keys kept from the OpenAPI document; everything else (descriptions, enums that newer servers may
# extend, patch strategies, GVK markers) is dropped from the embedded pod template.
KEPT = {
    "type",
    "format",
    "items",
    "properties",
    "additionalProperties",
    "required",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "default",
    "nullable",
}


def openapi_path() -> Path:
    versions = dict(
        line.split("=", 1)
        for line in (REPO / "hack" / "versions.env").read_text().splitlines()
        if "=" in line
    )
    version = versions["K8S_VERSION"].strip().strip('"')
    modcache = (
        os.environ.get("GOMODCACHE")
        or subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    path = Path(modcache) / f"k8s.io/kubernetes@{version}" / "api/openapi-spec/v3/api__v1_openapi.json"
    if not path.exists():
        sys.exit(f"gen_crd: {path} not found; run hack/build-control-plane.sh (it downloads the module)")
    return path


class Resolver:
    def __init__(self, document: Schema) -> None:
        self.schemas: dict[str, Schema] = document["components"]["schemas"]

    def named(self, name: str, depth: int = 0) -> Schema:
        if name in SPECIAL:
            return copy.deepcopy(SPECIAL[name])
        return self.structural(self.schemas[name], depth + 1)

    def structural(self, schema: Schema, depth: int = 0) -> Schema:
        if depth > 40:
            raise RuntimeError("schema recursion too deep")
        if "$ref" in schema:
            return self.named(schema["$ref"].rsplit("/", 1)[1], depth)
        out: Schema = {}
        for part in schema.get("allOf") or ():
            out.update(self.structural(part, depth))
        for key, value in schema.items():
            if key not in KEPT:
                continue
            if key == "properties":
                out["properties"] = {k: self.structural(v, depth) for k, v in sorted(value.items())}
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = self.structural(value, depth)
            elif key == "default":
                if not isinstance(value, (dict, list)):  # scalar defaults keep list-map keys valid
                    out["default"] = value
            else:
                out[key] = copy.deepcopy(value)
        for name in out.get("required") or ():
            # A zero default on a required field ("" for a container's name) would only hide its absence.
            prop = (out.get("properties") or {}).get(name) or {}
            if prop.get("default") in ("", 0, False) and "default" in prop:
                del prop["default"]
        if "properties" in out or "additionalProperties" in out:
            out.setdefault("type", "object")
        return out
