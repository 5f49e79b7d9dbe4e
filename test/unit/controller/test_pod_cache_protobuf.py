"""Pods read from protobuf by upb straight into their slim form equal the slim form of their JSON.

The reference is `protoupb.as_json`, which reads a message as the server's JSON shows it by the schema's
rules for zero values (held to bodies a real API server sent, as protobuf and as JSON, below and in
test/unit/kube/test_kube_protobuf.py), then `slim_pod`. Pods are generated as protobuf messages with any
mix of the fields the cache reads, including the empty strings, zero times and unset pointers where
protobuf and JSON differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpioperator.controller.pod_cache import POD_CACHE_PROJECTION, POD_FIELDS, slim_pod, slim_pod_message
from mpioperator.controller.problems import STUCK_REASONS
from mpioperator.kube.framing import Frames
from mpioperator.kube.projection import Projection
from mpioperator.kube.protoapi import MAGIC, ProtoProjection, unwrap
from mpioperator.kube.protoschema import POD, Field, Message
from mpioperator.kube.protoupb import WireError, as_json, message_class
from mpioperator.testing.protobuf_pods import field

CAPTURED = Path(__file__).parents[1] / "kube" / "captured"
PodMessage: Any = message_class(POD)
assert POD_CACHE_PROJECTION.protobuf is not None
CACHED: ProtoProjection = POD_CACHE_PROJECTION.protobuf
POD_LIST = Message("PodList", (Field(2, "items", "message", POD, repeated=True),))

texts = st.sampled_from(["", "a", "ContainerCreating", "Évincé ✓", "x" * 1500, *STUCK_REASONS, "OOMKilled"])
seconds = st.one_of(st.none(), st.just(0), st.integers(min_value=1, max_value=4_000_000_000))


def set_time(parent: Any, name: str, value: int | None, *, empty: bool = False) -> None:
    if empty:
        getattr(parent, name).SetInParent()  # the zero time: an empty message
    elif value is not None:
        getattr(parent, name).seconds = value


@st.composite
def terminated(draw: st.DrawFn, parent: Any) -> None:
    parent.SetInParent()
    parent.exitCode = draw(st.sampled_from([0, 1, 2, 137, -1]))
    for key in ("reason", "message"):
        if draw(st.booleans()):
            setattr(parent, key, draw(texts))


@st.composite
def pods(draw: st.DrawFn) -> bytes:
    pod = PodMessage()
    meta = pod.metadata
    for key in ("name", "namespace", "uid", "resourceVersion", "generateName"):
        if draw(st.booleans()):
            setattr(meta, key, draw(texts))
    set_time(meta, "creationTimestamp", draw(seconds), empty=draw(st.booleans()))
    if draw(st.booleans()):
        set_time(meta, "deletionTimestamp", draw(seconds), empty=draw(st.booleans()))
    for _ in range(draw(st.integers(0, 2))):
        ref = meta.ownerReferences.add(
            apiVersion=draw(texts), kind=draw(texts), name=draw(texts), uid=draw(texts)
        )
        for key in ("controller", "blockOwnerDeletion"):
            if draw(st.booleans()):
                setattr(ref, key, draw(st.booleans()))
    for _ in range(draw(st.integers(0, 3))):
        meta.labels.add(key=draw(texts), value=draw(texts))
    if draw(st.booleans()):
        pod.spec.nodeName = draw(texts)
    status = pod.status
    for key in ("phase", "reason", "message", "hostIP", "podIP"):
        if draw(st.booleans()):
            setattr(status, key, draw(texts))
    for _ in range(draw(st.integers(0, 3))):
        condition = status.conditions.add(
            type=draw(st.sampled_from(["PodScheduled", "Ready", "DisruptionTarget", ""])),
            status=draw(st.sampled_from(["True", "False", ""])),
        )
        for key in ("reason", "message"):
            if draw(st.booleans()):
                setattr(condition, key, draw(texts))
    for statuses in (status.containerStatuses, status.initContainerStatuses):
        for _ in range(draw(st.integers(0, 2))):
            container = statuses.add(name=draw(texts), restartCount=draw(st.sampled_from([0, 0, 3])))
            state = container.state
            which = draw(st.sampled_from(["none", "waiting", "running", "terminated", "empty-running"]))
            if which == "waiting":
                state.waiting.SetInParent()
                for key in ("reason", "message"):
                    if draw(st.booleans()):
                        setattr(state.waiting, key, draw(texts))
            elif which == "running":
                set_time(state.running, "startedAt", draw(seconds))
                state.running.SetInParent()
            elif which == "empty-running":
                state.running.SetInParent()
            elif which == "terminated":
                draw(terminated(state.terminated))
            if draw(st.booleans()):
                draw(terminated(container.lastState.terminated))
    data: bytes = pod.SerializeToString()
    return data


@settings(max_examples=400, deadline=None)
@given(pods())
def test_a_pod_from_upb_is_the_slim_pod_of_its_json(data: bytes) -> None:
    reference = slim_pod(as_json(PodMessage.FromString(data), POD))
    assert slim_pod_message(PodMessage.FromString(data)) == reference
    # And through the list decoder, as the informer reads it.
    body = MAGIC + field(1, field(2, b"PodList")) + field(2, field(2, data))
    assert CACHED.list(body)["items"] == [reference]


def captured_pods() -> list[Any]:
    body = (CAPTURED / "pods.pb").read_bytes()
    _, start, stop = unwrap(body, 0, len(body))
    listed: Any = message_class(POD_LIST).FromString(body[start:stop])
    return list(listed.items)


def test_a_captured_pod_list_gives_the_same_cached_pods_from_protobuf_and_json() -> None:
    from_proto = CACHED.list((CAPTURED / "pods.pb").read_bytes())
    from_json = POD_CACHE_PROJECTION.list((CAPTURED / "pods.json").read_bytes())
    assert from_proto == from_json
    projected = Projection(POD_FIELDS, "Pod").list((CAPTURED / "pods.json").read_bytes())
    assert from_json["items"] == [slim_pod(pod) for pod in projected["items"]]
    assert len(from_proto["items"]) == 5


def test_the_reference_reads_captured_pods_as_the_servers_json_shows_them() -> None:
    whole = orjson.loads((CAPTURED / "pods.json").read_bytes())["items"]
    assert [slim_pod(as_json(pod, POD)) for pod in captured_pods()] == [slim_pod(pod) for pod in whole]


def test_captured_watch_frames_give_the_same_cached_pods_as_json_lines() -> None:
    frames = Frames().feed((CAPTURED / "watch.pb").read_bytes())
    from_proto = [CACHED.event(frame) for frame in frames]
    lines = [line for line in (CAPTURED / "watch.json").read_bytes().splitlines() if line.strip()]
    from_json = [POD_CACHE_PROJECTION.event(line) for line in lines]
    assert from_proto == from_json
    objects = [event["object"] for event in from_json if event["type"] != "BOOKMARK"]
    assert objects and all(set(obj) == {"apiVersion", "kind", "metadata", "status"} for obj in objects)


def test_a_truncated_pod_does_not_decode_so_the_resource_falls_back_to_json() -> None:
    data = (CAPTURED / "pods.pb").read_bytes()
    with pytest.raises(WireError):
        CACHED.list(data[: len(data) - 7])
    # Cut inside a pod whose list still says where it ends: upb refuses the pod itself.
    pod = captured_pods()[0].SerializeToString()
    body = MAGIC + field(1, field(2, b"PodList")) + field(2, field(2, pod[: len(pod) - 3]))
    with pytest.raises(WireError, match="did not parse"):
        CACHED.list(body)


def test_a_projection_that_finishes_json_must_build_the_same_form_from_protobuf() -> None:
    with pytest.raises(ValueError, match="together"):
        Projection({"metadata": None}, finish=slim_pod)


def test_a_pod_from_protobuf_keeps_the_node_it_is_bound_to() -> None:
    pod = PodMessage()
    pod.metadata.name = "pi-worker-1"
    pod.status.phase = "Running"
    # Pod.spec is field 2; PodSpec.nodeName is field 10.
    data = pod.SerializeToString() + field(2, field(10, b"node-c"))

    slim = slim_pod_message(PodMessage.FromString(data))

    assert slim.get("spec") == {"nodeName": "node-c"}, slim
    body = MAGIC + field(1, field(2, b"PodList")) + field(2, field(2, data))
    assert CACHED.list(body)["items"] == [slim]


def test_pods_from_protobuf_share_the_kubelet_conditions_those_from_json_do() -> None:
    pod = PodMessage()
    pod.metadata.name = "pi-worker-1"
    condition = pod.status.conditions.add()
    condition.type, condition.status = "ContainersReady", "True"
    data = pod.SerializeToString()

    from_protobuf = slim_pod_message(PodMessage.FromString(data))["status"]["conditions"][0]
    from_json = slim_pod(as_json(PodMessage.FromString(data), POD))["status"]["conditions"][0]

    assert from_protobuf == {"type": "ContainersReady", "status": "True"}
    assert from_protobuf is from_json
