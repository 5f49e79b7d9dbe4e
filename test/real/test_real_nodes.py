"""MPI across two real nodes on this machine, and the faults a real cluster has (docs/development.md, "More
than one real node").

The module's cluster has two real nodes, `real-node-b` and `real-node-c` (conftest.two_real_nodes), and a
node lifecycle short enough that a lost node is NotReady within about 15 s.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mpioperator.api.extensions import restarts
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.components import FAST_NODE_LIFECYCLE
from mpioperator.testing.jobs import Job
from mpioperator.testing.mpi4py_check import IMAGES, PYTHON, SCRIPT, check_problems
from mpioperator.testing.node import host
from mpioperator.testing.node.realnode import RealNode
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for
from test.real.conftest import namespace_on_ready_nodes, running_operator, two_real_nodes
from test.real.test_real_mpi4py import check_job
from test.real.test_real_mpijobs import diagnosis, launcher_log, wait_finished

OPENMPI = IMAGES["openmpi"]
# Where each worker finds the name of the node it runs on, for its rank line.
NODE_FILE = "/tmp/node-name"
NODE_LINE = f'echo "node of rank $OMPI_COMM_WORLD_RANK: $(cat {NODE_FILE})"'
HOSTNAME_KEY = "kubernetes.io/hostname"
# Kubernetes' non-graceful node shutdown: the taint an administrator (or a cloud's node controller) puts
# on a node known to be down, after which the pod garbage collector force-deletes its terminating pods.
OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}
# Steps of the long job: an allreduce a second, so a node lost mid-run is lost under a running mpirun.
STEPS = 25
LOOP = (
    "import time; from mpi4py import MPI; c = MPI.COMM_WORLD\n"
    f"for i in range({STEPS}):\n"
    "    s = c.allreduce(c.Get_rank() + 1)\n"
    "    c.Get_rank() == 0 and print(f'step {i} sum {s}', flush=True)\n"
    "    time.sleep(1)\n"
)


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[LocalCluster]:
    with two_real_nodes(node_lifecycle=FAST_NODE_LIFECYCLE, node_images=[OPENMPI.image]) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def operator(two_nodes: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    with running_operator(two_nodes, tmp_path_factory.mktemp("nodes-operator")) as proc:
        yield proc


@pytest.fixture
def ns(two_nodes: LocalCluster, make_namespace: Any, operator: OperatorProcess) -> str:
    return namespace_on_ready_nodes(two_nodes, make_namespace)


def nodes_of(cluster: LocalCluster) -> list[RealNode]:
    assert cluster.real_nodes is not None
    return cluster.real_nodes.nodes


def spread_job(name: str, launcher_args: list[str], *, launcher_node: str) -> dict[str, Any]:
    """The mpi4py check over two workers that may not share a node while two nodes take pods: a topology
    spread over node names that counts only nodes whose taints the workers tolerate, so a lost node (its
    `unreachable:NoSchedule` taint) leaves both of a new attempt's workers to the node that is left. Each
    worker can read its node's name; the launcher runs on `launcher_node`."""
    body = check_job(name, OPENMPI, agent="ssh", as_worker=False)
    specs = body["spec"]["mpiReplicaSpecs"]
    launcher = specs["Launcher"]["template"]["spec"]
    launcher["containers"][0]["args"] = launcher_args
    launcher["nodeSelector"] = {HOSTNAME_KEY: launcher_node}
    worker = specs["Worker"]["template"]
    worker.setdefault("metadata", {})["labels"] = {"spread": name}
    spec = worker["spec"]
    spec["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": HOSTNAME_KEY,
            "whenUnsatisfiable": "DoNotSchedule",
            "nodeTaintsPolicy": "Honor",
            "labelSelector": {"matchLabels": {"spread": name}},
        }
    ]
    # The node's name comes as an environment variable, which ssh sessions do not inherit: the worker writes
    # it to a file before it starts sshd, and each rank reads it there.
    container = spec["containers"][0]
    container["env"] = [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    sshd = " ".join(container.pop("args"))
    container["command"] = ["sh", "-c", f'echo "$NODE_NAME" > {NODE_FILE} && exec {sshd}']
    return body


def node_lines(log: str) -> dict[int, str]:
    found = {}
    for line in log.splitlines():
        if line.startswith("node of rank "):
            rank, _, node = line.removeprefix("node of rank ").partition(": ")
            found[int(rank)] = node.strip()
    return found


def finished(job: Job, operator: OperatorProcess, timeout: float) -> dict[str, Any]:
    return wait_finished(job, timeout, lambda: f"\noperator:\n{operator.log_tail(80)}")


def power_off(cluster: LocalCluster, lost: RealNode, timeline: Timeline) -> None:
    """Powers `lost` off and waits until the cluster sees it NotReady, marking both on `timeline`."""
    lost.power_off()
    timeline.mark(f"{lost.name} powered off (traffic dropped, kubelet, containerd, containers killed)")
    wait_for(lambda: not cluster.node_is_ready(lost.name), timeout=40, what=f"{lost.name} NotReady")
    timeline.mark(f"{lost.name} NotReady")


def test_an_mpi4py_job_spread_over_two_real_nodes_runs_a_rank_on_each_and_its_rank_lines_name_both(
    two_nodes: LocalCluster, ns: str, operator: OperatorProcess
) -> None:
    first, second = nodes_of(two_nodes)
    args = ["mpirun", "-n", "2", "sh", "-c", f"{NODE_LINE}; exec {PYTHON} {SCRIPT}"]
    job = Job(two_nodes, ns, "across").submit(spread_job("across", args, launcher_node=first.name))

    done = finished(job, operator, timeout=150)

    wide = two_nodes.kubectl("-n", ns, "get", "pods", "-o", "wide").stdout
    log = launcher_log(two_nodes, ns, "across")
    print(f"kubectl get pods -o wide:\n{wide}\nlauncher log:\n{log}")
    assert done["type"] == "Succeeded", f"{done}\n{diagnosis(job)}"
    hostfile = two_nodes.rest.get(f"/api/v1/namespaces/{ns}/configmaps/across-config")["data"]["hostfile"]
    assert not check_problems(log, hostfile, OPENMPI), check_problems(log, hostfile, OPENMPI)
    assert sorted(node_lines(log).values()) == sorted([first.name, second.name]), log
    workers = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in job.pods("worker")}
    assert sorted(workers.values()) == sorted([first.name, second.name]), workers


