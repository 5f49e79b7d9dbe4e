"""Configuration files and command lines of the real node's parts: pure functions of paths and settings."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mpioperator.testing.node.settings import (
    CLUSTER_DOMAIN,
    MIRRORED_REGISTRIES,
    PAUSE_IMAGE,
    NodeLayout,
    NodeNetwork,
)

CNI_BIN_DIR = Path("/usr/lib/cni")  # Debian's containernetworking-plugins
CNI_NETWORK_NAME = "mpioperator"


def containerd_config(layout: NodeLayout) -> str:
    """containerd 1.6 (config version 2): its own root, state and socket, so it never meets another.

    `restrict_oom_score_adj`: this VM gives no CAP_SYS_RESOURCE, and without it runc fails every container
    writing the -998/-997 the kubelet asks for. `netns_mounts_under_state_dir`: the pods' network namespaces
    are bind-mounted under our state dir, not /var/run/netns, so teardown finds every one of them.
    """
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return "\n".join(
        [
            "version = 2",
            f'root = "{layout.containerd_root}"',
            f'state = "{layout.containerd_state}"',
            "[grpc]",
            f'  address = "{layout.containerd_socket}"',
            "[ttrpc]",
            f'  address = "{layout.containerd_socket}.ttrpc"',
            f"[{cri}]",
            f'  sandbox_image = "{PAUSE_IMAGE}"',
            "  restrict_oom_score_adj = true",
            "  netns_mounts_under_state_dir = true",
            f"[{cri}.containerd]",
            '  snapshotter = "overlayfs"',
            '  default_runtime_name = "runc"',
            f"[{cri}.containerd.runtimes.runc]",
            '  runtime_type = "io.containerd.runc.v2"',
            f"[{cri}.containerd.runtimes.runc.options]",
            "  SystemdCgroup = false",
            f"[{cri}.cni]",
            f'  bin_dir = "{CNI_BIN_DIR}"',
            f'  conf_dir = "{layout.cni_conf_dir}"',
            f"[{cri}.registry]",
            f'  config_path = "{layout.registry_hosts}"',
            '[plugins."io.containerd.internal.v1.opt"]',
            f'  path = "{layout.containerd_root / "opt"}"',
            "",
        ]
    )


def registry_hosts_toml(registry: str) -> str:
    """A mirror that is also the upstream (`server`): a name missing from the local registry fails to pull
    at once, as an unknown image does, instead of trying the internet this machine cannot reach."""
    url = f"http://{registry}"
    return "\n".join(
        [
            f'server = "{url}"',
            f'[host."{url}"]',
            '  capabilities = ["pull", "resolve"]',
            "",
        ]
    )


def registry_mirrors(registry: str) -> dict[str, str]:
    """hosts.toml per mirrored registry, keyed by the directory name containerd looks it up by."""
    return {name: registry_hosts_toml(registry) for name in MIRRORED_REGISTRIES}


def cni_conflist(network: NodeNetwork, layout: NodeLayout) -> dict[str, Any]:
    """One bridge, host-local addresses; hairpin so a pod reaches itself through its Service name."""
    return {
        "cniVersion": "0.4.0",
        "name": CNI_NETWORK_NAME,
        "plugins": [
            {
                "type": "bridge",
                "bridge": network.bridge,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": network.subnet, "gateway": network.gateway}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(layout.cni_ipam_dir),
                },
            }
        ],
    }


def kubelet_config(
    network: NodeNetwork,
    layout: NodeLayout,
    *,
    port: int,
    client_ca: Path,
    serving_cert: Path,
    serving_key: Path,
    cgroup_root: str,
    lease_seconds: int = 40,
) -> dict[str, Any]:
    """KubeletConfiguration for this machine (cgroup v1, no swap accounting, no CAP_SYS_RESOURCE).

    Webhook authentication and authorization, and a serving certificate from the cluster CA: the API
    server proves itself with a client certificate for `kubectl logs` and `exec`, as in a real cluster.
    """
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": network.gateway,
        "port": port,
        "readOnlyPort": 0,
        "healthzPort": 0,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(client_ca)},
        },
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": str(serving_cert),
        "tlsPrivateKeyFile": str(serving_key),
        "containerRuntimeEndpoint": f"unix://{layout.containerd_socket}",
        "podLogsDir": str(layout.pod_logs),
        # kubelet >= 1.35 refuses cgroup v1 hosts unless told otherwise; this VM has only v1 controllers.
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        # Every pod's cgroup lives under this root, so teardown can find and remove all of them.
        "cgroupRoot": cgroup_root,
        "cgroupsPerQOS": True,
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [network.gateway],
        "resolvConf": "/etc/resolv.conf",
        "failSwapOn": False,
        "serializeImagePulls": False,
        # A small test machine: evict only when it is really out of room.
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        # Images come from the local registry; collecting them would only cost pulls.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "nodeStatusReportFrequency": "10s",
        # The kubelet renews its Lease every quarter of this; a cluster that must see a lost node soon
        # (the fault tests) shortens it together with the controller-manager's grace period.
        "nodeLeaseDurationSeconds": lease_seconds,
        "staticPodPath": "",
        "logging": {"format": "text"},
    }


def kubelet_argv(binary: Path, network: NodeNetwork, layout: NodeLayout, *, node_name: str) -> list[str]:
    return [
        str(binary),
        f"--config={layout.kubelet_config}",
        f"--kubeconfig={layout.kubelet_kubeconfig}",
        f"--root-dir={layout.kubelet_root}",
        f"--cert-dir={layout.kubelet_root / 'pki'}",
        f"--hostname-override={node_name}",
        f"--node-ip={network.gateway}",
        "--v=2",
    ]


def containerd_argv(layout: NodeLayout) -> list[str]:
    return ["containerd", f"--config={layout.containerd_config}", "--log-level=warn"]


def corefile(addresses: Sequence[str], *, kubeconfig: Path, health_port: int, ready_port: int) -> str:
    """Cluster DNS on every real node's address (one server for all of them, each kubelet naming its own
    node's address): Service and pod names from the API server, the rest forwarded."""
    return "\n".join(
        [
            ".:53 {",
            f"    bind {' '.join(addresses)}",
            "    errors",
            f"    health 127.0.0.1:{health_port}",
            f"    ready 127.0.0.1:{ready_port}",
            f"    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{",
            f"        kubeconfig {kubeconfig}",
            "        pods insecure",
            "        fallthrough in-addr.arpa ip6.arpa",
            "        ttl 5",
            "    }",
            "    forward . /etc/resolv.conf",
            "    cache 5",
            "    loop",
            "}",
            "",
        ]
    )


