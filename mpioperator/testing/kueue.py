"""Kueue as a component of a local cluster, for e2e tests with Kueue queueing MPIJobs beside the operator.

Kueue is built from its Go module (hack/build-kueue.sh); its CRDs and webhook manifests are read from the
same module, never copied into the repository. Kueue runs as a local process with the admin kubeconfig;
its webhooks are served on 127.0.0.1 with a certificate from a CA of our own (kueue_manifests.py says why),
and it runs in a private mount namespace so that its hard-wired metrics certificate directory can be
provided without touching the host's /etc: that needs root (docs/decisions-local.md L30).

Kueue needs kube-controller-manager's garbage collector (a job's Workload is deleted through its owner
reference), so it runs on the full tier; start it after the MPIJob CRD is served, so that its MPIJob
controller starts at once instead of polling for the API.
"""

from __future__ import annotations

import os
import shutil
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mpioperator.testing import kueue_manifests
from mpioperator.testing.binaries import BinariesUnavailable, built_executable
from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.free_ports import free_ports, start_on_free_ports
from mpioperator.testing.images.versions import pinned
from mpioperator.testing.kueue_objects import QUEUE_NAME_LABEL, path
from mpioperator.testing.pki import CertificateAuthority
from mpioperator.testing.podgroup_crds import module_dir
from mpioperator.testing.process import ManagedProcess
from mpioperator.testing.rest import RestError
from mpioperator.testing.wait import ProbeAborted, wait_for

NAME = "kueue"
MODULE = "sigs.k8s.io/kueue"
VERSION = pinned("KUEUE_VERSION")
BIN_ENV = "KUEUE_BIN"
_SCRIPT = Path(__file__).resolve().parents[2] / "hack" / "build-kueue.sh"
_MPIJOBS = "/apis/kubeflow.org/v2beta1/namespaces/{namespace}/mpijobs"
# The log level at which Kueue logs each admission, preemption and requeue (they are V(2)).
LOG_LEVEL = 2
START_TIMEOUT = 120.0
PROBE_NAMESPACE = "kueue-probe"


class KueueDied(ProbeAborted):
    pass


def host_problem() -> str | None:
    """Why this machine cannot run Kueue here, or None."""
    if os.geteuid() != 0:
        return "Kueue runs in a private mount namespace with an overlay over /etc, which needs root"
    missing = [tool for tool in ("unshare", "mount") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} (util-linux) not found"
    return None


def find_kueue() -> Path:
    """$KUEUE_BIN, else the cached build of hack/build-kueue.sh (built if needed)."""
    return built_executable(BIN_ENV, _SCRIPT, what="Kueue", kind="Kueue")


def crd_paths() -> list[Path]:
    return sorted((module_dir(MODULE, VERSION) / "config" / "components" / "crd" / "bases").glob("*.yaml"))


def webhook_manifests() -> Path:
    return module_dir(MODULE, VERSION) / "config" / "components" / "webhook" / "manifests.yaml"


