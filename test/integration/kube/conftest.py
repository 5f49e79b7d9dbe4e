from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mpioperator.kube.client import KubeClient
from mpioperator.testing.cluster import LocalCluster, NamespaceFactory


@pytest.fixture
async def client(apiserver_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    # Generous limits: these tests pin API behaviour; the QPS test builds its own client.
    kube = KubeClient.from_kubeconfig(apiserver_cluster.kubeconfig, qps=500.0, burst=1000)
    yield kube
    await kube.close()


@pytest.fixture
def ns(apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory) -> str:
    """A namespace of the test's own on the API server, deleted after it."""
    return make_namespace(apiserver_cluster)
