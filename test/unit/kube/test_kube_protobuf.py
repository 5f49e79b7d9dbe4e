"""The protobuf decoders (upb) give what the JSON path gives, on bodies a real API server sent
(test/unit/kube/captured/, written by its capture.py), and refuse what they cannot read faithfully."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from mpioperator.api.objects import Obj
from mpioperator.controller.pod_cache import POD_CACHE_PROJECTION, POD_FIELDS
from mpioperator.kube import errors
from mpioperator.kube.framing import Frames, StreamBroken
from mpioperator.kube.negotiation import ACCEPT_PROTOBUF, UNDECODED, Negotiation
from mpioperator.kube.projection import Projection
from mpioperator.kube.protoapi import MAGIC, ProtoProjection, decode_status, list_continue
from mpioperator.kube.protoschema import LIST_META, OBJECT_META, POD
from mpioperator.kube.protoupb import WireError, as_json, message_class
from mpioperator.kube.resources import PODS, stamp_kind
from mpioperator.kube.transport import error_of
from mpioperator.kube.watch import parse_event
from mpioperator.testing.protobuf_pods import field, varint

CAPTURED = Path(__file__).parent / "captured"
assert POD_CACHE_PROJECTION.protobuf is not None
PROTO: ProtoProjection = POD_CACHE_PROJECTION.protobuf
ObjectMeta: Any = message_class(OBJECT_META)
ListMeta: Any = message_class(LIST_META)


def meta_as_json(data: bytes) -> Obj:
    return as_json(ObjectMeta.FromString(data), OBJECT_META)


def captured(name: str) -> bytes:
    return (CAPTURED / name).read_bytes()


def frames_of(data: bytes, step: int) -> list[bytes]:
    """The watch frames of a stream whose bytes arrive `step` at a time, as a socket delivers them."""
    frames, out = Frames(), []
    for at in range(0, len(data), step):
        out += frames.feed(data[at : at + step])
    return out + frames.finish()


def test_a_protobuf_pod_list_gives_the_same_cached_pods_as_its_json() -> None:
    from_proto = PROTO.list(captured("pods.pb"))
    assert from_proto == POD_CACHE_PROJECTION.list(captured("pods.json"))
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
    # Reads of 7 bytes: frames split across reads.
    frames = frames_of(captured("watch.pb"), 7)
    from_proto = [PROTO.event(frame) for frame in frames]
    lines = [line for line in captured("watch.json").splitlines() if line.strip()]
    assert from_proto == [POD_CACHE_PROJECTION.event(line) for line in lines]
    assert [event["type"] for event in from_proto].count("ADDED") == 5
    assert len(from_proto) >= 10


def test_a_protobuf_error_answer_becomes_its_typed_error() -> None:
    error = error_of(400, {}, captured("bad-continue.pb"))
    assert (error.status, error.reason) == (400, "BadRequest")
    assert "continue" in error.message


def test_a_protobuf_status_reads_as_its_json_would_parse() -> None:
    cause = field(1, b"FieldValueInvalid") + field(2, b"bad \xff") + field(3, b"spec.x")
    details = field(1, b"pi") + field(3, b"pods") + field(4, cause) + bytes([5 << 3, 3])
    status = field(1, b"") + field(2, b"Failure") + field(3, b"no") + field(4, b"Invalid")
    status += field(5, details) + bytes([6 << 3]) + varint(422)
    body = MAGIC + field(1, field(1, b"v1") + field(2, b"Status")) + field(2, status)
    assert decode_status(body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "no",
        "reason": "Invalid",
        "details": {
            "name": "pi",
            "kind": "pods",
            "causes": [{"reason": "FieldValueInvalid", "message": "bad \ufffd", "field": "spec.x"}],
            "retryAfterSeconds": 3,
        },
        "code": 422,
    }
    with pytest.raises(WireError, match="expected a Status"):
        decode_status(captured("pods.pb"))


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


def test_a_field_of_a_wire_type_protobuf_does_not_have_does_not_decode() -> None:
    pod = field(1, field(1, b"a") + bytes([2 << 3 | 7, 0]))
    body = MAGIC + field(1, field(2, b"PodList")) + field(2, field(2, pod))
    with pytest.raises(WireError, match="did not parse"):
        PROTO.list(body)


def test_a_read_field_with_another_wire_type_than_its_schemas_is_left_out() -> None:
    # upb keeps it as an unknown field; the API's field types never change (its compatibility rules).
    name_as_varint = bytes([1 << 3 | 0, 5])
    assert meta_as_json(name_as_varint + field(3, b"ns")) == {"namespace": "ns"}


def test_fields_the_schema_does_not_list_are_passed_over_whatever_their_wire_type() -> None:
    meta = (
        field(1, b"a") + varint(99 << 3 | 0) + varint(150) + field(98, b"x") + varint(97 << 3 | 5) + b"1234"
    )
    assert meta_as_json(meta) == {"name": "a"}


def test_a_zero_time_is_left_out_or_null_as_the_servers_json_shows_it() -> None:
    # creationTimestamp is omitzero (left out); a deletionTimestamp pointer set to the zero time is null.
    assert meta_as_json(field(8, b"") + field(9, b"")) == {"deletionTimestamp": None}


def test_a_time_is_rfc3339_in_utc_to_the_second() -> None:
    seconds_and_nanos = varint(1 << 3) + varint(1_700_000_000) + varint(2 << 3) + varint(7)
    assert meta_as_json(field(8, seconds_and_nanos)) == {"creationTimestamp": "2023-11-14T22:13:20Z"}


def test_a_projection_reads_protobuf_only_through_its_from_message() -> None:
    with pytest.raises(ValueError, match="both or neither"):
        Projection(POD_FIELDS, "Pod", message=POD)


def test_fields_absent_from_the_wire_take_the_values_json_always_shows() -> None:
    pod: Any = message_class(POD).FromString(field(1, field(13, b"")) + field(3, field(2, b"")))
    meta, status = as_json(pod, POD)["metadata"], as_json(pod, POD)["status"]
    assert meta["ownerReferences"] == [{"apiVersion": "", "kind": "", "name": "", "uid": ""}]
    condition = {"type": "", "status": "", "lastProbeTime": None, "lastTransitionTime": None}
    assert status["conditions"] == [condition]


def test_list_metadata_reads_as_its_json_and_its_continue_token_ahead_of_the_items() -> None:
    meta = field(2, b"7") + field(3, b"tok") + bytes([4 << 3, 9])
    assert as_json(ListMeta.FromString(meta), LIST_META) == {
        "resourceVersion": "7",
        "continue": "tok",
        "remainingItemCount": 9,
    }
    body = MAGIC + field(1, field(2, b"PodList")) + field(2, field(1, meta) + field(2, b"\xff"))
    assert list_continue(body) == "tok"  # the broken item after it is never read


def test_a_stream_ending_between_frames_ends_cleanly_and_inside_one_is_an_error() -> None:
    frames = captured("watch.pb")
    assert len(frames_of(frames, 4096)) >= 10
    with pytest.raises(StreamBroken, match="inside a frame"):
        frames_of(frames[:-3], 4096)


def test_a_protobuf_list_that_does_not_decode_turns_the_resource_to_json_with_one_log_line() -> None:
    negotiation = Negotiation()
    assert negotiation.accept(PODS, POD_CACHE_PROJECTION) == ACCEPT_PROTOBUF
    with capture_logs() as logs:
        assert negotiation.decode_list(PODS, PROTO, MAGIC + b"\xff") is None
        with pytest.raises(errors.ApiError, match="did not decode"):
            negotiation.frame_decoder(PODS, PROTO)(b"\x0a\xff")
    assert negotiation.protobuf(PODS, POD_CACHE_PROJECTION) is None
    assert negotiation.accept(PODS, POD_CACHE_PROJECTION) is None
    assert [entry["resource"] for entry in logs] == ["pods"]


def test_only_a_projection_that_knows_its_kinds_message_asks_for_protobuf() -> None:
    assert Negotiation().accept(PODS, Projection(POD_FIELDS, "Pod")) is None
    assert Negotiation().accept(PODS, None) is None
    assert Negotiation(enabled=False).accept(PODS, POD_CACHE_PROJECTION) is None


def test_container_statuses_read_as_the_json_path_reads_them() -> None:
    from_proto = PROTO.list(captured("pods.pb"))
    pods = {pod["metadata"]["name"]: pod["status"] for pod in from_proto["items"]}
    assert pods["running"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 137
    assert from_proto == POD_CACHE_PROJECTION.list(captured("pods.json"))
