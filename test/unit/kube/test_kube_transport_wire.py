"""What the transport puts on the wire, seen by a plain local HTTP server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mpioperator.clock import FakeClock
from mpioperator.kube.access import ClusterAccess, bearer_token_file
from mpioperator.kube.config import load_configuration
from mpioperator.kube.transport import AUTH_REUSE_S, CONTENT_TYPES, Transport, decode


class Recorded:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []


@pytest.fixture
def server() -> Iterator[tuple[str, Recorded]]:
    recorded = Recorded()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            recorded.requests.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                }
            )
            reply = json.dumps({"kind": "Status", "ok": True}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", recorded
    finally:
        httpd.shutdown()
        httpd.server_close()


def transport_for(host: str, clock: FakeClock | None = None, token: str = "t0") -> Transport:
    return Transport(load_configuration(host=host, token=token), "ua/1", clock=(clock or FakeClock()).now)


async def test_a_body_is_sent_as_json_to_the_path_under_the_servers_prefix(
    server: tuple[str, Recorded],
) -> None:
    host, recorded = server
    transport = transport_for(f"{host}/proxy/k8s/")
    answer = await transport.request(
        "POST",
        "/api/v1/namespaces/ns/configmaps",
        query={"fieldManager": "me", "dryRun": None},
        body={"metadata": {"name": "cm"}, "data": {"k": "v"}},
    )
    assert decode(answer) == {"kind": "Status", "ok": True}
    [sent] = recorded.requests
    assert sent["method"] == "POST"
    assert sent["path"] == "/proxy/k8s/api/v1/namespaces/ns/configmaps?fieldManager=me"
    assert sent["headers"]["content-type"] == "application/json"
    assert sent["headers"]["authorization"] == "Bearer t0"
    assert sent["headers"]["user-agent"] == "ua/1"
    assert json.loads(sent["body"]) == {"metadata": {"name": "cm"}, "data": {"k": "v"}}


async def test_an_apply_patch_of_a_dict_is_sent_as_json_under_the_apply_content_type(
    server: tuple[str, Recorded],
) -> None:
    host, recorded = server
    transport = transport_for(host)
    await transport.request(
        "PATCH",
        "/api/v1/namespaces/ns/configmaps/cm",
        body={"data": {"k": "v"}},
        content_type=CONTENT_TYPES["apply"],
    )
    [sent] = recorded.requests
    assert sent["headers"]["content-type"] == "application/apply-patch+yaml"
    assert json.loads(sent["body"]) == {"data": {"k": "v"}}


async def test_a_request_without_a_body_sends_no_content_type(server: tuple[str, Recorded]) -> None:
    host, recorded = server
    await transport_for(host).request("GET", "/api/v1/pods")
    [sent] = recorded.requests
    assert "content-type" not in sent["headers"]
    assert sent["body"] == b""


async def test_a_rotated_token_file_is_read_again_once_the_reuse_window_has_passed(
    server: tuple[str, Recorded], tmp_path: Path
) -> None:
    host, recorded = server
    clock = FakeClock()
    token = tmp_path / "token"
    token.write_text("t0\n")
    transport = Transport(ClusterAccess(host, credentials=bearer_token_file(token)), "ua/1", clock=clock.now)
    await transport.request("GET", "/api/v1/pods")
    token.write_text("t1\n")
    await clock.advance(AUTH_REUSE_S - 0.1)
    await transport.request("GET", "/api/v1/pods")
    await clock.advance(0.1)
    await transport.request("GET", "/api/v1/pods")
    assert [r["headers"]["authorization"] for r in recorded.requests] == [
        "Bearer t0",
        "Bearer t0",
        "Bearer t1",
    ]


async def test_query_parameters_are_encoded_and_those_that_are_none_left_out(
    server: tuple[str, Recorded],
) -> None:
    host, recorded = server
    transport = transport_for(host)
    await transport.request(
        "GET", "/api/v1/pods", query={"labelSelector": "a=b,c in (d)", "limit": 5, "continue": None}
    )
    await transport.request("GET", "/api/v1/pods", query={"continue": None})
    assert [r["path"] for r in recorded.requests] == [
        "/api/v1/pods?labelSelector=a%3Db%2Cc+in+%28d%29&limit=5",
        "/api/v1/pods",
    ]
