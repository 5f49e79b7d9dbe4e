"""A real Prometheus (and promtool), built from its Go module by hack/build-prometheus.sh, on loopback.

It scrapes static targets every second and evaluates rule files every second, so a test sees a change
within a few seconds; its HTTP API answers the dashboard's and the alerts' expressions.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from mpioperator.testing.binaries import BinariesUnavailable, find_built_tool, run_build_script
from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.free_ports import free_port, start_on_free_ports
from mpioperator.testing.http_probe import answers_ok
from mpioperator.testing.process import ManagedProcess
from mpioperator.testing.wait import ProbeAborted, WaitTimeout, wait_for

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "hack" / "build-prometheus.sh"
PROMETHEUS_BIN_ENV = "PROMETHEUS_BIN"
MONITORING_CRDS_ENV = "PROMETHEUS_OPERATOR_CRDS"
COMPONENT = REPO / "manifests" / "components" / "prometheus"
PROMETHEUS_RULE = COMPONENT / "prometheus-rule.yaml"
DASHBOARD = COMPONENT / "dashboard.json"


def find_prometheus(*, build: bool = True) -> Path:
    """PROMETHEUS_BIN, then `prometheus` on PATH, then hack/build-prometheus.sh; promtool sits next to it."""
    binary = find_built_tool("prometheus", env=PROMETHEUS_BIN_ENV, script=BUILD_SCRIPT, build=build)
    if not os.access(binary.parent / "promtool", os.X_OK):
        raise BinariesUnavailable(f"no promtool next to {binary}")
    return binary


def promtool(prometheus: Path) -> Path:
    return prometheus.parent / "promtool"


def monitoring_crds() -> list[Path]:
    """The Prometheus Operator's ServiceMonitor, PodMonitor and PrometheusRule CRDs (from its Go module)."""
    explicit = os.environ.get(MONITORING_CRDS_ENV)
    directory = Path(explicit) if explicit else run_build_script(BUILD_SCRIPT, "crds", what="monitoring CRDs")
    names = ("servicemonitors", "podmonitors", "prometheusrules")
    files = [directory / f"monitoring.coreos.com_{name}.yaml" for name in names]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise BinariesUnavailable(f"Prometheus Operator CRDs missing: {', '.join(missing)}")
    return files


def alert_rules() -> dict[str, Any]:
    """The PrometheusRule's spec: a Prometheus rule file (`groups:`)."""
    spec = yaml.safe_load(PROMETHEUS_RULE.read_text())["spec"]
    return dict(spec)


def write_rule_file(path: Path, rules: Mapping[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(dict(rules), sort_keys=False))
    return path


class PromQLError(RuntimeError):
    """The HTTP API answered with status error (a parse or evaluation error); the message is its own."""


def scrape_config(targets: Mapping[str, Sequence[str]], rule_files: Sequence[Path]) -> dict[str, Any]:
    return {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": list(addresses)}]}
            for job, addresses in targets.items()
        ],
    }


class LocalPrometheus:
    """`start()` runs Prometheus on a free loopback port and returns once it is ready."""

    def __init__(
        self,
        targets: Mapping[str, Sequence[str]],
        *,
        rule_files: Sequence[Path] = (),
        work_dir: Path | None = None,
        binary: Path | None = None,
    ) -> None:
        self.targets = {job: list(addresses) for job, addresses in targets.items()}
        self.rule_files = list(rule_files)
        self._own_work_dir = work_dir is None
        self.work_dir = work_dir or Path(tempfile.mkdtemp(prefix="mpioperator-prometheus-"))
        self._binary = binary
        self._process: ManagedProcess | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> LocalPrometheus:
        binary = self._binary or find_prometheus()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        config = self.work_dir / "prometheus.yml"
        config.write_text(yaml.safe_dump(scrape_config(self.targets, self.rule_files), sort_keys=False))
        try:
            return start_on_free_ports(lambda: self._start_once(binary, config, timeout))
        except ProbeAborted as exc:
            raise RuntimeError(f"prometheus exited at start:\n{exc}") from None

    def _start_once(self, binary: Path, config: Path, timeout: float) -> LocalPrometheus:
        self.port = free_port()
        argv = [
            str(binary),
            f"--config.file={config}",
            f"--storage.tsdb.path={self.work_dir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=warn",
        ]
        process = ManagedProcess("prometheus", argv, self.work_dir / "prometheus.log")
        process.start()
        self._process = process
        try:
            wait_for(self._ready, timeout=timeout, what=f"prometheus on {self.url} ready")
            return self
        except WaitTimeout:
            tail = process.tail()
            self.stop()
            raise RuntimeError(f"prometheus not ready within {timeout} s:\n{tail}") from None
        except ProbeAborted:
            process.stop()
            raise ProbeAborted(process.tail()) from None

    def _ready(self) -> bool:
        if self._process is None or not self._process.running():
            raise ProbeAborted("prometheus exited")
        return answers_ok(f"{self.url}/-/ready")

    def api(self, path: str, **params: str) -> Any:
        """GET /api/v1/<path>; the `data` of a success, PromQLError with Prometheus's own message if not."""
        query = urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as answer:
                body = json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            body = json.loads(exc.read() or b"{}")
        if body.get("status") != "success":
            raise PromQLError(f"{body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's result (a vector's samples; a scalar as one sample without labels)."""
        data = self.api("query", query=expr)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        return list(data["result"])

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        data = self.api("query_range", query=expr, start=str(start), end=str(end), step=str(step))
        return list(data["result"])

    def rule_groups(self) -> list[dict[str, Any]]:
        return list(self.api("rules")["groups"])

    def target_health(self) -> dict[str, str]:
        """scrape URL -> health (up, down, unknown) of every active target."""
        targets = self.api("targets")["activeTargets"]
        return {t["scrapeUrl"]: t["health"] for t in targets}

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()
            self._process = None
        if self._own_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def log_tail(self, lines: int = 40) -> str:
        return self._process.tail(lines) if self._process else ""


def _promtool(prometheus: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(promtool(prometheus)), *args], capture_output=True, text=True, check=False, timeout=60, cwd=cwd
    )


def check_rules(prometheus: Path, rule_file: Path) -> subprocess.CompletedProcess[str]:
    """`promtool check rules`: every expression parses and every rule is well-formed."""
    return _promtool(prometheus, "check", "rules", str(rule_file))


def run_rule_tests(prometheus: Path, test_file: Path) -> subprocess.CompletedProcess[str]:
    """`promtool test rules`: alerts fire (or not) on the input series a test file gives."""
    return _promtool(prometheus, "test", "rules", str(test_file), cwd=test_file.parent)


def install_monitoring_crds(cluster: LocalCluster) -> None:
    """ServiceMonitor, PodMonitor and PrometheusRule served by the cluster, as the Prometheus Operator
    would install them, so that those objects are validated against their real schemas."""
    for crd in monitoring_crds():
        cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd))
    for name in ("servicemonitors", "podmonitors", "prometheusrules"):
        wait_crd_established(cluster, f"{name}.monitoring.coreos.com")
