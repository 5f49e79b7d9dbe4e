"""Cutting a streamed body into its units as the bytes arrive: protobuf watch frames, JSON watch lines,
log lines. Each is fed what one read of the stream returned and hands back the units it completed; the
bytes already seen are never searched again, and no unit may grow past its cap.
"""

from __future__ import annotations

from mpioperator.kube.protoapi import MAX_FRAME


class StreamBroken(Exception):
    """The stream is not what its kind promises: a frame or line over its cap, or cut inside one."""


class Frames:
    """Protobuf watch frames: a 4-byte big-endian length, then that many bytes."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf
        buf += data
        out: list[bytes] = []
        pos = 0
        while len(buf) - pos >= 4:
            length = int.from_bytes(buf[pos : pos + 4], "big")
            if length > MAX_FRAME:
                raise StreamBroken(f"watch frame of {length} bytes")
            if len(buf) - pos - 4 < length:
                break
            out.append(bytes(buf[pos + 4 : pos + 4 + length]))
            pos += 4 + length
        del buf[:pos]
        return out

    def finish(self) -> list[bytes]:
        if self._buf:
            raise StreamBroken(f"watch stream ended inside a frame ({len(self._buf)} bytes left)")
        return []


# A watch line is one event: an object and a few bytes around it. The API server refuses request bodies
# over 3 MiB and etcd keeps values up to 1.5 MiB by default (clusters that raise --max-request-bytes stay
# near 10 MiB); an object's JSON is at most a few times what it stores. The protobuf frame cap, 64 MiB, is
# that many times over, and keeps a stream that never sends a newline from growing one line without end.
MAX_LINE = MAX_FRAME


class Lines:
    """JSON watch events, one a line; blank lines (keep-alives) are dropped. A line longer than
    `max_line` bytes is a broken stream (StreamBroken)."""

    def __init__(self, max_line: int | None = None) -> None:
        # The start of a line, as read: joined once, when its end comes. Growing one buffer instead
        # would copy a long line over and over as the buffer is reallocated.
        self._parts: list[bytes] = []
        self._size = 0
        self._max = MAX_LINE if max_line is None else max_line

    def feed(self, data: bytes) -> list[bytes]:
        # Only the new bytes are searched: what came before holds no newline.
        end = data.rfind(b"\n")
        if end < 0:
            self._parts.append(data)
            self._size += len(data)
            self._check(self._size)
            return []
        head = data if end == len(data) - 1 else data[: end + 1]
        whole = b"".join((*self._parts, head)) if self._parts else head
        rest = data[end + 1 :]
        self._parts, self._size = ([rest] if rest else []), len(rest)
        self._check(self._size)
        lines = [line for line in whole.split(b"\n") if line and not line.isspace()]
        if len(whole) > self._max:
            self._check(max(map(len, lines), default=0))
        return lines

    def _check(self, length: int) -> None:
        if length > self._max:
            raise StreamBroken(f"a watch line of more than {self._max} bytes")

    def finish(self) -> list[bytes]:
        rest = b"".join(self._parts).strip()
        self._parts, self._size = [], 0
        return [rest] if rest else []


# A followed log line is text a program wrote; one longer than this is handed on in pieces of this size
# rather than held whole (the kubelet already splits lines over 16 KiB).
MAX_LOG_LINE = 1 << 20


class LogLines:
    """The lines of a followed log, each with its newline, blank ones included; the last one without a
    newline comes at the end of the stream."""

    def __init__(self, max_line: int = MAX_LOG_LINE) -> None:
        self._parts: list[bytes] = []
        self._size = 0
        self._max = max_line

    def feed(self, data: bytes) -> list[bytes]:
        end = data.rfind(b"\n")
        if end < 0:
            self._parts.append(data)
            self._size += len(data)
            if self._size < self._max:
                return []
            return self.finish()
        whole = b"".join((*self._parts, data[: end + 1]))
        rest = data[end + 1 :]
        self._parts, self._size = ([rest] if rest else []), len(rest)
        return [line + b"\n" for line in whole[:-1].split(b"\n")]

    def finish(self) -> list[bytes]:
        rest = b"".join(self._parts)
        self._parts, self._size = [], 0
        return [rest] if rest else []


Splitter = Frames | Lines | LogLines
