"""A followed pod log arrives line by line as text, blank lines and all; a refused one raises the
server's typed error; a log read whole is the body as text."""

from __future__ import annotations

import contextlib
import socket

import pytest

from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient
from mpioperator.kube.transport import Answer, decode_text
from test.unit.kube.test_kube_watch_stream import CHUNKED_HEAD, LAST_CHUNK, OneAnswer, chunk


async def followed(answer: bytes) -> list[str]:
    def send(conn: socket.socket) -> None:
        conn.sendall(answer)

    server = OneAnswer(send)
    client = KubeClient.explicit(server.host)
    try:
        async with contextlib.aclosing(client.follow_pod_log("p", "ns")) as lines:
            return [line async for line in lines]
    finally:
        await client.close()
        server.close()


async def test_followed_log_keeps_blank_lines_and_decodes_bad_bytes() -> None:
    pieces = [b"rank 0 of 2\n\npi is ", b"\xff approximately\n", b"no newline"]
    lines = await followed(CHUNKED_HEAD + b"".join(map(chunk, pieces)) + LAST_CHUNK)
    assert lines == ["rank 0 of 2\n", "\n", "pi is \ufffd approximately\n", "no newline"]


async def test_followed_log_refused_by_the_server_raises_its_error() -> None:
    body = b'{"kind":"Status","code":400,"reason":"BadRequest","message":"container \\"l\\" in pod \\"p\\" is waiting to start: ContainerCreating"}'
    head = b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"

    with pytest.raises(errors.ApiError) as raised:
        await followed(head % len(body) + body)

    assert raised.value.status == 400
    assert "is waiting to start: ContainerCreating" in raised.value.server_message


def test_log_read_whole_is_its_body_as_text() -> None:
    assert decode_text(Answer(200, {}, b"line 1\n\nline 3\n")) == "line 1\n\nline 3\n"


def test_log_of_a_missing_pod_raises_not_found() -> None:
    body = b'{"kind":"Status","code":404,"reason":"NotFound","message":"pods \\"x\\" not found","details":{"name":"x","kind":"pods"}}'
    with pytest.raises(errors.NotFound, match='pods "x" not found'):
        decode_text(Answer(404, {}, body))
