"""HTTP/1.1 chunked transfer coding, undone incrementally: for watch bodies read on the loop
(kube/loop_stream.py) and whole answers read by our own client (kube/http1.py)."""

from __future__ import annotations

# A chunk-size line is a hex number and optional extensions; anything longer is not HTTP.
MAX_SIZE_LINE = 4096


class StreamBroken(Exception):
    """The body is not well-formed chunked encoding, or a frame in it is."""


class Dechunker:
    """HTTP/1.1 chunked transfer coding, undone incrementally: `feed` returns the payload bytes that
    the data completes, `done` is set at the last chunk's trailer."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._left = 0  # payload bytes still to come in the current chunk
        self._crlf = False  # the CRLF after a chunk's payload is still to come
        self._trailer = False
        self.done = False

    def feed(self, data: bytes) -> bytes:
        buf = self._buf
        buf += data
        out: list[bytes] = []
        pos = 0
        while not self.done:
            if self._left:
                take = min(self._left, len(buf) - pos)
                if not take:
                    break
                out.append(bytes(buf[pos : pos + take]))
                pos += take
                self._left -= take
                self._crlf = self._left == 0
                continue
            if self._crlf:
                if len(buf) - pos < 2:
                    break
                if buf[pos : pos + 2] != b"\r\n":
                    raise StreamBroken("a chunk's payload is not followed by CRLF")
                pos += 2
                self._crlf = False
                continue
            end = buf.find(b"\r\n", pos)
            if end < 0:
                if len(buf) - pos > MAX_SIZE_LINE:
                    raise StreamBroken("a chunk-size line without its end")
                break
            line = bytes(buf[pos:end])
            pos = end + 2
            if self._trailer:
                self.done = not line  # trailer fields until an empty line
                continue
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise StreamBroken(f"a chunk size that is not hex: {line[:40]!r}") from None
            if size < 0:
                raise StreamBroken("a negative chunk size")
            if size == 0:
                self._trailer = True
            self._left = size
        del buf[:pos]
        return b"".join(out)

    def rest(self) -> bytes:
        """Bytes fed past the end of the body (after `done`)."""
        return bytes(self._buf)
