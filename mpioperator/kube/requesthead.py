"""What may go into a request's head: its target and its header fields are checked before anything is
sent, so no value (an object's name, a namespace, a token) can end a line or the head early and write a
header or a request of its own.

The target may hold only visible ASCII: no control character and no space (as http.client refuses, and
urllib3 with it), nothing a latin-1 encoding would send as raw bytes. A name or namespace holding one is
the caller's mistake, named in the error, never a request (Kubernetes names are ASCII; queries are
encoded). A header's name must be an HTTP token and its value free of CR, LF and NUL (RFC 9110 5.5). The
error names the header, never its value, which may be a credential.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from mpioperator.kube.errors import InvalidRequest

_VISIBLE_ASCII = bytes(range(0x21, 0x7F))
_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VALUE_UNSAFE = re.compile(r"[\r\n\x00]")


def check_target(target: str) -> str:
    # Every request pays this: deleting the allowed bytes in C is a few times faster than a regex search.
    if target.isascii() and not target.encode("ascii").translate(None, _VISIBLE_ASCII):
        return target
    bad = next(c for c in target if not 0x21 <= ord(c) < 0x7F)
    raise InvalidRequest(
        f"request path {target[:200]!r} holds {bad!r}: a name or namespace cannot hold a control character,"
        " a space or a character outside ASCII"
    )


def check_header(name: str, value: str) -> None:
    if _NAME.fullmatch(name) is None:
        raise InvalidRequest(f"header name {name[:80]!r} is not an HTTP token")
    if _VALUE_UNSAFE.search(value) is not None:
        raise InvalidRequest(f"the value of header {name!r} holds a CR, LF or NUL")


def check_headers(headers: Mapping[str, str]) -> Mapping[str, str]:
    for name, value in headers.items():
        check_header(name, value)
    return headers
