"""A real local Kubernetes control plane for tests, benchmarks and the demo.

Tiers:
- ``apiserver``: etcd + kube-apiserver (envtest's model; tests play kubelet and controllers).
- ``full``: + kube-controller-manager, kube-scheduler and kwok managing fake nodes.
- ``real``: the full tier plus real nodes (one unless ``real_nodes`` asks for more; each its own
  containerd, CNI bridge and kubelet, all sharing one CoreDNS and one local registry for their images;
  root only); kwok nodes, if asked for, are tainted so that only pods that tolerate
  ``kwok.x-k8s.io/node`` land on them. ``node_lifecycle`` shortens how soon a lost node is NotReady.

The full and real tiers can also run a second scheduler, scheduler-plugins with Coscheduling (gang
scheduling), next to the vanilla one: ``LocalCluster("full", scheduler_plugins=True)`` installs the
PodGroup CRD and serves pods whose ``spec.schedulerName`` is ``cluster.gang_scheduler_name``.
``workload_gang=True`` (any tier) serves Kubernetes' own Workload API and turns on kube-scheduler's
GangScheduling plugin, alone or beside scheduler-plugins (each job's operator picks one).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Collection, Sequence
from importlib import resources
from pathlib import Path
from typing import Literal

from mpioperator.testing import components, etcd, pki, volcano
from mpioperator.testing.binaries import (
    Binaries,
    find_binaries,
    find_node_binaries,
    find_scheduler_plugins,
    scheduler_plugins_crd,
)
from mpioperator.testing.free_ports import free_port, start_on_free_ports
from mpioperator.testing.node.fleet import RealNodes
from mpioperator.testing.node.realnode import RealNode
from mpioperator.testing.node.settings import NodeNetwork
from mpioperator.testing.node.teardown import NodeState, sweep
from mpioperator.testing.nodes import (
    KWOK_TAINT,
    NodeShape,
    create_ready_nodes,
    delete_nodes,
    fake_node,
    node_is_ready,
)
from mpioperator.testing.process import ManagedProcess, pid_alive
from mpioperator.testing.rest import RestClient
from mpioperator.testing.wait import ProbeAborted, wait_for

Tier = Literal["apiserver", "full", "real"]
NamespaceFactory = Callable[["LocalCluster"], str]

# The apiserver serves watches from its watch cache, whose window, not etcd's compaction, decides when an
# old resourceVersion expires. With the cache off for one core resource that nothing else uses, tests can
# reach etcd's compaction directly: a watch on PodTemplates from a compacted revision gets 410 Expired.
UNCACHED_RESOURCE = "podtemplates"
# Every cluster work dir starts so; the real node's programs all name it (see node/snapshot.py).
WORKDIR_PREFIX = "mpioperator-cluster-"
SCHEDULER_PLUGINS = "scheduler-plugins"
POD_GROUP_CRD = "podgroups.scheduling.x-k8s.io"


# How a component that lost the race for its picked port says so as it exits.
PORT_TAKEN = "address already in use"


class ClusterStartError(RuntimeError):
    pass


class ComponentDied(ClusterStartError, ProbeAborted):
    pass


class LocalCluster:
    def __init__(
        self,
        tier: Tier = "apiserver",
        *,
        nodes: int = 2,
        node_shape: NodeShape | None = None,
        binaries: Binaries | None = None,
        apiserver_args: Sequence[str] = (),
        workdir: Path | None = None,
        scheduler_plugins: bool = False,
        scheduler_plugins_binary: Path | None = None,
        gang_scheduler_name: str = components.SCHEDULER_PLUGINS_NAME,
        volcano: bool = False,
        workload_gang: bool = False,
        node_network: NodeNetwork | None = None,
        node_images: Collection[str] | None = None,
        real_nodes: int = 1,
        first_real_node: int = 0,
        node_lifecycle: components.NodeLifecycle | None = None,
    ):
        if scheduler_plugins and tier == "apiserver":
            raise ValueError("scheduler_plugins needs nodes and a scheduler to compete (full or real tier)")
        if volcano and (tier != "full" or scheduler_plugins):
            raise ValueError("volcano needs the full tier, and no second gang scheduler beside it")
        self.tier: Tier = tier
        self.node_lifecycle = node_lifecycle or components.NodeLifecycle()
        self.real_nodes: RealNodes | None = None
        if tier == "real":
            self.real_nodes = RealNodes(
                real_nodes,
                network=node_network,
                images=node_images,
                lease_seconds=self.node_lifecycle.lease_seconds,
                offset=first_real_node,
            )
        self.volcano = volcano
        # Kubernetes' own gang scheduling: the Workload API served, kube-scheduler's GangScheduling plugin on.
        self.workload_gang = workload_gang
        self._volcano_binary: Path | None = None
        self.scheduler_plugins = scheduler_plugins
        self._scheduler_plugins_binary = scheduler_plugins_binary
        # The profile name of the scheduler-plugins scheduler, the value for the operator's --gang-scheduling.
        self.gang_scheduler_name = gang_scheduler_name
        self.scheduler_plugins_port = 0
        self._initial_nodes = nodes
        self._node_shape = node_shape or NodeShape()
        self._binaries = binaries
        self._apiserver_args = tuple(apiserver_args)
        self._workdir = workdir
        self.layout: components.Layout | None = None
        self.token = ""
        self.api_port = 0
        self.etcd_port = 0
        self._procs: dict[str, ManagedProcess] = {}
        self._rest: RestClient | None = None
        self._node_count = 0
        self._started_at = 0.0
        self.startup_seconds = 0.0

    # -- public surface -------------------------------------------------------------------------------

    @property
    def node(self) -> RealNode | None:
        """The first real node (the only one unless more were asked for)."""
        return self.real_nodes.nodes[0] if self.real_nodes is not None else None

    @property
    def binaries(self) -> Binaries:
        if self._binaries is None:
            self._binaries = find_binaries()
        return self._binaries

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    @property
    def kubeconfig(self) -> Path:
        return self._layout().admin_kubeconfig

    @property
    def ca_file(self) -> Path:
        return self._layout().serving_cert

    @property
    def rest(self) -> RestClient:
        if self._rest is None:
            raise ClusterStartError("cluster not started")
        return self._rest

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    def component_pid(self, name: str) -> int | None:
        proc = self._procs.get(name)
        return proc.pid if proc else None

    def dead_components(self) -> dict[str, str]:
        """Components that exited on their own, with the tail of their logs."""
        return {name: p.tail() for name, p in self._procs.items() if not p.running()}

    @property
    def logs_dir(self) -> Path:
        return self._layout().logs

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs.values() if p.pid is not None]

    def ports(self) -> list[int]:
        return [p for p in (self.api_port, self.etcd_port, self.scheduler_plugins_port) if p]

    def env(self) -> dict[str, str]:
        """Environment for a subprocess (kubectl, the operator) that should talk to this cluster as admin."""
        env = dict(os.environ)
        env["KUBECONFIG"] = str(self.kubeconfig)
        env["PATH"] = f"{self.binaries.directory}{os.pathsep}{env.get('PATH', '')}"
        return env

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [self.binaries.path("kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if check and result.returncode != 0:
            raise subprocess.CalledProcessError(result.returncode, result.args, result.stdout, result.stderr)
        return result

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        started = time.monotonic()
        bins = self.binaries
        crd: Path | None = None
        if self.scheduler_plugins:
            # Resolved (and built, once) before anything starts, so a missing binary is the error shown.
            if self._scheduler_plugins_binary is None:
                self._scheduler_plugins_binary = find_scheduler_plugins()
            crd = scheduler_plugins_crd()
        if self.volcano:
            self._volcano_binary = volcano.find_scheduler()
        _sweep_abandoned_workdirs()
        root = self._workdir or Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX))
        root.mkdir(parents=True, exist_ok=True)
        (root / "owner.pid").write_text(str(os.getpid()))
        layout = components.Layout(root)
        self.layout = layout
        for directory in (layout.pki, layout.logs, layout.home):
            directory.mkdir(parents=True, exist_ok=True)
        atexit.register(self.stop)
        try:
            pki.write_service_account_key(layout.sa_key)
            self.token = pki.write_admin_token(layout.tokens)
            nodes = self.real_nodes
            node_flags = nodes.prepare(root, layout.pki) if nodes is not None else []
            self._start_etcd(bins, layout)
            self._start_apiserver(bins, layout, node_flags)
            if self.tier in ("full", "real"):
                self._start_full_tier(bins, layout, pod_group_crd=crd)
            if nodes is not None:
                nodes.start(self, find_node_binaries())
        except BaseException:
            tails = self.logs_tail()
            self.stop()
            if tails:
                raise ClusterStartError(f"local cluster failed to start; component logs:\n{tails}") from None
            raise
        self.startup_seconds = time.monotonic() - started

    def stop(self) -> None:
        """Stop every component in reverse start order and remove the working directory."""
        if self.real_nodes is not None:
            self.real_nodes.stop(self if self._rest is not None else None)
        for proc in reversed(list(self._procs.values())):
            proc.stop()
        self._procs.clear()
        atexit.unregister(self.stop)
        if (
            self.layout is not None
            and self._workdir is None
            and not os.environ.get("MPIOPERATOR_KEEP_CLUSTER")
        ):
            shutil.rmtree(self.layout.root, ignore_errors=True)
        self._rest = None

    def logs_tail(self, lines: int = 25) -> str:
        parts = []
        for name, proc in self._procs.items():
            tail = proc.tail(lines)
            if tail:
                parts.append(f"----- {name} ({proc.log_path}) -----\n{tail}")
        return "\n".join(parts)

    def restart_apiserver(self, *, crash: bool = False) -> None:
        """Stop kube-apiserver (SIGKILL when `crash`) and start it again on the same port and storage."""
        proc = self._procs["kube-apiserver"]
        proc.kill() if crash else proc.stop()
        proc.start()
        self._wait_apiserver_ready(proc)

    def etcd_revision(self) -> int:
        return etcd.revision(self.etcd_url)

    def compact_etcd(self) -> int:
        """Compact etcd to its current revision, so watches from any older resourceVersion expire."""
        return etcd.compact(self.etcd_url)

    def add_nodes(
        self, count: int, shape: NodeShape | None = None, *, prefix: str = "kwok-node"
    ) -> list[str]:
        """Create `count` kwok-managed nodes and wait until each is Ready."""
        nodes = []
        for _ in range(count):
            node = fake_node(f"{prefix}-{self._node_count}", shape or self._node_shape)
            self._node_count += 1
            if self.tier == "real":
                node["spec"]["taints"] = [dict(KWOK_TAINT)]
            nodes.append(node)
        return create_ready_nodes(self.rest, nodes)

    def remove_nodes(self, names: Sequence[str], timeout: float = 60.0) -> None:
        """Delete nodes and wait until they are gone; kcm's pod GC then removes pods bound to them."""
        delete_nodes(self.rest, names, timeout)

    def node_is_ready(self, name: str) -> bool:
        return node_is_ready(self.rest, name)

    # -- start-up steps ----------------------------------------------------------------------------

    def _layout(self) -> components.Layout:
        if self.layout is None:
            raise ClusterStartError("cluster not started")
        return self.layout

    def spawn_component(self, name: str, argv: list[str], *, log_path: Path | None = None) -> ManagedProcess:
        """Run an extra component (an add-on scheduler) that logs, fails and stops like the others; its log
        goes to `log_path` when one must outlive the cluster's work dir."""
        return self._spawn(name, argv, log_path=log_path)

    def _spawn(
        self, name: str, argv: list[str], env: dict[str, str] | None = None, *, log_path: Path | None = None
    ) -> ManagedProcess:
        proc = ManagedProcess(name, argv, log_path or self._layout().logs / f"{name}.log", env=env)
        self._procs[name] = proc
        proc.start()
        return proc

    def _start_etcd(self, bins: Binaries, layout: components.Layout) -> None:
        def start_once() -> None:
            self.etcd_port = free_port()
            peer_port = free_port()
            proc = self._spawn(
                "etcd", components.etcd_argv(bins, layout, client_port=self.etcd_port, peer_port=peer_port)
            )

            def healthy() -> bool:
                self.require_running(proc)
                with urllib.request.urlopen(f"{self.etcd_url}/health", timeout=2) as response:
                    return bool(json.loads(response.read()).get("health") == "true")

            try:
                wait_for(healthy, timeout=30, what="etcd /health")
            except ComponentDied:
                shutil.rmtree(layout.etcd_data, ignore_errors=True)  # the next etcd starts from nothing
                raise

        start_on_free_ports(start_once, lost_race=lambda exc: PORT_TAKEN in str(exc))

    def _start_apiserver(self, bins: Binaries, layout: components.Layout, node_flags: list[str]) -> None:
        self.api_port = free_port()
        argv = components.apiserver_argv(
            bins,
            layout,
            port=self.api_port,
            etcd_port=self.etcd_port,
            with_controller_manager=self.tier != "apiserver",
            workload_gang=self.workload_gang,
            extra=(f"--watch-cache-sizes={UNCACHED_RESOURCE}#0", *node_flags, *self._apiserver_args),
        )
        proc = self._spawn("kube-apiserver", argv)
        self._wait_apiserver_ready(proc)
        pki.write_kubeconfig(
            layout.admin_kubeconfig, server=self.server, ca_file=layout.serving_cert, token=self.token
        )

    def _wait_apiserver_ready(self, proc: ManagedProcess) -> None:
        layout = self._layout()

        def ready() -> bool:
            self.require_running(proc)
            if not layout.serving_cert.exists():
                return False
            self._rest = RestClient(self.server, token=self.token, ca_file=layout.serving_cert)
            return bool(self._rest.request("GET", "/readyz", timeout=5) == "ok")

        wait_for(ready, timeout=90, interval=0.2, what="kube-apiserver /readyz")

    def _start_full_tier(
        self, bins: Binaries, layout: components.Layout, *, pod_group_crd: Path | None = None
    ) -> None:
        gang = self.workload_gang
        self._spawn(
            "kube-controller-manager",
            components.controller_manager_argv(
                bins, layout, workload_gang=gang, lifecycle=self.node_lifecycle
            ),
        )
        self._spawn("kube-scheduler", components.scheduler_argv(bins, layout, workload_gang=gang))
        stages = resources.files("mpioperator.testing").joinpath("kwok/stages.yaml")
        with resources.as_file(stages) as stages_path:
            kwok_env = dict(os.environ, HOME=str(layout.home))
            self._spawn("kwok", components.kwok_argv(bins, layout, stages=stages_path), env=kwok_env)
        # The ServiceAccount admission plugin rejects pods until kcm has created the namespace's `default` SA.
        wait_for(
            lambda: self._service_account_exists("default"),
            timeout=60,
            what="kube-controller-manager to create the default ServiceAccount",
        )
        if self._scheduler_plugins_binary is not None and pod_group_crd is not None:
            self._start_scheduler_plugins(layout, self._scheduler_plugins_binary, pod_group_crd)
        if self._volcano_binary is not None:
            volcano.start(self, self._volcano_binary, layout.root)
        if self._initial_nodes:
            self.add_nodes(self._initial_nodes)

    def _start_scheduler_plugins(self, layout: components.Layout, binary: Path, crd: Path) -> None:
        """PodGroup CRD first (Coscheduling reads PodGroups from its start), then the second scheduler."""
        self.kubectl("apply", "--server-side", "-f", str(crd))
        wait_crd_established(self, POD_GROUP_CRD)
        config = components.scheduler_plugins_config(layout, scheduler_name=self.gang_scheduler_name)
        layout.scheduler_plugins_config.write_text(json.dumps(config, indent=2))  # JSON is YAML
        self.scheduler_plugins_port = free_port()
        proc = self._spawn(
            SCHEDULER_PLUGINS,
            components.scheduler_plugins_argv(binary, layout, port=self.scheduler_plugins_port),
        )
        # Its own certificate is self-signed and only /readyz is read, so the peer is not verified.
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{self.scheduler_plugins_port}/readyz"

        def ready() -> bool:
            # /readyz turns ok once the scheduler's informers (pods, nodes, PodGroups) have synced.
            self.require_running(proc)
            with urllib.request.urlopen(url, timeout=2, context=insecure) as response:
                return bool(response.status == 200)

        wait_for(ready, timeout=60, interval=0.2, what=f"{SCHEDULER_PLUGINS} /readyz")

    def _service_account_exists(self, namespace: str) -> bool:
        for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
            self.require_running(self._procs[name])
        return self.rest.exists(f"/api/v1/namespaces/{namespace}/serviceaccounts/default")

    def require_running(self, proc: ManagedProcess) -> None:
        if not proc.running():
            raise ComponentDied(f"{proc.name} exited with {proc.returncode()}:\n{proc.tail()}")


def _sweep_abandoned_workdirs() -> None:
    """Remove work dirs of clusters whose owning process was killed before it could clean up."""
    for directory in Path(tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}*"):
        try:
            owner = int((directory / "owner.pid").read_text())
        except (OSError, ValueError):
            continue
        if not pid_alive(owner):
            # Real nodes' containers, mounts and network outlive a killed owner: undo them first.
            for node_state in sorted(directory.glob("node*/node-state.json")):
                sweep(NodeState.read(node_state))
            shutil.rmtree(directory, ignore_errors=True)


def wait_crd_established(cluster: LocalCluster, name: str, timeout: float = 60.0) -> None:
    """Until the CRD reports Established (kubectl wait races a CRD that has no status yet)."""

    def established() -> bool:
        crd = cluster.rest.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        return any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in (crd.get("status") or {}).get("conditions") or ()
        )

    wait_for(established, timeout=timeout, what=f"CRD {name} Established")
