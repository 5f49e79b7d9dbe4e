"""Command lines of the control-plane components: pure functions of ports, paths and tier."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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


def apiserver_argv(
    bins: Binaries,
    layout: Layout,
    *,
    port: int,
    etcd_port: int,
    with_controller_manager: bool,
    extra: tuple[str, ...] = (),
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
    if not with_controller_manager:
        # Without kube-controller-manager nobody creates `default` ServiceAccounts or lifts the
        # not-ready taint, so the admission plugins that rely on them are turned off (envtest does the same).
        argv.append("--disable-admission-plugins=ServiceAccount,TaintNodesByCondition")
    argv.extend(extra)
    return argv


def controller_manager_argv(bins: Binaries, layout: Layout) -> list[str]:
    return [
        bins.path("kube-controller-manager"),
        f"--kubeconfig={layout.admin_kubeconfig}",
        "--leader-elect=false",
        "--secure-port=0",
        f"--service-account-private-key-file={layout.sa_key}",
        f"--root-ca-file={layout.serving_cert}",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        # Job/pod churn in e2e is high; more workers keep the Job controller and GC from lagging.
        "--concurrent-job-syncs=20",
        "--concurrent-gc-syncs=40",
        "--v=1",
    ]


def scheduler_argv(bins: Binaries, layout: Layout) -> list[str]:
    return [
        bins.path("kube-scheduler"),
        f"--kubeconfig={layout.admin_kubeconfig}",
        "--leader-elect=false",
        "--secure-port=0",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        "--v=1",
    ]


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
