"""Reading a list page's continue token before its items are decoded, so the next page can be asked for
while this one is: the server writes a list's metadata ahead of its items, in JSON and in protobuf."""

from __future__ import annotations

import orjson

from mpioperator.kube.protoapi import list_continue

# The metadata of a JSON list comes right after its kind and apiVersion: never further in than this.
JSON_HEAD = 4096


def peek_continue(body: bytes, *, protobuf: bool) -> str | None:
    """The page's continue token, or None when it has none or it cannot be read cheaply (the caller then
    takes it from the decoded page)."""
    try:
        return list_continue(body) if protobuf else _json_continue(body)
    except Exception:  # whatever the decoder raises: the decoded page has the token too
        return None


def _json_continue(body: bytes) -> str | None:
    start = body.find(b'"metadata":', 0, JSON_HEAD)
    if start < 0 or body.find(b'"items"', 0, start) >= 0:
        return None
    stop = body.find(b'},"items":', start)
    if stop < 0:
        return None
    meta = orjson.loads(body[start + len(b'"metadata":') : stop + 1])
    token = meta.get("continue") if isinstance(meta, dict) else None
    return str(token) if token else None
