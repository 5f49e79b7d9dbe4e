"""A followed pod log arrives line by line as text, blank lines and all; a refused one raises the
server's typed error; a log read whole is the body as text."""

from __future__ import annotations

from typing import cast

import pytest
import urllib3

from mpioperator.kube import errors
from mpioperator.kube.transport import Answer, decode_text
from mpioperator.kube.watch import stream_lines
from test.unit.kube.test_kube_watch_stream import FakeResponse


async def test_followed_log_keeps_blank_lines_and_decodes_bad_bytes() -> None:
    response = FakeResponse([b"rank 0 of 2\n", b"\n", b"pi is \xff approximately\n", b"no newline"])

    lines = [line async for line in stream_lines(cast(urllib3.BaseHTTPResponse, response))]

    assert lines == ["rank 0 of 2\n", "\n", "pi is \ufffd approximately\n", "no newline"]
    assert response.closed


async def test_followed_log_refused_by_the_server_raises_its_error() -> None:
    body = b'{"kind":"Status","code":400,"reason":"BadRequest","message":"container \\"l\\" in pod \\"p\\" is waiting to start: ContainerCreating"}'
    response = FakeResponse([], status=400, data=body)

    with pytest.raises(errors.ApiError) as raised:
        _ = [line async for line in stream_lines(cast(urllib3.BaseHTTPResponse, response))]

    assert raised.value.status == 400
    assert "is waiting to start: ContainerCreating" in raised.value.server_message


def test_log_read_whole_is_its_body_as_text() -> None:
    assert decode_text(Answer(200, {}, b"line 1\n\nline 3\n")) == "line 1\n\nline 3\n"


def test_log_of_a_missing_pod_raises_not_found() -> None:
    body = b'{"kind":"Status","code":404,"reason":"NotFound","message":"pods \\"x\\" not found","details":{"name":"x","kind":"pods"}}'
    with pytest.raises(errors.NotFound, match='pods "x" not found'):
        decode_text(Answer(404, {}, body))
