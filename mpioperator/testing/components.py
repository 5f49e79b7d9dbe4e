"""Command lines of the control-plane components: pure functions of ports, paths and tier."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpioperator.testing.binaries import Binaries

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_ANNOTATION_VALUE = "fake"
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"


@dataclass(frozen=True)
class Layout:
    """Where a cluster keeps its files; everything lives under `root` and is removed on teardown."""

    root: Path

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def sa_key(self) -> Path:
        return self.pki / "sa.key"

    @property
    def tokens(self) -> Path:
        return self.pki / "tokens.csv"

    @property
    def serving_cert(self) -> Path:
        # kube-apiserver writes a self-signed pair here when given --cert-dir and no --tls-cert-file;
        # the file holds the leaf and then its CA, so it verifies the server on 127.0.0.1.
        return self.pki / "apiserver.crt"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.root / "admin.kubeconfig"

    @property
    def scheduler_plugins_config(self) -> Path:
        return self.root / "scheduler-plugins.yaml"

    @property
    def scheduler_plugins_certs(self) -> Path:
        # Its secure port (for /readyz) serves a self-signed pair it writes here.
        return self.pki / "scheduler-plugins"

    @property
    def home(self) -> Path:
        # kwok reads ~/.kwok/kwok.yaml implicitly; an empty HOME keeps a developer's file out.
        return self.root / "home"


def etcd_argv(bins: Binaries, layout: Layout, *, client_port: int, peer_port: int) -> list[str]:
    peer = f"http://127.0.0.1:{peer_port}"
    client = f"http://127.0.0.1:{client_port}"
    return [
        bins.path("etcd"),
        "--name=local",
        f"--data-dir={layout.etcd_data}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=local={peer}",
        "--unsafe-no-fsync=true",
        "--quota-backend-bytes=4294967296",
        "--log-level=warn",
    ]


# Kubernetes' own gang scheduling (alpha in 1.36): the Workload API and kube-scheduler's GangScheduling
# plugin, which the scheduler's default profile enables when its gate is on.
WORKLOAD_FEATURE_GATES = "GenericWorkload=true,GangScheduling=true"
WORKLOAD_API = "scheduling.k8s.io/v1alpha2"


def workload_gang_flags(component: str, *, with_controller_manager: bool = True) -> list[str]:
    """The flags that turn Kubernetes' gang scheduling on in one control-plane component."""
    flags = [f"--feature-gates={WORKLOAD_FEATURE_GATES}"]
    if component == "kube-apiserver":
        flags.append(f"--runtime-config={WORKLOAD_API}=true")
        if not with_controller_manager:
            # Its finalizer is lifted by kube-controller-manager's podgroup-protection controller; without
            # one a deleted PodGroup would never go.
            flags.append("--disable-admission-plugins=PodGroupProtection")
    return flags


def apiserver_argv(
    bins: Binaries,
    layout: Layout,
    *,
    port: int,
    etcd_port: int,
    with_controller_manager: bool,
    extra: tuple[str, ...] = (),
    workload_gang: bool = False,
) -> list[str]:
    argv = [
        bins.path("kube-apiserver"),
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        # The apiserver cannot publish 127.0.0.1 as the `kubernetes` Service endpoint; nothing here needs it.
        "--endpoint-reconciler-type=none",
        f"--cert-dir={layout.pki}",
        f"--token-auth-file={layout.tokens}",
        "--authorization-mode=Node,RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={layout.sa_key}",
        f"--service-account-signing-key-file={layout.sa_key}",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        "--allow-privileged=true",
        "--v=1",
    ]
    disabled = []
    if not with_controller_manager:
        # Without kube-controller-manager nobody creates `default` ServiceAccounts or lifts the
        # not-ready taint, so the admission plugins that rely on them are turned off (envtest does the same).
        disabled = ["ServiceAccount", "TaintNodesByCondition"]
    if workload_gang:
        for flag in workload_gang_flags("kube-apiserver", with_controller_manager=with_controller_manager):
            name, _, value = flag.partition("=")
            if name == "--disable-admission-plugins":
                disabled.append(value)
            else:
                argv.append(flag)
    if disabled:
        argv.append(f"--disable-admission-plugins={','.join(disabled)}")
    argv.extend(extra)
    return argv


def _admin_client_flags(layout: Layout) -> list[str]:
    """How the controller-manager and the scheduler reach the API server: as admin, alone (no election),
    serving nothing, at a rate the e2e churn needs."""
    return [
        f"--kubeconfig={layout.admin_kubeconfig}",
        "--leader-elect=false",
        "--secure-port=0",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
    ]


