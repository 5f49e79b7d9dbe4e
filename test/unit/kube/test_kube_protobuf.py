"""The protobuf pod decoder gives the JSON projection's dicts, on bodies a real API server sent
(test/unit/kube/captured/, written by its capture.py), and refuses what it cannot read faithfully."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from mpioperator.api.objects import Obj
from mpioperator.controller.pod_cache import POD_FIELDS, POD_PROJECTION
from mpioperator.kube import errors
from mpioperator.kube.client import stamp_kind
from mpioperator.kube.negotiation import ACCEPT_PROTOBUF, UNDECODED, Negotiation
from mpioperator.kube.projection import KEEP, Projection
from mpioperator.kube.protoapi import MAGIC, ProtoProjection, read_frames
from mpioperator.kube.protodecode import Plan
from mpioperator.kube.protoschema import OBJECT_META, POD
from mpioperator.kube.protowire import WireError
from mpioperator.kube.resources import PODS
from mpioperator.kube.transport import error_of
from mpioperator.kube.watch import parse_event
from mpioperator.testing.protobuf_pods import field, varint

CAPTURED = Path(__file__).parent / "captured"
assert POD_PROJECTION.protobuf is not None
PROTO: ProtoProjection = POD_PROJECTION.protobuf


def captured(name: str) -> bytes:
    return (CAPTURED / name).read_bytes()


def reader(data: bytes, step: int) -> Callable[[int], bytes]:
    """A stream's read(n): at most `step` bytes at a time, never more than asked, b"" at the end."""
    offset = 0

    def read(n: int) -> bytes:
        nonlocal offset
        chunk = data[offset : offset + min(n, step)]
        offset += len(chunk)
        return chunk

    return read


def test_a_protobuf_pod_list_projects_to_the_same_dicts_as_its_json() -> None:
    from_proto = PROTO.list(captured("pods.pb"))
    assert from_proto == POD_PROJECTION.list(captured("pods.json"))
    pods = {pod["metadata"]["name"]: pod for pod in from_proto["items"]}
    assert set(pods) == {"pending", "running", "failed", "succeeded", "deleted"}
    assert pods["deleted"]["metadata"]["deletionTimestamp"].endswith("Z")
    assert pods["failed"]["status"]["message"].endswith("Évincé ✓")
    refs = pods["failed"]["metadata"]["ownerReferences"]
    assert [ref.get("controller") for ref in refs] == [False, None]
    assert pods["running"]["status"]["conditions"][2] == {"type": "Ready", "status": "True"}
    assert pods["pending"]["metadata"]["labels"] == {"app": "a", "empty": ""}
    assert from_proto["metadata"]["resourceVersion"]


def test_protobuf_watch_frames_give_the_same_events_as_json_watch_lines() -> None:
    # Reads of 7 bytes: frames split across reads, as a socket delivers them.
    frames = list(read_frames(reader(captured("watch.pb"), 7)))
    from_proto = [PROTO.event(frame) for frame in frames]
    lines = [line for line in captured("watch.json").splitlines() if line.strip()]
    assert from_proto == [POD_PROJECTION.event(line) for line in lines]
    assert [event["type"] for event in from_proto].count("ADDED") == 5
    assert len(from_proto) >= 10


def test_a_protobuf_error_answer_becomes_its_typed_error() -> None:
    error = error_of(400, {}, captured("bad-continue.pb"))
    assert (error.status, error.reason) == (400, "BadRequest")
    assert "continue" in error.message


def test_an_error_watch_frame_raises_its_typed_error() -> None:
    frame = field(1, b"ERROR") + field(2, field(1, captured("bad-continue.pb")))
    with pytest.raises(errors.ApiError) as raised:
        parse_event(frame, stamp_kind(PODS), PROTO.event)
    assert raised.value.status == 400


