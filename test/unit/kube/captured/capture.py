"""Writes the bodies the protobuf decoder's unit tests read: the varied pods of
mpioperator/testing/varied_pods.py, listed and watched once as protobuf and once as JSON by a real API
server, and a protobuf error answer.

    KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh) .venv/bin/python -m test.unit.kube.captured.capture
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from mpioperator.kube.client import KubeClient
from mpioperator.kube.protoapi import PROTOBUF
from mpioperator.kube.resources import PODS
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.varied_pods import make_varied_pods, release_varied_pods

HERE = Path(__file__).parent
NAMESPACE = "captured"


async def capture(cluster: LocalCluster) -> None:
    client = KubeClient.from_kubeconfig(cluster.kubeconfig)
    transport = client._t  # raw bodies, as the server sent them
    try:
        cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        rv = (await client.list(PODS, NAMESPACE))["metadata"]["resourceVersion"]
        await make_varied_pods(client, NAMESPACE)
        path = PODS.path(NAMESPACE)
        for suffix, accept in (("pb", PROTOBUF), ("json", None)):
            listed = await transport.request("GET", path, accept=accept)
            (HERE / f"pods.{suffix}").write_bytes(listed.body)
            # A watch from before the first create replays every change, then ends after its timeout.
            query = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": 2}
            response = await transport.open(path, query=query, accept=accept, read_timeout=30.0)
            (HERE / f"watch.{suffix}").write_bytes(await response.read())
            response.release()
        bad = await transport.request("GET", path, query={"continue": "not-a-token"}, accept=PROTOBUF)
        assert bad.status == 400, bad.status
        (HERE / "bad-continue.pb").write_bytes(bad.body)
        await release_varied_pods(client, NAMESPACE)
    finally:
        await client.close()


def main() -> None:
    with LocalCluster("apiserver") as cluster:
        asyncio.run(capture(cluster))


if __name__ == "__main__":
    main()
