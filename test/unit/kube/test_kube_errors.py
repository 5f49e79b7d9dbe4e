from __future__ import annotations

import json

import pytest

from mpioperator.kube import errors
from mpioperator.kube.transport import Answer, decode, error_of


def status_body(code: int, reason: str, message: str = "m") -> bytes:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": message,
        }
    ).encode()


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (404, "NotFound", errors.NotFound),
        (409, "AlreadyExists", errors.AlreadyExists),
        (409, "Conflict", errors.Conflict),
        (410, "Expired", errors.Expired),
        (410, "Gone", errors.Expired),
        (422, "Invalid", errors.Invalid),
        (403, "Forbidden", errors.Forbidden),
        (401, "Unauthorized", errors.Unauthorized),
        (504, "Timeout", errors.ServerTimeout),
    ],
)
def test_status_reason_picks_the_error_type(code: int, reason: str, expected: type[errors.ApiError]) -> None:
    err = error_of(code, {}, status_body(code, reason, "why"))
    assert type(err) is expected
    assert (err.status, err.reason, err.message) == (code, reason, "why")


def test_reason_wins_over_code_so_create_conflicts_are_already_exists() -> None:
    assert type(error_of(409, {}, status_body(409, "AlreadyExists"))) is errors.AlreadyExists


def test_code_alone_types_the_error_when_the_body_is_not_a_status() -> None:
    err = error_of(410, {}, b"<html>gone</html>")
    assert type(err) is errors.Expired
    assert "gone" in err.message


def test_unknown_code_is_a_plain_api_error() -> None:
    err = error_of(500, {}, status_body(500, "InternalError"))
    assert type(err) is errors.ApiError
    assert err.status == 500


def test_too_many_requests_carries_retry_after_from_the_header() -> None:
    err = error_of(429, {"Retry-After": "3"}, status_body(429, "TooManyRequests"))
    assert isinstance(err, errors.TooManyRequests)
    assert err.retry_after == 3.0


def test_too_many_requests_without_a_usable_retry_after_has_none() -> None:
    err = error_of(429, {"retry-after": "soon"}, b"")
    assert isinstance(err, errors.TooManyRequests)
    assert err.retry_after is None


def test_invalid_keeps_the_status_body_with_its_causes() -> None:
    body = json.loads(status_body(422, "Invalid", 'ConfigMap "x" is invalid: metadata.name: Invalid value'))
    body["details"] = {"causes": [{"field": "metadata.name"}]}
    err = error_of(422, {}, json.dumps(body).encode())
    assert isinstance(err, errors.Invalid)
    assert err.body["details"]["causes"][0]["field"] == "metadata.name"
    assert "metadata.name" in str(err)


def test_decode_returns_the_parsed_body_of_a_success() -> None:
    assert decode(Answer(200, {}, b'{"a": 1}')) == {"a": 1}
    assert decode(Answer(202, {}, b"")) == {}


def test_decode_raises_the_typed_error_of_a_failure() -> None:
    with pytest.raises(errors.NotFound):
        decode(Answer(404, {}, status_body(404, "NotFound")))
