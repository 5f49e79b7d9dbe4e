"""Installing again over an installed operator (an upgrade) works with plain `kubectl apply --server-side`,
on a cluster whose controller-manager aggregates ClusterRoles, without --force-conflicts."""

from __future__ import annotations

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.install import STANDALONE_OVERLAY


def test_applying_the_overlay_again_server_side_meets_no_field_conflict(
    installed_cluster: LocalCluster,
) -> None:
    # The aggregation controller owns the rules of the aggregated ClusterRole once it has filled them in;
    # a manifest that also sets them conflicts on every later server-side apply.
    aggregated = installed_cluster.rest.get(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/kubeflow-mpijobs-admin"
    )
    assert aggregated.get("rules"), "the controller-manager has aggregated the admin role's rules"

    result = installed_cluster.kubectl("apply", "--server-side", "-k", str(STANDALONE_OVERLAY), check=False)

    assert result.returncode == 0, result.stderr
