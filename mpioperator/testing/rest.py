"""A minimal JSON-over-HTTPS client for the test harness.

The harness deliberately does not use mpioperator.kube: the code under test must not also be the code that
checks it. Only what fixtures and cluster-level tests need: JSON requests and one-shot watch reads.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.client import HTTPResponse
from pathlib import Path
from typing import Any


class RestError(Exception):
    def __init__(self, status: int, body: str):
        self.status = status
        self.body = body
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = {}
        self.reason: str = parsed.get("reason", "") if isinstance(parsed, dict) else ""
        self.message: str = parsed.get("message", body) if isinstance(parsed, dict) else body
        super().__init__(f"HTTP {status} {self.reason}: {self.message}")


class RestClient:
    def __init__(self, server: str, *, token: str, ca_file: Path | None):
        self.server = server.rstrip("/")
        self.token = token
        self._ssl = (
            ssl.create_default_context(cafile=str(ca_file)) if ca_file else ssl.create_default_context()
        )
        if ca_file is None:
            self._ssl.check_hostname = False
            self._ssl.verify_mode = ssl.CERT_NONE

    def _open(
        self, method: str, path: str, body: Any = None, *, content_type: str, timeout: float
    ) -> HTTPResponse:
        # bytes go as they are: a protobuf body, which a test writes to say what JSON cannot
        data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            response: HTTPResponse = urllib.request.urlopen(request, context=self._ssl, timeout=timeout)
        except urllib.error.HTTPError as err:
            raise RestError(err.code, err.read().decode(errors="replace")) from None
        return response

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> Any:
        with self._open(method, path, body, content_type=content_type, timeout=timeout) as response:
            raw = response.read()
        return json.loads(raw) if raw.strip().startswith((b"{", b"[")) else raw.decode()

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def get_or_none(self, path: str) -> dict[str, Any] | None:
        """The object at `path`, or None on a 404; any other error is raised."""
        try:
            found: dict[str, Any] = self.get(path)
        except RestError as err:
            if err.status == 404:
                return None
            raise
        return found

    def exists(self, path: str) -> bool:
        """Whether a GET of `path` finds it: False on a 404, any other error raised."""
        return self.get_or_none(path) is not None

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = self.request("POST", path, body)
        return created

    def delete(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self.request("DELETE", path, body)

    def merge_patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        patched: dict[str, Any] = self.request(
            "PATCH", path, body, content_type="application/merge-patch+json"
        )
        return patched

    def watch(self, path: str, *, timeout: float = 30.0) -> Iterator[dict[str, Any]]:
        """Yield watch events (dicts with type and object) until the server ends the stream."""
        with self._open("GET", path, content_type="application/json", timeout=timeout) as response:
            for line in response:
                if line.strip():
                    yield json.loads(line)
