"""Protobuf the API server stores as it was sent: strings that are not UTF-8 read as the server's JSON shows
them, and anything else a decoder cannot read turns that resource to JSON instead of failing forever."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from structlog.testing import capture_logs

from mpioperator.api.objects import Obj
from mpioperator.controller.pod_cache import POD_CACHE_PROJECTION
from mpioperator.kube import errors
from mpioperator.kube.negotiation import Negotiation
from mpioperator.kube.projection import Projection
from mpioperator.kube.protoapi import MAGIC, ProtoProjection
from mpioperator.kube.protoschema import POD
from mpioperator.kube.resources import PODS
from mpioperator.testing.protobuf_pods import field, owner_reference

CUT = "Évincé ✓".encode()[:-1]  # a termination message cut inside its last character


def varint_field(number: int, value: int) -> bytes:
    out, key = bytearray(), number << 3
    for part in (key, value):
        while part >= 0x80:
            out.append(part & 0x7F | 0x80)
            part >>= 7
        out.append(part)
    return bytes(out)


def odd_pod(*, created: int = 1_700_000_000) -> bytes:
    owner = owner_reference(b"kubeflow.org/v2beta1", b"MPI\xffJob", b"pi", b"uid-1") + varint_field(6, 1)
    meta = (
        field(1, b"odd")
        + field(3, b"ns")
        + field(5, b"uid-2")
        + field(6, b"7")
        + field(8, varint_field(1, created))
        + field(11, field(1, b"role\xff") + field(2, b"w\xe8\x80"))
        + field(13, owner)
    )
    scheduled = field(1, b"PodScheduled") + field(2, b"False") + field(5, b"Un\xff") + field(6, b"no \xe8")
    terminated = varint_field(1, 1) + field(3, b"Error") + field(4, CUT)
    container = field(1, b"main") + field(2, field(3, terminated))
    ready = field(1, b"Ready\xff") + field(2, b"True")
    status = field(1, b"Failed") + field(2, scheduled) + field(2, ready) + field(3, b"cut \xe8")
    status += field(4, b"Evict\xff")
    status += field(8, container)
    return field(1, meta) + field(3, status)


def pod_list(*pods: bytes) -> bytes:
    items = field(1, field(2, b"9")) + b"".join(field(2, pod) for pod in pods)
    return MAGIC + field(1, field(1, b"v1") + field(2, b"PodList")) + field(2, items)


# The same pod as the API server's JSON shows it: each byte that is not part of UTF-8 as U+FFFD.
ODD_POD_AS_JSON: Obj = {
    "metadata": {
        "name": "odd",
        "namespace": "ns",
        "uid": "uid-2",
        "resourceVersion": "7",
        "creationTimestamp": "2023-11-14T22:13:20Z",
        "labels": {"role\ufffd": "w\ufffd\ufffd"},
        "ownerReferences": [
            {
                "apiVersion": "kubeflow.org/v2beta1",
                "kind": "MPI\ufffdJob",
                "name": "pi",
                "uid": "uid-1",
                "controller": True,
            }
        ],
    },
    "status": {
        "phase": "Failed",
        "message": "cut \ufffd",
        "reason": "Evict\ufffd",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Un\ufffd", "message": "no \ufffd"},
            {"type": "Ready\ufffd", "status": "True"},
        ],
        "containerStatuses": [
            {
                "name": "main",
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 1, "reason": "Error", "message": "Évincé \ufffd\ufffd"}},
                "lastState": {},
            }
        ],
    },
}


def as_json(projection: Projection) -> list[Obj]:
    listed = orjson.dumps(
        {"kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": [ODD_POD_AS_JSON]}
    )
    items: list[Obj] = projection.list(listed)["items"]
    return items


def protobuf(projection: Projection) -> ProtoProjection:
    assert projection.protobuf is not None
    return projection.protobuf


def test_a_pod_with_strings_that_are_not_utf8_decodes_from_protobuf_as_from_the_servers_json() -> None:
    from_proto = protobuf(POD_CACHE_PROJECTION).list(pod_list(odd_pod()))["items"]
    assert from_proto == as_json(POD_CACHE_PROJECTION)
    assert from_proto[0]["metadata"]["ownerReferences"][0]["kind"] == "MPI\ufffdJob"


def test_the_termination_message_cut_inside_a_character_is_text_not_the_repr_of_bytes() -> None:
    (pod,) = protobuf(POD_CACHE_PROJECTION).list(pod_list(odd_pod()))["items"]
    message = pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"]
    assert message == "Évincé \ufffd\ufffd"  # Go writes a U+FFFD per bad byte; Python's "replace" one in all


def test_a_time_out_of_range_turns_pods_to_json_with_one_log_line() -> None:
    negotiation = Negotiation()
    body = pod_list(odd_pod(created=1 << 62))
    with capture_logs() as logs:
        assert negotiation.decode_list(PODS, protobuf(POD_CACHE_PROJECTION), body) is None
    assert negotiation.protobuf(PODS, POD_CACHE_PROJECTION) is None
    assert [(entry["resource"], entry["log_level"]) for entry in logs] == [("pods", "warning")]


def raising(exc: BaseException) -> ProtoProjection:
    def decode(_: object) -> Obj:
        raise exc

    return ProtoProjection(POD, decode)


@pytest.mark.parametrize(
    "exc", [TypeError("intern"), OverflowError("year"), OSError("gmtime"), KeyError("x")]
)
def test_any_error_of_a_protobuf_decoder_turns_the_resource_to_json_for_lists_and_watches(
    exc: Exception,
) -> None:
    for_list, for_watch = Negotiation(), Negotiation()
    with capture_logs() as logs:
        assert for_list.decode_list(PODS, raising(exc), pod_list(odd_pod())) is None
        frame = field(1, b"ADDED") + field(
            2, field(1, MAGIC + field(1, field(2, b"Pod")) + field(2, odd_pod()))
        )
        with pytest.raises(errors.ApiError, match="did not decode"):
            for_watch.frame_decoder(PODS, raising(exc))(frame)
    assert for_list.protobuf(PODS, POD_CACHE_PROJECTION) is None
    assert for_watch.protobuf(PODS, POD_CACHE_PROJECTION) is None
    assert len(logs) == 2


@pytest.mark.parametrize("exc", [asyncio.CancelledError(), KeyboardInterrupt()])
def test_cancellation_and_interrupts_go_through_a_protobuf_decoder_untouched(exc: BaseException) -> None:
    negotiation = Negotiation()
    with pytest.raises(type(exc)):
        negotiation.decode_list(PODS, raising(exc), pod_list(odd_pod()))
    assert negotiation.protobuf(PODS, POD_CACHE_PROJECTION) is not None