def test_a_truncated_list_does_not_decode() -> None:
    body = captured("pods.pb")
    with pytest.raises(UNDECODED):
        PROTO.list(body[: len(body) // 2])


def test_a_list_of_another_kind_does_not_decode() -> None:
    body = captured("pods.pb").replace(b"PodList", b"PodLisx", 1)
    with pytest.raises(WireError, match="PodLisx"):
        PROTO.list(body)


def test_an_envelope_with_a_content_encoding_does_not_decode() -> None:
    with pytest.raises(WireError, match="gzip"):
        PROTO.list(captured("pods.pb") + field(3, b"gzip"))


def test_a_body_without_the_envelope_does_not_decode() -> None:
    with pytest.raises(WireError):
        PROTO.list(captured("pods.json"))


def test_a_kept_field_with_another_wire_type_does_not_decode() -> None:
    name_as_varint = bytes([1 << 3 | 0, 5])
    with pytest.raises(WireError, match="wire type"):
        Plan(OBJECT_META, {"name": KEEP}).decode(name_as_varint, 0, len(name_as_varint))


def test_fields_not_kept_are_skipped_whatever_their_wire_type() -> None:
    meta = field(1, b"a") + bytes([7 << 3 | 0, 0x96, 0x01]) + field(12, field(1, b"k") + field(2, b"v"))
    assert Plan(OBJECT_META, {"name": KEEP}).decode(meta, 0, len(meta)) == {"name": "a"}


def test_a_zero_time_is_left_out_or_null_as_the_servers_json_shows_it() -> None:
    # creationTimestamp is omitzero (left out); a deletionTimestamp pointer set to the zero time is null.
    meta = field(8, b"") + field(9, b"")
    spec = {"creationTimestamp": KEEP, "deletionTimestamp": KEEP}
    assert Plan(OBJECT_META, spec).decode(meta, 0, len(meta)) == {"deletionTimestamp": None}


def test_a_time_is_rfc3339_in_utc_to_the_second() -> None:
    seconds_and_nanos = varint(1 << 3) + varint(1_700_000_000) + varint(2 << 3) + varint(7)
    meta = field(8, seconds_and_nanos)
    plan = Plan(OBJECT_META, {"creationTimestamp": KEEP})
    assert plan.decode(meta, 0, len(meta)) == {"creationTimestamp": "2023-11-14T22:13:20Z"}


def test_a_message_the_schema_does_not_list_whole_cannot_be_kept_whole() -> None:
    with pytest.raises(ValueError, match="cannot be kept whole"):
        Projection({"metadata": KEEP}, "Pod", message=POD)


def test_fields_absent_from_the_wire_take_the_values_json_always_shows() -> None:
    pod = field(1, field(13, b"")) + field(3, field(2, b""))  # an owner reference and a condition, empty
    spec: Obj = {"metadata": {"ownerReferences": KEEP}, "status": {"conditions": [{"type": KEEP}]}}
    decoded = Plan(POD, spec).decode(pod, 0, len(pod))
    empty_ref = {"apiVersion": "", "kind": "", "name": "", "uid": ""}
    assert decoded == {"metadata": {"ownerReferences": [empty_ref]}, "status": {"conditions": [{"type": ""}]}}


def test_a_stream_ending_between_frames_ends_cleanly_and_inside_one_is_an_error() -> None:
    frames = captured("watch.pb")
    assert len(list(read_frames(reader(frames, 4096)))) >= 10
    with pytest.raises(WireError, match="inside a frame"):
        list(read_frames(reader(frames[:-3], 4096)))


def test_a_protobuf_list_that_does_not_decode_turns_the_resource_to_json_with_one_log_line() -> None:
    negotiation = Negotiation()
    assert negotiation.accept(PODS, POD_PROJECTION) == ACCEPT_PROTOBUF
    with capture_logs() as logs:
        assert negotiation.decode_list(PODS, PROTO, MAGIC + b"\xff") is None
        with pytest.raises(errors.ApiError, match="did not decode"):
            negotiation.frame_decoder(PODS, PROTO)(b"\x0a\xff")
    assert negotiation.protobuf(PODS, POD_PROJECTION) is None
    assert negotiation.accept(PODS, POD_PROJECTION) is None
    assert [entry["resource"] for entry in logs] == ["pods"]


def test_only_a_projection_that_knows_its_kinds_message_asks_for_protobuf() -> None:
    assert Negotiation().accept(PODS, Projection(POD_FIELDS, "Pod")) is None
    assert Negotiation().accept(PODS, None) is None
    assert Negotiation(enabled=False).accept(PODS, POD_PROJECTION) is None


def test_container_statuses_decode_as_json_shows_them_zero_counts_and_codes_included() -> None:
    # The shape issue 17's pod cache keeps: waiting/running/terminated states and the restart count.
    ended: Obj = {"reason": KEEP, "exitCode": KEEP, "message": KEEP}
    container: Obj = {
        "restartCount": KEEP,
        "state": {"waiting": {"reason": KEEP}, "running": {"startedAt": KEEP}, "terminated": ended},
        "lastState": {"terminated": ended},
    }
    status = {**POD_FIELDS["status"], "containerStatuses": [container], "initContainerStatuses": [container]}  # type: ignore[dict-item]
    projection = Projection({**POD_FIELDS, "status": status}, "Pod", message=POD)
    assert projection.protobuf is not None
    from_proto = projection.protobuf.list(captured("pods.pb"))
    assert from_proto == projection.list(captured("pods.json"))
    pods = {pod["metadata"]["name"]: pod["status"] for pod in from_proto["items"]}
    assert pods["succeeded"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert pods["running"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 137
    assert pods["failed"]["containerStatuses"][0]["lastState"] == {}
