"""The leader's Lease renewals against pod creates that a slow admission webhook holds: seven creates wait
on the operator's client at once, and the renewal, on connections of its own, must still be sent and
answered."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import http.server
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.pki import CertificateAuthority
from mpioperator.testing.rest import RestError
from mpioperator.testing.wait import async_wait_for
from test.integration.app.conftest import operator_in_process

WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
# A held create is answered after this long at the latest, inside the webhook's 30 s timeout, so nothing
# is left waiting if the test fails before it lets them go.
HOLD_LIMIT = 28.0
# A job of 8 workers: the first is created alone, the other seven together (L11).
HELD_AT_ONCE = 7


class SlowPodWebhook:
    """A validating admission webhook on loopback (TLS from a throw-away CA) that holds every pod create
    until `release` is set, except dry-run probes and each job's first worker (so the rest of a job's
    workers are created together and held at once)."""

    def __init__(self, directory: Path) -> None:
        ca = CertificateAuthority(directory, name="slow-webhook-ca")
        pair = ca.issue("webhook", common_name="127.0.0.1", ips=("127.0.0.1",), server=True)
        self.ca_bundle = base64.b64encode(ca.cert.read_bytes()).decode()
        self.release = threading.Event()
        self.probes = 0
        self.held = 0
        self.answered_held = 0
        self._lock = threading.Lock()
        webhook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                name = (request.get("object") or {}).get("metadata", {}).get("name", "")
                hold = not (name.startswith("probe-") or name.endswith("-worker-0"))
                with webhook._lock:
                    webhook.probes += name.startswith("probe-")
                    webhook.held += hold
                if hold:
                    webhook.release.wait(HOLD_LIMIT)
                answer = {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": {"uid": request["uid"], "allowed": True},
                }
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                if hold:
                    with webhook._lock:
                        webhook.answered_held += 1

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(pair.cert, pair.key)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="slow-webhook", daemon=True)

    @contextlib.contextmanager
    def serving(self) -> Iterator[SlowPodWebhook]:
        self._thread.start()
        try:
            yield self
        finally:
            self.release.set()
            self._server.shutdown()
            self._server.server_close()

    def configuration(self, name: str, namespace: str) -> dict[str, Any]:
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [
                {
                    "name": "slow-pod-creates.mpioperator.test",
                    "clientConfig": {"url": f"https://127.0.0.1:{self.port}/", "caBundle": self.ca_bundle},
                    "rules": [
                        {
                            "operations": ["CREATE"],
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "resources": ["pods"],
                        }
                    ],
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": 30,
                    "failurePolicy": "Fail",
                }
            ],
        }


def _probe_pod(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"probe-{i}"}, "spec": {"containers": [{"name": "c", "image": "probe"}]}}


async def test_lease_renewal_is_answered_while_held_pod_creates_wait_on_the_client(
    with_mpijobs: LocalCluster, make_namespace: Any, tmp_path: Path
) -> None:
    cluster = with_mpijobs
    ns = make_namespace(cluster)
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/mpi-operator"
    webhook = SlowPodWebhook(tmp_path)
    config = f"slow-pod-creates-{ns}"
    with webhook.serving():
        cluster.rest.create(WEBHOOKS, webhook.configuration(config, ns))
        try:
            probes = iter(range(1_000_000))

            async def webhook_called() -> int:
                path = f"/api/v1/namespaces/{ns}/pods?dryRun=All"
                await asyncio.to_thread(cluster.rest.create, path, _probe_pod(next(probes)))
                return webhook.probes

            # The API server takes up a new webhook configuration a moment after it is stored.
            await async_wait_for(webhook_called, timeout=30, what="the API server calling the webhook")
            async with operator_in_process(cluster, ns) as operator:
                try:
                    await asyncio.to_thread(
                        cluster.rest.create,
                        f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs",
                        mpijob("big", workers=8),
                    )

                    async def held() -> int:
                        operator.check_alive()
                        return webhook.held

                    # Seven workers created together, all held.
                    await async_wait_for(
                        held,
                        timeout=60,
                        what="every worker create after the first held",
                        done=lambda n: n >= HELD_AT_ONCE,
                    )
                    # Counted before the Lease is read: a renewal answered while that read is under way
                    # is then among the calls looked at, never hidden in the ones before.
                    seen = len(operator.answered.calls)
                    before = await asyncio.to_thread(cluster.rest.get, lease_path)

                    async def renewed() -> bool:
                        operator.check_alive()
                        lease = await asyncio.to_thread(cluster.rest.get, lease_path)
                        return bool(lease["spec"]["renewTime"] > before["spec"]["renewTime"])

                    # Renewals come every --leader-elect-retry-period (3 s); the wait is for a few.
                    await async_wait_for(renewed, timeout=20, what="a renewal while the creates are held")
                    answered_held = webhook.answered_held
                    calls = list(operator.answered.calls)
                finally:
                    webhook.release.set()
        finally:
            with contextlib.suppress(RestError):
                cluster.rest.delete(f"{WEBHOOKS}/{config}")
    assert operator.task.result() == 0, "the leader kept its Lease to the end"
    assert answered_held == 0, "the renewal was answered while every held create was still held"
    assert ("update", "leases", 200) in calls[seen:]
    # No held create was answered before the renewal: the one pod create answered was the first worker's.
    created = [code for verb, resource, code in calls if (verb, resource) == ("create", "pods")]
    assert created == [201]
    assert webhook.held >= HELD_AT_ONCE
