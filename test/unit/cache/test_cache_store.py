from __future__ import annotations

from typing import Any

import pytest

from mpioperator.api.objects import Obj
from mpioperator.cache.keys import DeletedFinalStateUnknown, deleted_object, object_key, split_key
from mpioperator.cache.store import CONTROLLER_OWNER_INDEX, NAMESPACE_INDEX, Store


def obj(name: str, namespace: str | None = "ns", rv: str = "1", **meta: Any) -> Obj:
    m: dict[str, Any] = {"name": name, "resourceVersion": rv, **meta}
    if namespace:
        m["namespace"] = namespace
    return {"metadata": m}


def owned(name: str, uid: str, controller: bool = True, namespace: str = "ns") -> Obj:
    return obj(name, namespace, ownerReferences=[{"uid": uid, "controller": controller, "kind": "Job"}])


def test_keys_are_namespace_slash_name_or_bare_name_when_cluster_scoped() -> None:
    assert object_key(obj("a", "ns")) == "ns/a"
    assert object_key(obj("node-1", None)) == "node-1"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("node-1") == ("", "node-1")
    with pytest.raises(ValueError, match="unexpected key"):
        split_key("a/b/c")


def test_deleted_object_unwraps_tombstones() -> None:
    o = obj("a")
    assert deleted_object(DeletedFinalStateUnknown("ns/a", o)) is o
    assert deleted_object(o) is o


def test_add_get_list_and_delete_return_the_previous_object() -> None:
    store = Store()
    first, second = obj("a", rv="1"), obj("a", rv="2")
    assert store.add(first) is None
    assert store.update(second) is first
    assert store.get("ns", "a") is second
    assert store.get_by_key("ns/a") is second
    assert store.add(obj("n", None)) is None
    assert store.get(None, "n") is not None
    assert sorted(store.keys()) == ["n", "ns/a"]
    assert len(store.list()) == 2
    assert store.delete(obj("a")) is second
    assert "ns/a" not in store
    assert store.delete(obj("a")) is None


def test_namespace_index_lists_objects_of_one_namespace() -> None:
    store = Store()
    for name, ns in [("a", "x"), ("b", "x"), ("c", "y")]:
        store.add(obj(name, ns))
    assert [o["metadata"]["name"] for o in store.by_index(NAMESPACE_INDEX, "x")] == ["a", "b"]
    assert store.index_keys(NAMESPACE_INDEX, "y") == ["y/c"]
    assert store.by_index(NAMESPACE_INDEX, "z") == []


def test_controller_owner_index_uses_only_the_controller_reference() -> None:
    store = Store()
    store.add(owned("w0", "uid-1"))
    store.add(owned("w1", "uid-1", controller=False))
    assert store.index_keys(CONTROLLER_OWNER_INDEX, "uid-1") == ["ns/w0"]


def test_update_moves_the_key_between_index_values_and_drops_empty_value_sets() -> None:
    store = Store()
    store.add(owned("w0", "uid-1"))
    store.update(owned("w0", "uid-2"))
    assert store.index_keys(CONTROLLER_OWNER_INDEX, "uid-2") == ["ns/w0"]
    assert store.index_keys(CONTROLLER_OWNER_INDEX, "uid-1") == []
    assert store.index_values(CONTROLLER_OWNER_INDEX) == ["uid-2"]
    store.delete_by_key("ns/w0")
    assert store.index_values(CONTROLLER_OWNER_INDEX) == []
    assert store.index_values(NAMESPACE_INDEX) == []


def test_custom_indexers_may_yield_several_values_and_index_existing_items_when_added_late() -> None:
    def by_label_values(o: Obj) -> list[str]:
        return sorted((o["metadata"].get("labels") or {}).values())

    store = Store()
    store.add(obj("a", labels={"x": "1", "y": "2"}))
    store.add_indexers({"labels": by_label_values})
    store.add(obj("b", labels={"x": "2"}))
    assert store.index_keys("labels", "2") == ["ns/a", "ns/b"]
    assert store.index_keys("labels", "1") == ["ns/a"]
    with pytest.raises(ValueError, match="already registered"):
        store.add_indexers({"labels": by_label_values})
    with pytest.raises(KeyError, match="no index"):
        store.by_index("missing", "v")


def test_replace_keeps_exactly_the_listed_objects_and_reports_what_vanished() -> None:
    store = Store()
    kept_old, gone = obj("kept", rv="1"), owned("gone", "uid-9")
    store.add(kept_old)
    store.add(gone)
    kept_new, fresh = obj("kept", rv="5"), obj("fresh", rv="6")
    result = store.replace([kept_new, fresh])
    assert result.changed == [(kept_old, kept_new), (None, fresh)]
    assert result.deleted == [("ns/gone", gone)]
    assert sorted(store.keys()) == ["ns/fresh", "ns/kept"]
    assert store.index_values(CONTROLLER_OWNER_INDEX) == []
