"""etcd's v3 JSON gateway, for the few things tests do to a cluster's storage directly."""

from __future__ import annotations

import base64
import json
import urllib.request
from typing import Any


def revision(url: str) -> int:
    reply = _call(url, "/v3/kv/range", {"key": base64.b64encode(b"/").decode(), "limit": 1})
    return int(reply["header"]["revision"])


def compact(url: str) -> int:
    """Compact etcd to its current revision, so watches from any older resourceVersion expire."""
    current = revision(url)
    _call(url, "/v3/kv/compaction", {"revision": str(current), "physical": True})
    return current


def _call(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        reply: dict[str, Any] = json.loads(response.read())
        return reply