def coredns_argv(binary: Path, corefile: Path) -> list[str]:
    return [str(binary), "-conf", str(corefile)]


def apiserver_dnat_rule(network: NodeNetwork, *, service_ip: str, api_port: int) -> list[str]:
    """Pods dial the `kubernetes` Service IP; with no kube-proxy, one DNAT rule sends them to the API server
    on the node's address. The comment marks it as ours for teardown."""
    return [
        "PREROUTING",
        "-s",
        network.subnet,
        "-d",
        f"{service_ip}/32",
        "-p",
        "tcp",
        "--dport",
        "443",
        "-m",
        "comment",
        "--comment",
        network.tag,
        "-j",
        "DNAT",
        "--to-destination",
        f"{network.gateway}:{api_port}",
    ]


def isolation_rules(network: NodeNetwork) -> list[list[str]]:
    """FORWARD rules that drop every packet to and from the node's pods: from the rest of the cluster the
    node is as gone as a machine whose power or link failed (no reset, no ICMP), which is what mpirun and
    the TCP connections to the node's pods then meet. Tagged like the node's other rules for teardown."""
    tag = ["-m", "comment", "--comment", network.tag, "-j", "DROP"]
    return [["FORWARD", "-s", network.subnet, *tag], ["FORWARD", "-d", network.subnet, *tag]]


def dump_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True)