@dataclass(frozen=True)
class NodeLifecycle:
    """How soon the controller-manager's node lifecycle controller takes a node that stopped renewing its
    Lease for NotReady (and taints it `unreachable`), and how often its kubelets renew. Kubernetes'
    defaults unless a cluster that loses nodes on purpose (the real tier's fault tests) shortens them:
    the grace period must stay a few renewals long, or a busy machine's late renewal looks like a loss."""

    grace_seconds: int = 50
    monitor_seconds: int = 5
    lease_seconds: int = 40

    def controller_manager_flags(self) -> list[str]:
        return [
            f"--node-monitor-grace-period={self.grace_seconds}s",
            f"--node-monitor-period={self.monitor_seconds}s",
        ]


# Lost in 12 to 16 s: the Lease renewed every 2 s, NotReady after 12 s without, looked at every 2 s.
FAST_NODE_LIFECYCLE = NodeLifecycle(grace_seconds=12, monitor_seconds=2, lease_seconds=8)


def controller_manager_argv(
    bins: Binaries, layout: Layout, *, workload_gang: bool = False, lifecycle: NodeLifecycle | None = None
) -> list[str]:
    gates = workload_gang_flags("kube-controller-manager") if workload_gang else []
    return [
        bins.path("kube-controller-manager"),
        *gates,
        *_admin_client_flags(layout),
        f"--service-account-private-key-file={layout.sa_key}",
        f"--root-ca-file={layout.serving_cert}",
        # Job/pod churn in e2e is high; more workers keep the Job controller and GC from lagging.
        "--concurrent-job-syncs=20",
        "--concurrent-gc-syncs=40",
        *(lifecycle or NodeLifecycle()).controller_manager_flags(),
        "--v=1",
    ]


def scheduler_argv(bins: Binaries, layout: Layout, *, workload_gang: bool = False) -> list[str]:
    gates = workload_gang_flags("kube-scheduler") if workload_gang else []
    return [bins.path("kube-scheduler"), *gates, *_admin_client_flags(layout), "--v=1"]


def kwok_argv(bins: Binaries, layout: Layout, *, stages: Path) -> list[str]:
    return [
        bins.path("kwok"),
        f"--kubeconfig={layout.admin_kubeconfig}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}={KWOK_NODE_ANNOTATION_VALUE}",
        "--node-lease-duration-seconds=40",
        f"--cidr={POD_CIDR}",
        f"--config={stages}",
    ]


# The scheduler name upstream's e2e passes to `--gang-scheduling`; pods asking for it go to this scheduler.
SCHEDULER_PLUGINS_NAME = "scheduler-plugins-scheduler"
COSCHEDULING = "Coscheduling"


def scheduler_plugins_config(
    layout: Layout, *, scheduler_name: str = SCHEDULER_PLUGINS_NAME, permit_waiting_seconds: int = 10
) -> dict[str, Any]:
    """KubeSchedulerConfiguration for the second scheduler: one profile with Coscheduling.

    Follows scheduler-plugins v0.34.7 manifests/coscheduling/scheduler-config.yaml: the multiPoint enable
    turns Coscheduling on at every extension point it implements (queueSort, preFilter, postFilter,
    permit, reserve/unreserve); queueSort must be Coscheduling alone, so the default PrioritySort is
    disabled there. Only the profile name differs, so the vanilla kube-scheduler keeps `default-scheduler`.
    """
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": str(layout.admin_kubeconfig), "qps": 200, "burst": 400},
        "profiles": [
            {
                "schedulerName": scheduler_name,
                "plugins": {
                    "multiPoint": {"enabled": [{"name": COSCHEDULING}]},
                    "queueSort": {"enabled": [{"name": COSCHEDULING}], "disabled": [{"name": "*"}]},
                },
                "pluginConfig": [
                    {"name": COSCHEDULING, "args": {"permitWaitingTimeSeconds": permit_waiting_seconds}}
                ],
            }
        ],
    }


# A gang that Coscheduling rejected (PreFilter "resource gap", or Permit/PostFilter rejections) is only
# retried on a Pod add or a PodGroup add/update anywhere in the cluster, the events the plugin registers:
# not when a node is added or another gang's pods finish. Busy clusters create pods all the time; a quiet
# test cluster does not, so the retry would wait for the scheduler's leftover flush, 5 minutes by default
# (checked every 30 s). The test cluster shortens that wait; nothing else about scheduling changes.
SCHEDULER_PLUGINS_MAX_UNSCHEDULABLE = "5s"


def scheduler_plugins_argv(
    binary: Path,
    layout: Layout,
    *,
    port: int,
    max_unschedulable: str = SCHEDULER_PLUGINS_MAX_UNSCHEDULABLE,
) -> list[str]:
    """The scheduler-plugins binary is kube-scheduler 1.34 plus plugins: the same flags apply."""
    return [
        str(binary),
        f"--config={layout.scheduler_plugins_config}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={layout.scheduler_plugins_certs}",
        # Deprecated in kube-scheduler but still honoured in 1.34; there is no config-file field for it.
        f"--pod-max-in-unschedulable-pods-duration={max_unschedulable}",
        "--v=2",
    ]
