"""The real `helm` (built from its Go module by hack/build-helm.sh) driving charts/mpi-operator."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from mpioperator.testing.binaries import find_built_tool

if TYPE_CHECKING:
    from mpioperator.testing.cluster import LocalCluster

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "mpi-operator"
BUILD_SCRIPT = REPO / "hack" / "build-helm.sh"
HELM_BIN_ENV = "HELM_BIN"


def find_helm(*, build: bool = True) -> Path:
    """HELM_BIN, then `helm` on PATH, then hack/build-helm.sh (built once, cached by version)."""
    return find_built_tool("helm", env=HELM_BIN_ENV, script=BUILD_SCRIPT, build=build)


class HelmError(RuntimeError):
    """helm exited non-zero; the message holds its stderr."""

    def __init__(self, args: list[str], result: subprocess.CompletedProcess[str]) -> None:
        super().__init__(f"helm {' '.join(args)} exited {result.returncode}: {result.stderr.strip()}")
        self.stderr = result.stderr


class Helm:
    """One helm client: its own config/cache dirs under `home` (never the user's; the caller's temporary
    directory, so nothing is left behind), optionally a cluster's kubeconfig."""

    def __init__(self, binary: Path, *, home: Path, kubeconfig: Path | None = None) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.home = home
        self.home.mkdir(parents=True, exist_ok=True)

    def _env(self) -> dict[str, str]:
        env = {
            "HELM_CONFIG_HOME": str(self.home / "config"),
            "HELM_CACHE_HOME": str(self.home / "cache"),
            "HELM_DATA_HOME": str(self.home / "data"),
            "PATH": "/usr/bin:/bin",
            # client-go's discovery cache goes under $HOME/.kube; without HOME it lands in the cwd.
            "HOME": str(self.home),
        }
        if self.kubeconfig is not None:
            env["KUBECONFIG"] = str(self.kubeconfig)
        return env

    def run(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(self.binary), *args],
            capture_output=True,
            text=True,
            env=self._env(),
            check=False,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise HelmError(list(args), result)
        return result

    def values_file(self, values: Mapping[str, Any]) -> Path:
        """Values as a file: `--set` would turn 7.5 into a string and lists into surprises."""
        handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - kept for helm to read later
            "w", suffix=".yaml", prefix="values-", dir=self.home, delete=False
        )
        with handle:
            yaml.safe_dump(dict(values), handle)
        return Path(handle.name)

    def template(
        self, release: str, namespace: str, values: Mapping[str, Any] | None = None, *, chart: Path = CHART
    ) -> list[dict[str, Any]]:
        """The rendered objects, as `helm template` prints them (no cluster needed)."""
        args = ["template", release, str(chart), "--namespace", namespace]
        if values:
            args += ["--values", str(self.values_file(values))]
        rendered = self.run(*args).stdout
        return [doc for doc in yaml.safe_load_all(rendered) if doc]

    def install(
        self,
        release: str,
        namespace: str,
        values: Mapping[str, Any] | None = None,
        *,
        upgrade: bool = False,
        chart: Path = CHART,
    ) -> None:
        """`helm install` (or `helm upgrade`), waiting for nothing: the tests wait for what they check."""
        args = ["upgrade" if upgrade else "install", release, str(chart), "--namespace", namespace]
        if values:
            args += ["--values", str(self.values_file(values))]
        self.run(*args)

    def uninstall(self, release: str, namespace: str) -> None:
        self.run("uninstall", release, "--namespace", namespace, "--wait")

    def manifest(self, release: str, namespace: str) -> list[dict[str, Any]]:
        """The objects of the release's current revision, from the release record in the cluster."""
        text = self.run("get", "manifest", release, "--namespace", namespace).stdout
        return [doc for doc in yaml.safe_load_all(text) if doc]

    def history(self, release: str, namespace: str) -> list[dict[str, Any]]:
        out = self.run("history", release, "--namespace", namespace, "--output", "json").stdout
        return list(json.loads(out))

    def releases(self, namespace: str) -> list[str]:
        states = ("--deployed", "--failed", "--pending", "--superseded", "--uninstalling", "--uninstalled")
        out = self.run("list", "--namespace", namespace, *states, "--output", "json").stdout
        return [str(r["name"]) for r in json.loads(out)]


def object_ref(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    """(`kubectl get` resource spelled Kind.version.group, namespace or "", name) of a manifest object."""
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    kind = str(obj["kind"])
    resource = f"{kind}.{version}.{group}" if group else kind
    meta = obj.get("metadata") or {}
    return resource, str(meta.get("namespace") or ""), str(meta["name"])


def release_leftovers(cluster: LocalCluster, release: str, objects: list[dict[str, Any]]) -> list[str]:
    """What a release left in the cluster: any of `objects` (its manifest) still there, anything of any
    listable kind labelled with its instance, and Helm's own release records."""
    left: list[str] = []
    for obj in objects:
        resource, namespace, name = object_ref(obj)
        args = ["get", resource, name, "--ignore-not-found", "-o", "name"]
        if namespace:
            args += ["--namespace", namespace]
        found = cluster.kubectl(*args).stdout.strip()
        if found:
            left.append(f"{found} in {namespace or 'the cluster'}")
    kinds = cluster.kubectl("api-resources", "--verbs=list", "-o", "name").stdout.split()
    # Events are what happened, not what was installed: a deleted object's events expire by themselves.
    kinds = [k for k in kinds if k not in ("events", "events.events.k8s.io")]
    selector = f"app.kubernetes.io/instance={release}"
    labelled = cluster.kubectl("get", ",".join(kinds), "--all-namespaces", "-l", selector, "-o", "name")
    left += [f"{line} (labelled)" for line in labelled.stdout.split()]
    records = cluster.kubectl(
        "get", "secrets", "--all-namespaces", "-l", f"owner=helm,name={release}", "-o", "name"
    )
    left += [f"{line} (Helm release record)" for line in records.stdout.split()]
    return left
