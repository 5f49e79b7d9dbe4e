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


# The most objects a page sized by its bytes asks for. Each page costs a client token (of --kube-api-qps,
# 5 a second for a user who kept upstream's), so small objects come many to a page: 5,000 Secrets of
# 16 KiB list in 6 pages.
MAX_PAGE_LIMIT = 5000


def scaled_limit(limit: int | None, body_bytes: int, page_bytes: int | None) -> int | None:
    """The next page's limit after a full page of `limit` objects in `body_bytes`, aiming at `page_bytes`."""
    if page_bytes is None or not limit or body_bytes <= 0:
        return limit
    return max(1, min(MAX_PAGE_LIMIT, limit * page_bytes // body_bytes))
