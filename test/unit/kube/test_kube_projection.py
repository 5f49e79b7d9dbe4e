"""A projection parses only the fields it names, and falls back to parsing whole where its shape does not fit."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mpioperator.api.objects import Obj
from mpioperator.kube import errors
from mpioperator.kube.projection import KEEP, KEY_NAMES, FieldSpec, Projection
from mpioperator.kube.protoschema import POD
from mpioperator.kube.resources import PODS, stamp_kind
from mpioperator.kube.watch import parse_event

SPEC: FieldSpec = {
    "metadata": {"name": KEEP, "labels": KEEP, "ownerReferences": KEEP},
    "status": {"phase": KEEP, "conditions": [{"type": KEEP, "status": KEEP}]},
}
PROJECTION = Projection(SPEC, "Test")


def pod(name: str, **status: Any) -> Obj:
    return {
        "metadata": {
            "name": name,
            "labels": {"role": "worker"},
            "ownerReferences": [{"kind": "MPIJob", "name": "pi", "controller": True}],
            "managedFields": [{"manager": "kube-scheduler", "fieldsV1": {"f:status": {}}}],
        },
        "spec": {"containers": [{"name": "c", "image": "i", "args": ["--x"] * 20}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-23T00:00:00Z"}],
            "containerStatuses": [{"name": "c", "ready": True}],
            **status,
        },
    }


def body(obj: Obj) -> bytes:
    return orjson.dumps(obj)


def test_a_listed_item_keeps_only_the_named_fields_and_kept_fields_whole() -> None:
    listed = PROJECTION.list(body({"kind": "PodList", "metadata": {}, "items": [pod("a")]}))
    assert listed["items"] == [
        {
            "metadata": {
                "name": "a",
                "labels": {"role": "worker"},
                "ownerReferences": [{"kind": "MPIJob", "name": "pi", "controller": True}],
            },
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }
    ]


def test_a_lists_metadata_is_kept_whole_for_paging() -> None:
    meta = {"resourceVersion": "42", "continue": "token", "remainingItemCount": 3}
    listed = PROJECTION.list(body({"metadata": meta, "items": []}))
    assert listed["metadata"] == meta


def test_absent_and_null_fields_are_accepted() -> None:
    listed = PROJECTION.list(
        body({"metadata": {}, "items": [{"metadata": {"name": "a"}, "status": {"conditions": None}}, {}]})
    )
    assert listed["items"] == [{"metadata": {"name": "a"}, "status": {"conditions": None}}, {}]


def test_a_page_whose_shape_does_not_fit_is_parsed_whole() -> None:
    odd = pod("odd")
    odd["status"]["conditions"] = "not a list"
    page = {"metadata": {"continue": "t"}, "items": [pod("a"), odd]}
    assert PROJECTION.list(body(page)) == page


def test_a_watch_event_keeps_its_type_and_a_projected_object() -> None:
    event = PROJECTION.event(body({"type": "MODIFIED", "object": pod("a", phase="Succeeded")}))
    assert event["type"] == "MODIFIED"
    assert event["object"]["status"] == {
        "phase": "Succeeded",
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    assert "spec" not in event["object"]
    assert "managedFields" not in event["object"]["metadata"]


def test_an_error_events_status_object_is_parsed_whole_and_raises_its_typed_error() -> None:
    status = {"kind": "Status", "status": "Failure", "reason": "Expired", "code": 410, "message": "too old"}
    line = body({"type": "ERROR", "object": status})
    assert PROJECTION.event(line) == {"type": "ERROR", "object": status}
    with pytest.raises(errors.Expired):
        parse_event(line, stamp_kind(PODS), PROJECTION.event)


def test_an_error_event_that_happens_to_fit_the_shape_is_still_parsed_whole() -> None:
    status = {"kind": "Status", "reason": "Expired", "code": 410, "metadata": {}}
    assert PROJECTION.event(body({"type": "ERROR", "object": status}))["object"]["code"] == 410


def test_a_projected_watch_event_is_stamped_with_its_kind() -> None:
    event = parse_event(body({"type": "ADDED", "object": pod("a")}), stamp_kind(PODS), PROJECTION.event)
    assert (event["object"]["kind"], event["object"]["apiVersion"]) == ("Pod", "v1")
    assert event["object"]["metadata"]["name"] == "a"


def test_malformed_json_fails_as_it_does_without_a_projection() -> None:
    with pytest.raises(orjson.JSONDecodeError):
        PROJECTION.list(b'{"items": [')
    with pytest.raises(orjson.JSONDecodeError):
        PROJECTION.event(b'{"type": "ADDED", "object": ')


SECRETS_ONLY_NAMES = Projection({"metadata": {"name": KEEP}, "data": KEY_NAMES}, "Names")
SECRET = {"metadata": {"name": "s", "annotations": {"a": "b"}}, "type": "Opaque", "data": {"k": "dmFs"}}


def test_key_names_keep_a_mappings_keys_with_no_values_from_lists_and_watch_events() -> None:
    listed = SECRETS_ONLY_NAMES.list(orjson.dumps({"metadata": {"resourceVersion": "5"}, "items": [SECRET]}))
    assert listed == {
        "metadata": {"resourceVersion": "5"},
        "items": [{"metadata": {"name": "s"}, "data": {"k": None}}],
    }
    event = SECRETS_ONLY_NAMES.event(orjson.dumps({"type": "MODIFIED", "object": SECRET}))
    assert event == {"type": "MODIFIED", "object": {"metadata": {"name": "s"}, "data": {"k": None}}}


def test_key_names_keep_no_value_when_the_shape_does_not_fit_and_the_object_is_parsed_whole() -> None:
    odd = {**SECRET, "metadata": "not an object"}
    listed = SECRETS_ONLY_NAMES.list(orjson.dumps({"metadata": {}, "items": [odd]}))
    assert listed["items"][0]["data"] == {"k": None}
    event = SECRETS_ONLY_NAMES.event(orjson.dumps({"type": "ADDED", "object": odd}))
    assert event["object"]["data"] == {"k": None}


def test_key_names_are_refused_inside_lists_and_with_a_protobuf_message() -> None:
    with pytest.raises(ValueError, match="inside the list"):
        Projection({"items": [{"data": KEY_NAMES}]}, "Nested")
    with pytest.raises(ValueError, match="JSON only"):
        Projection({"data": KEY_NAMES}, "Proto", message=POD)
