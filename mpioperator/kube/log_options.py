"""What one read of a pod's log asks for, as one value (corev1.PodLogOptions' fields that we use): the
client's `pod_log` and the PodLogs port (controller/ports.py) take it, so neither restates the keywords."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class LogOptions:
    # None: the pod's only container (the API server refuses the read when the pod has several).
    container: str | None = None
    tail_lines: int | None = None
    # RFC 3339: only the lines written at or after it.
    since_time: str | None = None
    limit_bytes: int | None = None
    # Each line led by the kubelet's RFC 3339 timestamp and a space.
    timestamps: bool = False

    def query(self) -> dict[str, Any]:
        """The query of a pods/log read: each field under its API name (camelCase), `timestamps` as "true";
        unset fields and a False `timestamps` are left out of the URL."""
        return {_api_name(f.name): _wire(getattr(self, f.name)) for f in fields(self)}


def _api_name(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(word.capitalize() for word in rest)


def _wire(value: Any) -> Any:
    return ("true" if value else None) if isinstance(value, bool) else value


# The whole log of the pod's only container.
WHOLE_LOG = LogOptions()
