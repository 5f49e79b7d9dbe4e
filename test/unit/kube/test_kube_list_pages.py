"""A list's pages come in order, and the next one is asked for as soon as this one's continue token is
read: ahead of its items, from the metadata the server writes first (JSON and protobuf)."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.pages import MAX_PAGE_LIMIT, peek_continue
from mpioperator.kube.protoapi import MAGIC
from mpioperator.kube.resources import CONFIG_MAPS
from mpioperator.kube.transport import Answer


def field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def protobuf_list(meta: bytes, items: list[bytes], *, meta_first: bool = True) -> bytes:
    listed = [field(2, item) for item in items]
    raw = field(1, meta) + b"".join(listed) if meta_first else b"".join(listed) + field(1, meta)
    return MAGIC + field(1, field(2, b"PodList")) + field(2, raw)


def json_list(token: str | None, names: list[str]) -> bytes:
    meta = {"resourceVersion": "7", **({"continue": token} if token else {})}
    items = [{"metadata": {"name": n}} for n in names]
    return orjson.dumps({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta, "items": items})


def test_the_continue_token_is_read_from_a_json_pages_metadata() -> None:
    assert peek_continue(json_list("abc", ["a"]), protobuf=False) == "abc"
    assert peek_continue(json_list(None, ["a"]), protobuf=False) is None


def test_a_json_page_whose_items_come_first_is_not_read_ahead() -> None:
    body = b'{"items":[{"metadata":{"continue":"x"}}],"metadata":{"continue":"abc"}}'
    assert peek_continue(body, protobuf=False) is None


def test_the_continue_token_is_read_from_a_protobuf_pages_list_meta() -> None:
    meta = field(2, b"7") + field(3, b"tok")
    assert peek_continue(protobuf_list(meta, [b"", b""]), protobuf=True) == "tok"
    assert peek_continue(protobuf_list(field(2, b"7"), [b""]), protobuf=True) is None


def test_a_protobuf_page_whose_items_come_first_or_that_is_broken_is_not_read_ahead() -> None:
    meta = field(2, b"7") + field(3, b"tok")
    assert peek_continue(protobuf_list(meta, [b""], meta_first=False), protobuf=True) is None
    assert peek_continue(b"k8s\x00\x0a\xff", protobuf=True) is None


class PagedTransport:
    """Serves three JSON pages of config maps, answering a request for page 2 only once released."""

    pool_size = 4

    def __init__(self, *, fail_last: bool = False) -> None:
        self.tokens: list[str | None] = []
        self.versions: list[str | None] = []
        self.asked_for_second = threading.Event()
        self.release_second = threading.Event()
        self._fail_last = fail_last

    async def request(self, method: str, path: str, *, query: dict[str, Any], **_: Any) -> Answer:
        token = query.get("continue")
        self.tokens.append(token)
        self.versions.append(query.get("resourceVersion"))
        if token == "p2":
            self.asked_for_second.set()
            await asyncio.to_thread(self.release_second.wait, 10)
            return Answer(200, {}, json_list("p3", ["c", "d"]))
        if token == "p3":
            if self._fail_last:
                return Answer(410, {}, b'{"kind":"Status","reason":"Expired","code":410}')
            return Answer(200, {}, json_list(None, ["e"]))
        return Answer(200, {}, json_list("p2", ["a", "b"]))

    async def close(self) -> None:
        pass


def names(page: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in page["items"]]


async def test_the_next_page_is_on_the_wire_before_this_one_is_decoded() -> None:
    transport = PagedTransport()
    client = KubeClient(transport, qps=1000, burst=1000)  # type: ignore[arg-type]
    asked_before_decoding: list[bool] = []

    def decode_first_page(body: bytes) -> dict[str, Any]:
        if not asked_before_decoding:
            asked_before_decoding.append(transport.asked_for_second.wait(10))
            transport.release_second.set()
        parsed: dict[str, Any] = orjson.loads(body)
        return parsed

    projection = SimpleNamespace(list=decode_first_page, protobuf=None)
    pages = client.list_pages(CONFIG_MAPS, "ns", ListOptions(limit=2, projection=projection))  # type: ignore[arg-type]
    first = await anext(pages)
    assert asked_before_decoding == [True]
    rest = [page async for page in pages]
    assert [names(p) for p in [first, *rest]] == [["a", "b"], ["c", "d"], ["e"]]
    assert transport.tokens == [None, "p2", "p3"]
    assert all(item["kind"] == "ConfigMap" for p in [first, *rest] for item in p["items"])
    await client.close()


async def test_an_error_answer_for_a_later_page_is_raised_in_order() -> None:
    transport = PagedTransport(fail_last=True)
    transport.release_second.set()
    client = KubeClient(transport, qps=1000, burst=1000)  # type: ignore[arg-type]
    seen: list[list[str]] = []

    async def take_all() -> None:
        async for page in client.list_pages(CONFIG_MAPS, "ns", ListOptions(limit=2)):
            seen.append(names(page))

    with pytest.raises(errors.ApiError) as raised:
        await take_all()
    assert raised.value.status == 410
    assert seen == [["a", "b"], ["c", "d"]]
    await client.close()


async def test_a_caller_that_stops_early_leaves_no_request_behind() -> None:
    transport = PagedTransport()
    client = KubeClient(transport, qps=1000, burst=1000)  # type: ignore[arg-type]
    pages = client.list_pages(CONFIG_MAPS, "ns", ListOptions(limit=2))
    await anext(pages)
    assert await asyncio.to_thread(transport.asked_for_second.wait, 10)
    await pages.aclose()
    transport.release_second.set()
    await client.settled()
    assert transport.tokens == [None, "p2"]
    await client.close()


async def test_a_resource_version_goes_with_the_first_page_only() -> None:
    # The API server refuses a continue token sent with a resourceVersion: the token carries its own.
    transport = PagedTransport()
    transport.release_second.set()
    client = KubeClient(transport, qps=1000, burst=1000)  # type: ignore[arg-type]
    pages = [
        names(p)
        async for p in client.list_pages(CONFIG_MAPS, "ns", ListOptions(limit=2, resource_version="0"))
    ]
    assert pages == [["a", "b"], ["c", "d"], ["e"]]
    assert transport.versions == ["0", None, None]
    await client.close()


class SizedTransport:
    """Serves `total` config maps of `item_bytes` each, as many a page as each request's limit asks."""

    pool_size = 4

    def __init__(self, total: int, item_bytes: int) -> None:
        self.limits: list[int] = []
        self._total = total
        self._filler = "x" * item_bytes

    async def request(self, method: str, path: str, *, query: dict[str, Any], **_: Any) -> Answer:
        start, limit = int(query.get("continue") or 0), int(query["limit"])
        self.limits.append(limit)
        stop = min(self._total, start + limit)
        meta = {"resourceVersion": "7", **({"continue": str(stop)} if stop < self._total else {})}
        items = [{"metadata": {"name": f"c{i}"}, "data": {"v": self._filler}} for i in range(start, stop)]
        return Answer(200, {}, orjson.dumps({"kind": "ConfigMapList", "metadata": meta, "items": items}))

    async def close(self) -> None:
        pass


async def test_pages_sized_by_bytes_ask_for_fewer_large_objects_and_more_small_ones() -> None:
    large = SizedTransport(total=40, item_bytes=100_000)
    client = KubeClient(large, qps=1000, burst=1000)  # type: ignore[arg-type]
    pages = [p async for p in client.list_pages(CONFIG_MAPS, "ns", ListOptions(limit=8, page_bytes=400_000))]
    await client.close()
    assert sum(len(p["items"]) for p in pages) == 40
    assert large.limits[0] == 8 and all(limit == 3 for limit in large.limits[1:]), large.limits

    small = SizedTransport(total=12_000, item_bytes=10)
    client = KubeClient(small, qps=1000, burst=1000)  # type: ignore[arg-type]
    pages = [p async for p in client.list_pages(CONFIG_MAPS, "ns", ListOptions(limit=8, page_bytes=400_000))]
    await client.close()
    assert sum(len(p["items"]) for p in pages) == 12_000
    assert small.limits[:3] == [8, MAX_PAGE_LIMIT, MAX_PAGE_LIMIT], "pages of small objects grow, to a cap"
