"""An operator serving 30 namespaces with --exec-agent, whose start-up checks send a list per watched
resource and an access review per right in each: liveness answers before the checks run, they spend no
token of the controller's buckets (which would pace them to minutes at upstream's --kube-api-qps of 5), and
the operator becomes ready. The times to liveness and to ready are printed (run with -s to see them)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from mpioperator.app import options as opts
from mpioperator.app.startup import check_cluster
from mpioperator.kube.client import KubeClient
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for
from test.integration.app.test_startup_exec_agent import BASE_ROLE, EXEC_AGENT_ROLE, grant

NAMESPACES = 30


def _namespaces(cluster: LocalCluster, make_namespace: Any) -> list[str]:
    return [make_namespace(cluster) for _ in range(NAMESPACES)]


async def test_the_start_up_checks_of_30_namespaces_take_no_token_of_the_controllers_buckets(
    with_mpijobs: LocalCluster, make_namespace: Any
) -> None:
    served = _namespaces(with_mpijobs, make_namespace)
    options = opts.parse(
        [f"--kubeConfig={with_mpijobs.kubeconfig}", f"--namespace={','.join(served)}", "--exec-agent"],
        environ={},
    )
    # The flags' default QPS 5 / burst 10: 30 x (6 lists + 9 reviews) through it would take 90 s.
    client = KubeClient.from_kubeconfig(str(with_mpijobs.kubeconfig), user_agent="test", qps=5, burst=10)
    try:
        await check_cluster(client, options)
        taken = client.limiters.taken()
    finally:
        await client.close()

    assert taken == {}


def _log_events(operator: OperatorProcess) -> list[str]:
    events = []
    for line in operator.log_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            events.append(str(record.get("event")))
    return events


def test_with_the_exec_agent_and_30_namespaces_liveness_answers_before_the_checks_and_it_becomes_ready(
    with_mpijobs: LocalCluster, make_namespace: Any, tmp_path: Path
) -> None:
    served = _namespaces(with_mpijobs, make_namespace)
    home = served[0]
    with_mpijobs.rest.create(f"/api/v1/namespaces/{home}/serviceaccounts", {"metadata": {"name": "operator"}})
    grant(with_mpijobs, BASE_ROLE, home, "operator", "list", "mpijobs.kubeflow.org")
    grant(with_mpijobs, EXEC_AGENT_ROLE, home, "operator", "create", "pods", "--subresource=exec")
    operator = OperatorProcess(
        with_mpijobs,
        name="many-namespaces",
        service_account=(home, "operator"),
        args=("--exec-agent", f"--namespace={','.join(served)}", "--leader-elect=false"),
        workdir=tmp_path,
    )
    began = time.monotonic()
    try:
        operator.start(timeout=300)
        live = time.monotonic() - began
        wait_for(operator.ready, timeout=300, what="the operator ready")
        ready = time.monotonic() - began
        events = _log_events(operator)
    finally:
        operator.terminate()
    print(
        f"\n{NAMESPACES} namespaces with --exec-agent: /healthz 200 after {live:.1f}s, /readyz 200 after {ready:.1f}s"
    )

    assert "serving health checks" in events, events
    assert events.index("serving health checks") < events.index("cluster checks passed"), events
