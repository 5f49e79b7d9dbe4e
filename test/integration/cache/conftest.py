from __future__ import annotations

import pytest

from mpioperator.testing.cluster import LocalCluster, NamespaceFactory


@pytest.fixture
def ns(apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory) -> str:
    """A namespace of the test's own on the API server, deleted after it."""
    return make_namespace(apiserver_cluster)
