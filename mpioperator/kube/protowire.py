"""Reading protobuf's wire format: varints, field keys, and the extent of length-delimited fields.

Everything works on offsets into one buffer, so a 30 MB list is never sliced into copies: a decoder
reads a field's key, learns where its bytes start and stop, and either decodes them or jumps past them.
Only what the Kubernetes API's messages use is here: varints, length-delimited fields, and the two fixed
widths (skipped; no kept field uses them).
"""

from __future__ import annotations

import codecs

VARINT = 0
FIXED64 = 1
LEN = 2
FIXED32 = 5

_MAX_VARINT_BYTES = 10
_INT64_SIGN = 1 << 63
_UINT64 = 1 << 64


class WireError(ValueError):
    """The bytes are not a well-formed message (truncated, or a wire type the API never sends)."""


def _each_byte_replaced(exc: UnicodeError) -> tuple[str, int]:
    assert isinstance(exc, UnicodeDecodeError)
    return "\ufffd" * (exc.end - exc.start), exc.end


# Protobuf strings are bytes on the wire and the API server stores them as sent, UTF-8 or not. Its JSON
# (Go's encoding/json) writes each byte that is not part of valid UTF-8 as U+FFFD; Python's "replace"
# would write one U+FFFD for a whole broken sequence. This handler does as Go does, so both encodings
# give the same text.
AS_JSON = "mpioperator.as-json"
codecs.register_error(AS_JSON, _each_byte_replaced)


def text(raw: bytes) -> str:
    """A protobuf string's bytes as the server's JSON shows them."""
    return raw.decode("utf-8", AS_JSON)


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at `pos` and the offset after it."""
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    value = byte & 0x7F
    shift = 7
    pos += 1
    for _ in range(_MAX_VARINT_BYTES - 1):
        if pos >= len(buf):
            break
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise WireError(f"malformed varint ending at offset {pos}")


def signed64(value: int) -> int:
    """An int64 field's value: negative numbers travel as their 64-bit two's complement."""
    return value - _UINT64 if value >= _INT64_SIGN else value


def skip(buf: bytes, pos: int, wire_type: int) -> int:
    """The offset after a field's value of `wire_type` that starts at `pos`."""
    if wire_type == VARINT:
        return varint(buf, pos)[1]
    if wire_type == LEN:
        length, pos = varint(buf, pos)
        return pos + length
    if wire_type == FIXED64:
        return pos + 8
    if wire_type == FIXED32:
        return pos + 4
    raise WireError(f"unsupported wire type {wire_type} at offset {pos}")


def length_delimited(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """The start and stop offsets of the length-delimited value at `pos`, checked against `end`."""
    length, start = varint(buf, pos)
    stop = start + length
    if stop > end:
        raise WireError(f"field of {length} bytes at offset {start} runs past its message's end {end}")
    return start, stop