def test_a_job_whose_workers_node_is_lost_restarts_as_a_whole_on_the_node_left_and_succeeds(
    two_nodes: LocalCluster, ns: str, operator: OperatorProcess
) -> None:
    """Node c dies under the running job (traffic dropped, kubelet, containerd and every container
    killed). The worker there is evicted once the node is `unreachable` past the workers' 2 s toleration;
    the job restarts as a whole; the administrator declares the dead node out of service, so its pod can
    go; the new attempt runs both workers on node b and Succeeds. Back up, node c runs nothing of it."""
    left, lost = nodes_of(two_nodes)
    args = ["mpirun", "-n", "2", PYTHON, "-c", LOOP]
    body = spread_job("lose", args, launcher_node=left.name)
    body["metadata"]["annotations"] = {
        restarts.RESTART_POLICY: restarts.ON_WORKER_FAILURE,
        restarts.MAX_RESTARTS: "2",
        restarts.RESTART_BACKOFF: "1",
    }
    body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["tolerations"] = tolerate_a_lost_node_for(2)
    # mpirun, told to stop, waits on the lost node's daemon; the default 30 s of grace would only add to
    # the test's time before the new attempt.
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["terminationGracePeriodSeconds"] = 5
    job = Job(two_nodes, ns, "lose").submit(body)
    wait_for(lambda: "step 2 " in launcher_log(two_nodes, ns, "lose"), timeout=120, what="the job's step 2")
    before = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in job.pods("worker")}
    assert sorted(before.values()) == sorted([left.name, lost.name]), before
    on_lost = [name for name, node in before.items() if node == lost.name]
    timeline = Timeline()

    try:
        power_off(two_nodes, lost, timeline)
        restarting = wait_for(lambda: job.condition("Restarting"), timeout=60, what="the whole-job restart")
        assert restarting is not None
        timeline.mark(f"Restarting: {restarting['message']}")
        # What an administrator does for a node that is down for good (Kubernetes' non-graceful node
        # shutdown): its pods can never confirm their end, so nothing else frees their names.
        set_taints(two_nodes, lost, [*taints(two_nodes, lost), OUT_OF_SERVICE])
        timeline.mark(f"{lost.name} tainted out-of-service")
        wait_for(
            lambda: not pods_on(two_nodes, ns, lost.name), timeout=60, what=f"the pods on {lost.name} gone"
        )
        timeline.mark(f"pods on {lost.name} gone")
        done = finished(job, operator, timeout=120)
        timeline.mark(f"finished: {done['type']}")
        status = (job.get() or {}).get("status") or {}
        after = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in job.pods("worker")}
        events = two_nodes.kubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.name=lose")
        print(f"timeline:\n{timeline}\nconditions: {status.get('conditions')}\nevents:\n{events.stdout}")
        print(
            f"workers before: {before}, after: {after}\nlauncher log:\n{launcher_log(two_nodes, ns, 'lose')}"
        )
        assert done["type"] == "Succeeded", f"{done}\n{diagnosis(job)}"
        assert status.get("restarts") == 1, status
        assert set(after.values()) == {left.name}, after
        assert all(name in restarting["message"] for name in on_lost), restarting
    finally:
        lost.power_on(two_nodes)
        set_taints(two_nodes, lost, [t for t in taints(two_nodes, lost) if t != OUT_OF_SERVICE])
    wait_for(lambda: two_nodes.node_is_ready(lost.name), timeout=60, what=f"{lost.name} Ready again")
    timeline.mark(f"{lost.name} Ready again")
    assert not pods_on(two_nodes, ns, lost.name)
    # Nothing of the lost attempt starts again on the node that came back.
    wait_for(lambda: not lost_processes(lost), timeout=30, what=f"no container running on {lost.name}")


