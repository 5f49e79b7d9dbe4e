"""The blocking HTTP layer: the official client's REST layer and connection pool, with our own JSON
handling (no generated models anywhere)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import urllib3
from kubernetes import client as k8s_client
from kubernetes.client import rest as k8s_rest
from kubernetes.client.exceptions import ApiException

from mpioperator.kube import errors

CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


class Transport:
    def __init__(self, cfg: k8s_client.Configuration, user_agent: str) -> None:
        self.cfg = cfg
        self.host = cfg.host.rstrip("/")
        self.user_agent = user_agent
        self._rest = k8s_rest.RESTClientObject(cfg)

    def override_host(self, host: str) -> None:
        self.cfg.host = host
        self.host = host.rstrip("/")

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        settings: dict[str, dict[str, Any]] = dict(self.cfg.auth_settings())  # type: ignore[arg-type]
        for setting in settings.values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[str(setting["key"])] = str(setting["value"])
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def url(self, path: str, query: dict[str, Any] | None) -> str:
        params = {k: v for k, v in (query or {}).items() if v is not None}
        return f"{self.host}{path}?{urlencode(params)}" if params else f"{self.host}{path}"

    def open(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | tuple[float, float] | None = None,
    ) -> urllib3.BaseHTTPResponse:
        """Send a request and return the unread response (a stream, for watches)."""
        if body is not None and content_type is None:
            content_type = "application/json"
        if content_type == CONTENT_TYPES["json"] and not isinstance(body, list):
            # The REST layer would quietly resend a non-list JSON patch as a strategic merge patch.
            raise ValueError("a JSON patch body must be a list of operations")
        if content_type == CONTENT_TYPES["apply"] and not isinstance(body, (str, bytes)):
            body = json.dumps(body)  # JSON is YAML; sent verbatim
        try:
            answer = self._rest.request(  # type: ignore[no-untyped-call]
                method,
                self.url(path, query),
                headers=self._headers(content_type),
                body=body,
                _request_timeout=timeout,
            )
        except ApiException as exc:
            raise errors.ApiError(0, "", str(exc.reason or exc)) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise errors.ApiError(0, "", f"{type(exc).__name__}: {exc}") from exc
        response: urllib3.BaseHTTPResponse = answer.response
        return response

    def request(self, method: str, path: str, **kwargs: Any) -> Answer:
        response = self.open(method, path, **kwargs)
        try:
            data = response.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise errors.ApiError(0, "", f"{type(exc).__name__}: {exc}") from exc
        finally:
            response.release_conn()
        return Answer(response.status, dict(response.headers), data)

    def close(self) -> None:
        self._rest.pool_manager.clear()


def decode(answer: Answer) -> dict[str, Any]:
    """The JSON body of a 2xx answer; a typed error otherwise."""
    if 200 <= answer.status < 300:
        if not answer.body:
            return {}
        parsed: dict[str, Any] = json.loads(answer.body)
        return parsed
    raise error_of(answer.status, answer.headers, answer.body)


def error_of(status: int, headers: dict[str, str], body: bytes) -> errors.ApiError:
    try:
        parsed = json.loads(body) if body else {}
    except ValueError:
        parsed = {"message": body.decode(errors="replace")[:500]}
    if not isinstance(parsed, dict):
        parsed = {}
    retry_after = None
    raw = {k.lower(): v for k, v in headers.items()}.get("retry-after")
    if raw is not None:
        try:
            retry_after = float(raw)
        except ValueError:
            retry_after = None
    return errors.error_from_status(status, parsed, retry_after)
