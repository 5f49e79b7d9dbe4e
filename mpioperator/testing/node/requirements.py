"""Whether this machine can run a real node at all: Linux, root, the packages, a cgroup hierarchy."""

from __future__ import annotations

import os
import shutil
import sys

from mpioperator.testing.node import config, host

REQUIRED_COMMANDS = {
    "containerd": "containerd",
    "runc": "runc",
    "iptables": "iptables",
    "ip": "iproute2",
    "ctr": "containerd",
}


class NodeUnavailable(RuntimeError):
    """This machine cannot run a real node; the message says why and what to do."""


def host_problem() -> str | None:
    """Why a real node cannot run here, in one line, or None."""
    if sys.platform != "linux":
        return "a real node needs Linux"
    if os.geteuid() != 0:
        return "a real node needs root (containerd, the kubelet and the CNI bridge change host networking)"
    missing = sorted({pkg for cmd, pkg in REQUIRED_COMMANDS.items() if shutil.which(cmd) is None})
    if not (config.CNI_BIN_DIR / "bridge").exists():
        missing.append("containernetworking-plugins")
    if missing:
        packages = " ".join(missing)
        return f"missing packages for a real node: apt-get install {packages} (or run hack/setup-node.sh)"
    if not host.cgroup_mounts():
        return "no cgroup hierarchy is mounted"
    return None