def tolerate_a_lost_node_for(seconds: int) -> list[dict[str, Any]]:
    return [
        {
            "key": f"node.kubernetes.io/{key}",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": seconds,
        }
        for key in ("unreachable", "not-ready")
    ]


def test_a_job_without_a_restart_policy_whose_workers_node_is_lost_fails_naming_the_node_and_the_pod(
    two_nodes: LocalCluster, ns: str, operator: OperatorProcess
) -> None:
    """Node c dies under the running job. Once the node is `unreachable` past the workers' 2 s toleration
    the taint manager deletes the worker there, which can never confirm its end; the job, with no restart
    policy, Fails at once (decisions-local L51) with a condition naming the worker and its node, instead
    of waiting on mpirun (upstream's way). Back up, node c runs nothing of it."""
    left, lost = nodes_of(two_nodes)
    body = spread_job("lose-np", ["mpirun", "-n", "2", PYTHON, "-c", LOOP], launcher_node=left.name)
    body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["tolerations"] = tolerate_a_lost_node_for(2)
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["terminationGracePeriodSeconds"] = 5
    job = Job(two_nodes, ns, "lose-np").submit(body)
    wait_for(
        lambda: "step 2 " in launcher_log(two_nodes, ns, "lose-np"), timeout=120, what="the job's step 2"
    )
    before = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in job.pods("worker")}
    on_lost = [name for name, node in before.items() if node == lost.name]
    assert len(on_lost) == 1, before
    timeline = Timeline()

    try:
        power_off(two_nodes, lost, timeline)
        done = finished(job, operator, timeout=90)
        timeline.mark(f"finished: {done['type']} ({done.get('reason')})")
        status = (job.get() or {}).get("status") or {}
        events = two_nodes.kubectl(
            "-n", ns, "get", "events", "--field-selector", "involvedObject.name=lose-np"
        ).stdout
        print(f"timeline:\n{timeline}\nconditions: {status.get('conditions')}\nevents:\n{events}")
        assert done["type"] == "Failed", f"{done}\n{diagnosis(job)}"
        assert done["reason"] == "MPIJobWorkerLost", done
        assert f"worker {on_lost[0]} on node {lost.name} was deleted by the taint manager" in done["message"]
        assert "restarts" not in status, status
    finally:
        lost.power_on(two_nodes)
    wait_for(lambda: two_nodes.node_is_ready(lost.name), timeout=60, what=f"{lost.name} Ready again")
    timeline.mark(f"{lost.name} Ready again")
    # The kubelet back confirms the lost pod's end; nothing of the job starts again there.
    wait_for(lambda: not pods_on(two_nodes, ns, lost.name), timeout=60, what=f"the pods on {lost.name} gone")
    wait_for(lambda: not lost_processes(lost), timeout=30, what=f"no container running on {lost.name}")
    timeline.mark(f"nothing of the job left on {lost.name}")
    print(timeline)