@dataclass
class Kueue:
    """One running Kueue and where its files are; it stops with its cluster."""

    cluster: LocalCluster
    process: ManagedProcess
    root: Path
    webhook_port: int
    health_port: int

    @property
    def log_path(self) -> Path:
        return self.process.log_path

    def running(self) -> bool:
        return self.process.running()

    def apply(self, *objects: Mapping[str, Any]) -> None:
        """Server-side apply of Kueue objects (or any others), through Kueue's webhooks if they have any."""
        self.cluster.kubectl(
            "apply", "--server-side", "-f", "-", input=yaml.safe_dump_all([dict(o) for o in objects])
        )

    def workloads(self, namespace: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.cluster.rest.get(path("Workload", namespace=namespace))["items"]
        return items


def start(
    cluster: LocalCluster,
    root: Path,
    *,
    binary: Path | None = None,
    config: Mapping[str, Any] | None = None,
) -> Kueue:
    """Serve Kueue's CRDs, run Kueue (its log in `root`), register its webhooks, and wait until its MPIJob
    integration is live. `config` is merged into the Configuration (kueue_manifests.configuration)."""
    problem = host_problem()
    if problem:
        raise BinariesUnavailable(f"cannot run Kueue here: {problem}")
    binary = binary or find_kueue()
    root.mkdir(parents=True, exist_ok=True)
    for crd in crd_paths():
        cluster.kubectl("apply", "--server-side", "-f", str(crd))
        wait_crd_established(cluster, yaml.safe_load(crd.read_text())["metadata"]["name"])
    _create_namespace(cluster, kueue_manifests.NAMESPACE)
    ca = CertificateAuthority(root / "pki", name="kueue-webhook-ca")
    serving = ca.issue("webhook", common_name="kueue-webhook", ips=("127.0.0.1",), server=True)
    cert_dir = root / "webhook-certs"
    metrics_dir = root / "etc-overlay" / "upper" / kueue_manifests.METRICS_CERT_DIR.relative_to("/etc")
    for directory in (cert_dir, metrics_dir, root / "etc-overlay" / "work"):
        directory.mkdir(parents=True, exist_ok=True)
        if directory != root / "etc-overlay" / "work":
            shutil.copyfile(serving.cert, directory / "tls.crt")
            shutil.copyfile(serving.key, directory / "tls.key")

    def start_once() -> Kueue:
        webhook_port, health_port = free_ports(2)
        settings = kueue_manifests.configuration(
            webhook_port=webhook_port, health_port=health_port, cert_dir=cert_dir, overrides=config
        )
        config_file = root / "kueue-config.yaml"
        config_file.write_text(yaml.safe_dump(settings))
        command = [
            str(binary),
            f"--config={config_file}",
            f"--kubeconfig={cluster.kubeconfig}",
            f"--zap-log-level={LOG_LEVEL}",
        ]
        argv = kueue_manifests.overlay_argv(
            command, upper=root / "etc-overlay" / "upper", work=root / "etc-overlay" / "work"
        )
        process = cluster.spawn_component(NAME, argv, log_path=root / "kueue.log")
        kueue = Kueue(cluster, process, root, webhook_port, health_port)
        wait_for(lambda: _ready(kueue), timeout=START_TIMEOUT, what=f"Kueue /readyz (log: {kueue.log_path})")
        return kueue

    kueue = start_on_free_ports(start_once, lost_race=lambda exc: "address already in use" in str(exc))
    documents = list(yaml.safe_load_all(webhook_manifests().read_text()))
    hooks = kueue_manifests.webhook_configurations(
        documents, port=kueue.webhook_port, ca_pem=ca.cert.read_bytes()
    )
    kueue.apply(*hooks)
    _wait_mpijobs_managed(kueue)
    return kueue


def _ready(kueue: Kueue) -> bool:
    if not kueue.running():
        raise KueueDied(f"Kueue exited with {kueue.process.returncode()}:\n{kueue.process.tail()}")
    url = f"http://127.0.0.1:{kueue.health_port}/readyz"
    with urllib.request.urlopen(url, timeout=2) as response:
        return bool(response.status == 200)


def _wait_mpijobs_managed(kueue: Kueue) -> None:
    """Until Kueue's MPIJob webhook suspends a queued job and its controller makes the job a Workload.

    /readyz turns ok before the MPIJob controller's cache has synced; a probe job queued to no LocalQueue
    (so never admitted) shows both halves work. It has a namespace of its own, deleted afterwards: Kueue
    leaves jobs in its own namespace and kube-system alone.
    """
    namespace = PROBE_NAMESPACE
    _create_namespace(kueue.cluster, namespace)
    probe = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "kueue-probe", "labels": {QUEUE_NAME_LABEL: "kueue-probe"}},
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "launcher", "image": "kueue-probe"}]}},
                }
            }
        },
    }
    jobs = _MPIJOBS.format(namespace=namespace)

    def create() -> dict[str, Any]:
        # Refused while the webhook server is not serving yet (failurePolicy Fail): tried again.
        return kueue.cluster.rest.create(jobs, probe)

    created = wait_for(create, timeout=START_TIMEOUT, what="an MPIJob create through Kueue's webhooks")
    try:
        if created["spec"].get("runPolicy", {}).get("suspend") is not True:
            raise AssertionError(f"Kueue's MPIJob webhook did not suspend a queued job: {created['spec']}")
        uid = created["metadata"]["uid"]

        def workload() -> bool:
            if not kueue.running():
                raise KueueDied(f"Kueue exited:\n{kueue.process.tail()}")
            return any(
                ref.get("uid") == uid
                for w in kueue.workloads(namespace)
                for ref in w["metadata"].get("ownerReferences") or ()
            )

        wait_for(workload, timeout=START_TIMEOUT, what=f"Kueue to make a Workload (log: {kueue.log_path})")
    finally:
        kueue.cluster.rest.delete(f"/api/v1/namespaces/{namespace}")


def _create_namespace(cluster: LocalCluster, name: str) -> None:
    try:
        cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": name}})
    except RestError as err:
        if err.status != 409:
            raise
