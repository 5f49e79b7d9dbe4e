"""API errors typed from the server's Status body, so callers branch on kinds, not codes."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A non-success answer from the API server (or a transport failure, status 0)."""

    def __init__(self, status: int, reason: str, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}

    @property
    def server_message(self) -> str:
        """The API server's own words (its Status message), which is all client-go's error text holds and
        so all that upstream's events and errors carry; the code stands in only when the server said
        nothing."""
        return self.message or (f"{self.status} {self.reason}" if self.reason else f"status {self.status}")


class NotFound(ApiError):
    pass


class AlreadyExists(ApiError):
    pass


class Conflict(ApiError):
    pass


class Expired(ApiError):
    """410 Gone / Expired: the resourceVersion asked for is older than etcd keeps; relist."""


class TooManyRequests(ApiError):
    def __init__(self, *args: Any, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.retry_after = retry_after


class Invalid(ApiError):
    pass


class Forbidden(ApiError):
    pass


class Unauthorized(ApiError):
    pass


class ServerTimeout(ApiError):
    pass


class CredentialPluginError(ApiError):
    """A kubeconfig's exec or auth-provider plugin failed or did not answer in time. Status 0, as a
    transport failure: the call failed before it was sent, and a retry may run the plugin again."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "", message)


class KubeConfigError(Exception):
    """A kubeconfig that cannot be read or lacks what was asked of it (a context, a cluster)."""


class InvalidRequest(ValueError):
    """A request the client refuses to send: its path or a header holds what would change how the request
    is framed on the wire (a CR, LF or NUL), or the path a space."""


class WatchInactive(Exception):
    """A watch connection delivered nothing for longer than its inactivity deadline."""


_BY_REASON: dict[str, type[ApiError]] = {
    "NotFound": NotFound,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Expired": Expired,
    "Gone": Expired,
    "TooManyRequests": TooManyRequests,
    "Invalid": Invalid,
    "Forbidden": Forbidden,
    "Unauthorized": Unauthorized,
    "Timeout": ServerTimeout,
    "ServerTimeout": ServerTimeout,
}
_BY_CODE: dict[int, type[ApiError]] = {
    404: NotFound,
    409: Conflict,
    410: Expired,
    429: TooManyRequests,
    422: Invalid,
    403: Forbidden,
    401: Unauthorized,
    504: ServerTimeout,
}


def error_from_status(code: int, body: dict[str, Any] | None, retry_after: float | None = None) -> ApiError:
    """The typed error for an HTTP status code and its (possibly absent) Status body."""
    body = body or {}
    reason = str(body.get("reason") or "")
    message = str(body.get("message") or "")
    status = int(body.get("code") or code)
    cls = _BY_REASON.get(reason) or _BY_CODE.get(status, ApiError)
    if cls is TooManyRequests:
        return TooManyRequests(status, reason, message, body, retry_after=retry_after)
    return cls(status, reason, message, body)
