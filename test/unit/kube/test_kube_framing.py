"""Streamed bodies cut into their units however their bytes arrive: protobuf frames at their lengths,
JSON watch lines without their blank keep-alives, log lines with theirs."""

from __future__ import annotations

import json

import pytest

from mpioperator.kube.framing import Frames, Lines, LogLines, StreamBroken


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def test_frames_are_cut_at_their_lengths_and_a_partial_one_at_the_end_is_an_error() -> None:
    frames = Frames()
    wire = frame(b"one") + frame(b"") + frame(b"three")
    assert frames.feed(wire[:5]) == []
    assert frames.feed(wire[5:]) == [b"one", b"", b"three"]
    assert frames.finish() == []
    frames.feed(frame(b"cut")[:5])
    with pytest.raises(StreamBroken, match="inside a frame"):
        frames.finish()


@pytest.mark.parametrize("step", [1, 2, 3, 5, 37])
def test_frames_come_out_whole_and_in_order_however_the_stream_is_split(step: int) -> None:
    payloads = [bytes([i]) * (i * 7) for i in range(40)]
    wire = b"".join(frame(p) for p in payloads)
    frames, out = Frames(), []
    for at in range(0, len(wire), step):
        out += frames.feed(wire[at : at + step])
    out += frames.finish()
    assert out == payloads


def test_a_frame_announced_over_the_cap_is_refused_before_its_bytes_come() -> None:
    with pytest.raises(StreamBroken, match="watch frame of"):
        Frames().feed((1 << 30).to_bytes(4, "big"))


def test_lines_drop_blank_keep_alives_and_the_last_line_needs_no_newline() -> None:
    lines = Lines()
    assert lines.feed(b'{"a":1}\n\n  \n{"b"') == [b'{"a":1}']
    assert lines.feed(b':2}\n{"c":3}') == [b'{"b":2}']
    assert lines.finish() == [b'{"c":3}']


@pytest.mark.parametrize("step", [1, 2, 7, 64])
def test_lines_come_out_whole_and_in_order_however_the_stream_is_split(step: int) -> None:
    events = [json.dumps({"type": "ADDED", "object": {"i": i}}).encode() for i in range(50)]
    wire = b"\n".join(events) + b"\n"
    lines, out = Lines(), []
    for at in range(0, len(wire), step):
        out += lines.feed(wire[at : at + step])
    out += lines.finish()
    assert out == events


def test_log_lines_keep_their_newlines_and_blank_ones_and_the_last_comes_at_the_end() -> None:
    lines = LogLines()
    assert lines.feed(b"rank 0\n\nran") == [b"rank 0\n", b"\n"]
    assert lines.feed(b"k 1\r\nno end") == [b"rank 1\r\n"]
    assert lines.finish() == [b"no end"]


def test_a_log_line_past_its_cap_is_handed_on_in_pieces_rather_than_held() -> None:
    lines = LogLines(max_line=8)
    assert lines.feed(b"1234") == []
    assert lines.feed(b"56789") == [b"123456789"]
    assert lines.feed(b"ab\n") == [b"ab\n"]