def test_a_kubelet_restarted_under_a_running_job_leaves_it_to_succeed_without_a_restart(
    two_nodes: LocalCluster, ns: str, operator: OperatorProcess
) -> None:
    """The kubelet of a worker's node stops (SIGTERM) and starts again mid-run: its containers run on under
    their shims, the new kubelet adopts them, and the job, which would restart on any worker failure,
    carries on to Succeeded with no restart and the same worker pods."""
    first, second = nodes_of(two_nodes)
    body = spread_job("kubelet", ["mpirun", "-n", "2", PYTHON, "-c", LOOP], launcher_node=first.name)
    body["metadata"]["annotations"] = {restarts.RESTART_POLICY: restarts.ON_WORKER_FAILURE}
    job = Job(two_nodes, ns, "kubelet").submit(body)
    wait_for(
        lambda: "step 2 " in launcher_log(two_nodes, ns, "kubelet"), timeout=120, what="the job's step 2"
    )
    before = {
        p["metadata"]["name"]: (p["metadata"]["uid"], p["spec"]["nodeName"]) for p in job.pods("worker")
    }
    assert second.name in {node for _, node in before.values()}, before
    timeline = Timeline()

    restarted_at = dt.datetime.now(dt.UTC)
    second.restart_kubelet(two_nodes)
    timeline.mark(f"kubelet of {second.name} restarted")
    # The Node stays Ready through a short restart; the new kubelet shows itself by renewing the Lease.
    wait_for(
        lambda: lease_renewed(two_nodes, second) > restarted_at,
        timeout=30,
        what=f"the new kubelet of {second.name} to renew its Lease",
    )
    second.wait_ready(two_nodes)
    timeline.mark(f"{second.name}'s Lease renewed by the new kubelet, node Ready")
    done = finished(job, operator, timeout=120)
    timeline.mark(f"finished: {done['type']}")

    status = (job.get() or {}).get("status") or {}
    after = {p["metadata"]["name"]: (p["metadata"]["uid"], p["spec"]["nodeName"]) for p in job.pods("worker")}
    print(f"timeline:\n{timeline}\nconditions: {status.get('conditions')}")
    assert done["type"] == "Succeeded", f"{done}\n{diagnosis(job)}"
    assert "restarts" not in status, status
    assert after == before
    log = launcher_log(two_nodes, ns, "kubelet")
    assert f"step {STEPS - 1} sum 3" in log, log


@pytest.mark.parametrize("policy", [restarts.ON_WORKER_FAILURE, None], ids=["on-worker-failure", "no-policy"])
def test_draining_a_workers_node_restarts_the_job_on_the_node_left_or_fails_it_without_a_policy(
    two_nodes: LocalCluster, ns: str, operator: OperatorProcess, policy: str | None
) -> None:
    """`kubectl drain` of the node of one worker mid-run evicts it (the kubelet ends it: its sshd goes, and
        mpirun with it). With `OnWorkerFailure` the job restarts as a whole with both workers on the node left
        (the cordoned node takes none) and Succeeds; without a policy it Fails, as upstream's, and the Failed
    message names the evicted worker and its node (decisions-local L51)."""
    first, second = nodes_of(two_nodes)
    name = "drain" if policy else "drain-np"
    body = spread_job(name, ["mpirun", "-n", "2", PYTHON, "-c", LOOP], launcher_node=first.name)
    if policy:
        body["metadata"]["annotations"] = {restarts.RESTART_POLICY: policy, restarts.RESTART_BACKOFF: "1"}
    job = Job(two_nodes, ns, name).submit(body)
    wait_for(lambda: "step 2 " in launcher_log(two_nodes, ns, name), timeout=120, what="the job's step 2")
    before = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in job.pods("worker")}
    drained = [pod for pod, node in before.items() if node == second.name]
    assert len(drained) == 1, before
    timeline = Timeline()
    try:
        two_nodes.kubectl(
            "drain", second.name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=90s"
        )
        timeline.mark(f"{second.name} drained")
        done = finished(job, operator, timeout=150)
        timeline.mark(f"finished: {done['type']}")
    finally:
        two_nodes.kubectl("uncordon", second.name)

    status = (job.get() or {}).get("status") or {}
    events = two_nodes.kubectl("-n", ns, "get", "events", "--field-selector", f"involvedObject.name={name}")
    after = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in job.pods("worker")}
    print(f"timeline:\n{timeline}\nconditions: {status.get('conditions')}\nevents:\n{events.stdout}")
    print(f"workers before: {before}, after: {after}")
    if policy:
        assert done["type"] == "Succeeded", f"{done}\n{diagnosis(job)}"
        assert status.get("restarts") == 1, status
        assert set(after.values()) == {first.name}, after
        assert f"worker {drained[0]} was deleted" in events.stdout, events.stdout
    else:
        assert done["type"] == "Failed", f"{done}\n{diagnosis(job)}"
        assert "restarts" not in status, status
        assert f"worker {drained[0]} on node {second.name} was evicted" in done["message"], done


