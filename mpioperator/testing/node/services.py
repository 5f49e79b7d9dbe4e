"""What every real node of one cluster shares: the CA through which the API server and the kubelets trust
each other, the image registry every node's containerd pulls from, and CoreDNS on every node's address.

One of each per cluster, however many nodes: a second node pulls from the same registry only the images
its pods use, and each kubelet names its own node's address as the cluster DNS.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Collection, Sequence
from pathlib import Path

from mpioperator.testing.cachedir import cache_dir
from mpioperator.testing.free_ports import free_ports
from mpioperator.testing.images.ensure import ensure_images
from mpioperator.testing.node import config
from mpioperator.testing.pki import CertificateAuthority, Pair
from mpioperator.testing.plane import ControlPlane
from mpioperator.testing.process import ManagedProcess
from mpioperator.testing.registry import LocalRegistry
from mpioperator.testing.wait import wait_for


def default_registry_storage() -> Path:
    """Pushed images are kept between runs, like the binaries, so a warm start pushes nothing."""
    return cache_dir() / "registry"


class NodeServices:
    def __init__(self, *, registry_storage: Path | None = None, images: Collection[str] | None = None):
        self._registry_storage = registry_storage
        # The catalog images the registry gets (and their bases); None: the whole catalog.
        self._wanted_images = images
        self.images: list[str] = []
        self.registry_address = ""
        self.ca: CertificateAuthority | None = None
        self._registry: LocalRegistry | None = None
        self._procs: list[ManagedProcess] = []

    # -- before the API server ------------------------------------------------------------------------

    def prepare(self, pki_dir: Path) -> list[str]:
        """Make the nodes' CA and the API server's kubelet client certificate; the API server's flags."""
        ca = CertificateAuthority(pki_dir / "node-ca")
        self.ca = ca
        client: Pair = ca.issue(
            "apiserver-kubelet-client",
            common_name="kube-apiserver-kubelet-client",
            organizations=("system:masters",),
        )
        return [
            # Pods reach the API server on their node's address (through the Service IP's DNAT rule).
            "--bind-address=0.0.0.0",
            f"--client-ca-file={ca.cert}",
            f"--kubelet-client-certificate={client.cert}",
            f"--kubelet-client-key={client.key}",
            f"--kubelet-certificate-authority={ca.cert}",
            # The nodes' names resolve nowhere; each one's InternalIP is its bridge address.
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            "--enable-admission-plugins=NodeRestriction",
        ]

    # -- after the control plane, once every node's bridge is up ---------------------------------------

    def start(self, cluster: ControlPlane, root: Path, *, addresses: Sequence[str], binaries: Path) -> None:
        self._start_registry(root)
        self._start_coredns(cluster, root, addresses, binaries)

    def _start_registry(self, root: Path) -> None:
        """The images' registry, its storage kept between runs so a warm start pushes nothing."""
        self._registry = LocalRegistry(
            self._registry_storage or default_registry_storage(), work_dir=root / "registry"
        )
        self._registry.start()
        self.registry_address = self._registry.address
        self.images = ensure_images(self.registry_address, self._wanted_images)

    def _start_coredns(
        self, cluster: ControlPlane, root: Path, addresses: Sequence[str], binaries: Path
    ) -> None:
        health_port, ready_port = free_ports(2)
        corefile = root / "Corefile"
        corefile.write_text(
            config.corefile(
                addresses, kubeconfig=cluster.kubeconfig, health_port=health_port, ready_port=ready_port
            )
        )
        proc = cluster.spawn_component("coredns", config.coredns_argv(binaries / "coredns", corefile))
        self._procs.append(proc)

        def ready() -> bool:
            cluster.require_running(proc)
            with urllib.request.urlopen(f"http://127.0.0.1:{ready_port}/ready", timeout=2) as response:
                return bool(response.status == 200)

        wait_for(ready, timeout=60, interval=0.2, what="CoreDNS /ready")

    def stop(self) -> None:
        for proc in reversed(self._procs):
            proc.stop()
        self._procs.clear()
        if self._registry is not None:
            self._registry.stop()
            self._registry = None
