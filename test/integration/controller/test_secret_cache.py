"""The Secret cache against a real API server: names, owners and key names, never a value."""

from __future__ import annotations

import base64
from typing import Any

from mpioperator.api.objects import Obj
from mpioperator.kube.resources import PODS, SECRETS
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.wait import async_wait_for
from test.integration.controller.conftest import running_controller

# Base64 of these values is what must never reach the cache.
LISTED = b"listed-credential-value"
WATCHED = b"watched-credential-value"
UPDATED = b"updated-credential-value"


def secret(name: str, value: bytes, *keys: str) -> Obj:
    encoded = base64.b64encode(value).decode()
    return {"metadata": {"name": name, "labels": {"owner": "helm"}}, "data": dict.fromkeys(keys, encoded)}


def holds_no_value(cached: Obj) -> bool:
    text = repr(cached)
    return not any(base64.b64encode(v).decode() in text for v in (LISTED, WATCHED, UPDATED))


async def test_cached_secrets_keep_names_labels_and_key_names_but_no_data_values(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    cluster = mpijob_crd
    ns = make_namespace(cluster)
    base = f"/api/v1/namespaces/{ns}/secrets"
    cluster.rest.create(base, secret("before-start", LISTED, "tls.crt", "tls.key"))
    async with running_controller(cluster, ns) as h:
        store = h.controller.factory.informer(SECRETS, ns).store
        listed = store.get(ns, "before-start")
        assert listed is not None, "the first list did not cache the Secret"
        assert listed["data"] == {"tls.crt": None, "tls.key": None}
        assert listed["metadata"]["labels"] == {"owner": "helm"}
        assert listed["metadata"]["uid"] and listed["metadata"]["resourceVersion"]

        cluster.rest.create(base, secret("after-start", WATCHED, "password"))
        watched = await async_wait_for(
            lambda: _get(store, ns, "after-start"), timeout=30, what="the watched Secret cached"
        )
        assert watched["data"] == {"password": None}

        cluster.rest.merge_patch(f"{base}/before-start", secret("before-start", UPDATED, "tls.crt", "ca.crt"))
        updated = await async_wait_for(
            lambda: _get(store, ns, "before-start", with_key="ca.crt"),
            timeout=30,
            what="the updated Secret cached",
        )
        assert updated["data"] == {"tls.crt": None, "tls.key": None, "ca.crt": None}

        # The job's own SSH Secret is cached the same way, and the job still gets its pods.
        cluster.rest.create(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs", mpijob("pi", workers=1))
        generated = await async_wait_for(
            lambda: _get(store, ns, "pi-ssh"), timeout=60, what="the generated SSH Secret cached"
        )
        assert generated["data"] == {"ssh-privatekey": None, "ssh-publickey": None}
        assert generated["metadata"]["ownerReferences"][0]["name"] == "pi"
        await async_wait_for(
            lambda: _get(h.controller.factory.informer(PODS, ns).store, ns, "pi-worker-0"),
            timeout=60,
            what="the job's worker pod",
        )

        # A key taken from the generated Secret is put back by an update that starts from the Secret as
        # the server has it, not from the cache: the annotation the cache does not keep survives it.
        cluster.rest.merge_patch(
            f"{base}/pi-ssh", {"metadata": {"annotations": {"note": "kept"}}, "data": {"ssh-publickey": None}}
        )
        repaired = await async_wait_for(
            lambda: _get(store, ns, "pi-ssh", with_key="ssh-publickey", newer_than=generated),
            timeout=60,
            what="the generated SSH Secret given its key back",
        )
        assert repaired["data"] == {"ssh-privatekey": None, "ssh-publickey": None}
        assert "annotations" not in repaired["metadata"]
        assert cluster.rest.get(f"{base}/pi-ssh")["metadata"]["annotations"] == {"note": "kept"}
        assert all(holds_no_value(obj) for obj in store.list())
        server_side = cluster.rest.get(f"{base}/before-start")
        assert server_side["data"]["ca.crt"] == base64.b64encode(UPDATED).decode(), "the server keeps values"


async def _get(
    store: Any, ns: str, name: str, *, with_key: str | None = None, newer_than: Obj | None = None
) -> Obj:
    """The cached object, or {} (not yet) while it is missing, lacks `with_key` or is still the version
    `newer_than` is."""
    found: Obj | None = store.get(ns, name)
    if found is None or (with_key is not None and with_key not in (found.get("data") or {})):
        return {}
    if (
        newer_than is not None
        and found["metadata"]["resourceVersion"] == newer_than["metadata"]["resourceVersion"]
    ):
        return {}
    return found