def test_a_partition_of_20_seconds_between_the_nodes_stalls_the_job_which_then_succeeds_without_a_restart(
    two_nodes: LocalCluster, ns: str, operator: OperatorProcess
) -> None:
    """The pods of real-node-c lose every packet to and from the other node for 20 s mid-run (the nodes stay
    Ready: the kubelets reach the API server on the host). TCP retransmits across the gap, so mpirun does
    not fail: the job, which would restart on any worker failure, stalls and then Succeeds with no
    restart. (A partition longer than TCP's retransmission timeout, about 15 minutes, is out of a test's
    reach.)"""
    first, second = nodes_of(two_nodes)
    body = spread_job("split", ["mpirun", "-n", "2", PYTHON, "-c", LOOP], launcher_node=first.name)
    body["metadata"]["annotations"] = {restarts.RESTART_POLICY: restarts.ON_WORKER_FAILURE}
    job = Job(two_nodes, ns, "split").submit(body)
    wait_for(lambda: "step 2 " in launcher_log(two_nodes, ns, "split"), timeout=120, what="the job's step 2")
    timeline = Timeline()
    second.partition()
    timeline.mark(f"{second.name}'s pods partitioned from {first.name}'s")
    try:
        stalled_at = launcher_log(two_nodes, ns, "split").count("step ")
        # Wall time on purpose: the partition lasts as long as a real one would; the job's own progress is
        # what is watched meanwhile.
        time.sleep(20)
        stalled = launcher_log(two_nodes, ns, "split").count("step ")
    finally:
        second.heal()
    timeline.mark(f"partition healed; steps done before/after the 20 s: {stalled_at}/{stalled}")
    done = finished(job, operator, timeout=120)
    timeline.mark(f"finished: {done['type']}")

    status = (job.get() or {}).get("status") or {}
    print(f"timeline:\n{timeline}\nconditions: {status.get('conditions')}")
    assert stalled - stalled_at <= 1, (stalled_at, stalled)
    assert done["type"] == "Succeeded", f"{done}\n{diagnosis(job)}"
    assert "restarts" not in status, status
    assert two_nodes.node_is_ready(second.name)


def test_a_rank_killed_by_the_kernels_oom_killer_fails_the_job_naming_the_worker_and_the_signal(
    two_nodes: LocalCluster, ns: str, operator: OperatorProcess
) -> None:
    """Rank 1 allocates past its worker's 128 Mi memory limit and the kernel's OOM killer
    kills it. Only the rank dies (the largest process in the container's cgroup), not the worker's sshd,
    so Kubernetes never reports the container OOMKilled: what the user learns comes from mpirun, through
    the launcher's termination message, in the job's Failed condition."""
    first, second = nodes_of(two_nodes)
    hog = "from mpi4py import MPI; MPI.COMM_WORLD.Get_rank() == 1 and bytearray(512 << 20); MPI.COMM_WORLD.Barrier()"
    body = spread_job("oom", ["mpirun", "-n", "2", PYTHON, "-c", hog], launcher_node=first.name)
    worker = body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["resources"] = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}}
    job = Job(two_nodes, ns, "oom").submit(body)

    done = finished(job, operator, timeout=150)

    status = (job.get() or {}).get("status") or {}
    events = two_nodes.kubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.name=oom")
    print(f"conditions: {status.get('conditions')}\nevents:\n{events.stdout}")
    workers = {p["metadata"]["name"]: p for p in job.pods("worker")}
    print({name: p["spec"]["nodeName"] for name, p in workers.items()})
    assert done["type"] == "Failed", f"{done}\n{diagnosis(job)}"
    killed = [name for name, p in workers.items() if oom_kills(p) > 0]
    assert killed == ["oom-worker-1"], {name: oom_kills(p) for name, p in workers.items()}
    assert sorted(p["spec"]["nodeName"] for p in workers.values()) == sorted([first.name, second.name])
    assert "oom-worker-1" in done["message"] and "signal 9" in done["message"], done


def test_a_worker_killed_by_the_kernels_oom_killer_restarts_the_job_with_a_restart_policy_which_succeeds(
    two_nodes: LocalCluster, ns: str, operator: OperatorProcess
) -> None:
    """In the first attempt, worker 1's main process grows past the container's 128 Mi limit mid-run (its
    sshd runs beside it) and the kernel kills it: the container ends `OOMKilled`, and with
    `OnWorkerFailure` the job restarts as a whole, naming the worker and the OOM kill; the new attempt
    (the `mpioperator.io/attempt` label, read through the downward API, is 1) allocates nothing and
    Succeeds."""
    first, _ = nodes_of(two_nodes)
    body = spread_job("oom-r", ["mpirun", "-n", "2", PYTHON, "-c", LOOP], launcher_node=first.name)
    body["metadata"]["annotations"] = {
        restarts.RESTART_POLICY: restarts.ON_WORKER_FAILURE,
        restarts.RESTART_BACKOFF: "1",
    }
    worker = body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["resources"] = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}}
    worker["env"] += [
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {
            "name": "ATTEMPT",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{restarts.ATTEMPT_LABEL}']"}},
        },
    ]
    start, _, sshd = worker["command"][2].partition(" && exec ")
    hog = f"{PYTHON} -c 'import time; time.sleep(8); bytearray(512 << 20)'"
    # sshd in the background, the hog in the foreground as the container's main process, so the kernel's
    # kill of it ends the container; every other worker, and the next attempt, run sshd as before.
    worker["command"][2] = (
        f'{start} && if [ "$POD" = oom-r-worker-1 ] && [ "$ATTEMPT" = 0 ]; '
        f"then {sshd} & exec {hog}; else exec {sshd}; fi"
    )
    job = Job(two_nodes, ns, "oom-r").submit(body)

    done = finished(job, operator, timeout=180)

    status = (job.get() or {}).get("status") or {}
    events = two_nodes.kubectl(
        "-n", ns, "get", "events", "--field-selector", "involvedObject.name=oom-r"
    ).stdout
    print(f"conditions: {status.get('conditions')}\nevents:\n{events}")
    assert done["type"] == "Succeeded", f"{done}\n{diagnosis(job)}"
    assert status.get("restarts") == 1, status
    assert "worker oom-r-worker-1 was OOMKilled (exit code 137)" in events, events
    log = launcher_log(two_nodes, ns, "oom-r")
    assert f"step {STEPS - 1} sum 3" in log, log


def oom_kills(pod: dict[str, Any]) -> int:
    """The kernel's count of OOM kills in the pod's memory cgroups (cgroup v1 `memory.oom_control`)."""
    total = 0
    for mount in host.cgroup_mounts():
        for control in mount.glob(
            f"mpioperator-*/kubepods/**/pod{pod['metadata']['uid']}/**/memory.oom_control"
        ):
            for line in control.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    total += int(value)
    return total


def lease_renewed(cluster: LocalCluster, node: RealNode) -> dt.datetime:
    lease = cluster.rest.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node.name}")
    return dt.datetime.fromisoformat(lease["spec"]["renewTime"])


def taints(cluster: LocalCluster, node: RealNode) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = cluster.rest.get(f"/api/v1/nodes/{node.name}")["spec"].get("taints") or []
    # The node lifecycle controller's taints carry the time they were added; compared without it.
    return [{k: v for k, v in t.items() if k != "timeAdded"} for t in found]


def set_taints(cluster: LocalCluster, node: RealNode, wanted: list[dict[str, Any]]) -> None:
    cluster.rest.merge_patch(f"/api/v1/nodes/{node.name}", {"spec": {"taints": wanted}})


def pods_on(cluster: LocalCluster, ns: str, node: str) -> list[str]:
    items = cluster.rest.get(f"/api/v1/namespaces/{ns}/pods?fieldSelector=spec.nodeName={node}")["items"]
    return [p["metadata"]["name"] for p in items]


def lost_processes(node: RealNode) -> set[int]:
    return host.cgroup_pids(node.network.tag)


class Timeline:
    def __init__(self) -> None:
        self._start = time.monotonic()
        self._lines: list[str] = []

    def mark(self, what: str) -> None:
        self._lines.append(f"+{time.monotonic() - self._start:6.1f} s  {what}")

    def __str__(self) -> str:
        return "\n".join(self._lines)
