"""Command-line flags, compatible with upstream's Go `flag` set (-flag, --flag, -flag=value, bare booleans).

Every upstream flag keeps its name and default so an existing Deployment's args work unchanged; klog flags
are accepted and mapped onto our logging. Our own flags are additions with upstream-compatible defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from dataclasses import dataclass

from mpioperator.api.extensions.launch import MAX_SECONDS
from mpioperator.api.extensions.restarts import DEFAULT_MAX_RESTARTS_CAP, MAX_MAX_RESTARTS
from mpioperator.controller.builders.configmap import max_worker_replicas, worker_replicas_ceiling
from mpioperator.controller.decorators.host_waiter import DEFAULT_IMAGE as DEFAULT_HOST_WAITER_IMAGE
from mpioperator.controller.log_follower import DEFAULT_INTERVAL as DEFAULT_LOG_INTERVAL
from mpioperator.controller.log_follower import DEFAULT_QPS as DEFAULT_LOG_QPS
from mpioperator.kube.protoapi import PROTOBUF

# Upstream v1's flag and image name: the init container that hands the launcher a kubectl.
DEFAULT_KUBECTL_DELIVERY_IMAGE = "mpioperator/kubectl-delivery:latest"


class OptionsError(ValueError):
    """A flag value that cannot work; the message is the one-line error shown to the user."""


@dataclass(frozen=True)
class Options:
    master: str = ""
    kubeconfig: str = ""
    namespaces: tuple[str, ...] = ()
    threadiness: int = 2
    version: bool = False
    monitoring_port: int = 0
    health_port: int = 8080
    gang_scheduling: str = ""
    lock_namespace: str = "mpi-operator"
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 5.0
    retry_period: float = 3.0
    # The kubelet's defaults since Kubernetes 1.27 (upstream's operator: client-go's 5 and 10, under which
    # the creates of one 16-worker job alone wait 1.8 s for tokens); docs/decisions-local.md L53.
    kube_api_qps: float = 50.0
    kube_api_burst: int = 100
    kube_api_content_type: str = PROTOBUF
    controller_queue_rate_limit: int = 10
    controller_queue_burst: int = 100
    cluster_domain: str = ""
    worker_startup_deadline_seconds: int = 0
    max_restarts_cap: int = DEFAULT_MAX_RESTARTS_CAP
    launcher_log_interval_seconds: float = DEFAULT_LOG_INTERVAL
    launcher_log_qps: float = DEFAULT_LOG_QPS
    exec_agent: bool = False
    kubectl_delivery_image: str = DEFAULT_KUBECTL_DELIVERY_IMAGE
    host_waiter_image: str = DEFAULT_HOST_WAITER_IMAGE
    # The largest ConfigMap that fits for the cluster domain: parse() derives it from --cluster-domain.
    max_worker_replicas: int = max_worker_replicas()
    log_format: str = "auto"
    verbosity: int = 0
    shutdown_timeout: float = 10.0

    @property
    def cluster_scoped(self) -> bool:
        return not self.namespaces

    def describe(self) -> dict[str, object]:
        """The options for the start-up log line (no flag holds a secret: credentials come from files)."""
        return dataclasses.asdict(self)


def _bool(value: str) -> bool:
    lowered = value.lower()
    if lowered in ("1", "t", "true"):
        return True
    if lowered in ("0", "f", "false"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {value!r}")


def _flag(parser: argparse.ArgumentParser, name: str, **kwargs: object) -> None:
    # Go's flag package accepts one or two dashes for every flag.
    parser.add_argument(f"-{name}", f"--{name}", **kwargs)  # type: ignore[arg-type]


def _bool_flag(parser: argparse.ArgumentParser, name: str, default: bool, help: str) -> None:
    _flag(parser, name, type=_bool, nargs="?", const=True, default=default, help=help)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mpi-operator",
        description="Kubernetes operator for MPIJobs (kubeflow.org/v2beta1).",
        allow_abbrev=False,
    )
    _flag(parser, "master", default="", help="API server URL; overrides the kubeconfig (out of cluster only)")
    _flag(parser, "kubeConfig", dest="kubeconfig", default="", help="kubeconfig path; env KUBECONFIG wins")
    _flag(
        parser,
        "namespace",
        default=None,
        help="watch only this namespace, or a comma-separated list (default: env KUBEFLOW_NAMESPACE, or all)",
    )
    _flag(parser, "threadiness", type=int, default=2, help="number of reconcile workers")
    _bool_flag(parser, "version", False, "print version information and exit")
    _flag(
        parser,
        "monitoring-port",
        type=int,
        default=0,
        help="port for /metrics; 0 (the default) serves no metrics",
    )
    _flag(parser, "health-port", type=int, default=8080, help="port for /healthz and /readyz")
    _flag(
        parser,
        "gang-scheduling",
        default="",
        help=(
            "'volcano', 'GangScheduling' (Kubernetes' own, the Workload API), or a scheduler-plugins "
            "scheduler's name; empty disables gang scheduling"
        ),
    )
    _flag(parser, "lock-namespace", default="mpi-operator", help="namespace of the leader-election Lease")
    _bool_flag(parser, "leader-elect", True, "run leader election (turn off only for a single replica)")
    _flag(parser, "leader-elect-lease-duration", type=float, default=15.0, help="seconds")
    _flag(parser, "leader-elect-renew-deadline", type=float, default=5.0, help="seconds")
    _flag(parser, "leader-elect-retry-period", type=float, default=3.0, help="seconds")
    _flag(parser, "kube-api-qps", type=float, default=50.0, help="client-side QPS limit for API calls")
    _flag(parser, "kube-api-burst", type=int, default=100, help="client-side burst for API calls")
    _flag(
        parser,
        "kube-api-content-type",
        choices=[PROTOBUF, "application/json"],
        default=PROTOBUF,
        help="what pods are listed and watched as (JSON is always the fall-back; other kinds are JSON)",
    )
    _flag(parser, "controller-queue-rate-limit", type=int, default=10, help="work-queue token-bucket rate")
    _flag(parser, "controller-queue-burst", type=int, default=100, help="work-queue token-bucket burst")
    _flag(
        parser, "cluster-domain", default="", help="append .<domain> to hostfile FQDNs (e.g. cluster.local)"
    )
    _flag(
        parser,
        "worker-startup-deadline-seconds",
        type=int,
        default=0,
        help="fail a job whose workers are not all Ready this long after it starts; 0: off (a job's "
        "annotation mpioperator.io/worker-startup-deadline-seconds overrides it)",
    )
    _flag(
        parser,
        "max-worker-replicas",
        type=int,
        default=None,
        help="a job with more workers is Invalid (default: the most for which every job's hostfile "
        "ConfigMap fits the API server's 1 MiB with --cluster-domain; at most the CRD's maximum, "
        f"{worker_replicas_ceiling()})",
    )
    _flag(
        parser,
        "max-restarts-cap",
        type=int,
        default=DEFAULT_MAX_RESTARTS_CAP,
        help="the most whole-job restarts a job may ask for (mpioperator.io/max-restarts); a job asking "
        "for more gets the Invalid condition",
    )
    _flag(
        parser,
        "launcher-log-interval-seconds",
        type=float,
        default=DEFAULT_LOG_INTERVAL,
        help="how often the log of a running launcher is read, at most, for a job that asks for progress "
        "or a stall timeout (mpioperator.io/progress, mpioperator.io/stall-timeout-seconds)",
    )
    _flag(
        parser,
        "launcher-log-qps",
        type=float,
        default=DEFAULT_LOG_QPS,
        help="the most launcher log reads a second over all jobs (a burst of twice as many); a job whose "
        "turn finds the budget spent is read at its next turn",
    )
    _bool_flag(
        parser,
        "exec-agent",
        False,
        "allow jobs to ask for the exec launch agent (mpioperator.io/launch-agent: exec): the operator "
        "then grants each such job's launcher pods/exec on its own workers, so it must hold pods/exec and "
        "manage ServiceAccounts, Roles and RoleBindings (docs/install.md)",
    )
    _flag(
        parser,
        "kubectl-delivery-image",
        default=DEFAULT_KUBECTL_DELIVERY_IMAGE,
        help="the image whose init container hands an exec-agent launcher its kubectl",
    )
    _flag(
        parser,
        "wait-for-hosts-image",
        default=DEFAULT_HOST_WAITER_IMAGE,
        help="image of the launcher's init container that waits for its hosts (a job's annotation "
        "mpioperator.io/wait-for-ssh-port asks for it): the operator's own image",
    )
    _flag(
        parser,
        "log-format",
        choices=["auto", "json", "console"],
        default="auto",
        help="auto: console on a TTY",
    )
    _flag(
        parser,
        "shutdown-timeout",
        type=float,
        default=10.0,
        help="seconds to let the syncs in flight finish on SIGTERM",
    )
    # klog flags upstream Deployments pass; -v sets verbosity, the rest are accepted for compatibility.
    _flag(parser, "v", type=int, default=0, help="log verbosity (4: per-object debug)")
    for name in ("logtostderr", "alsologtostderr"):
        _bool_flag(parser, name, False, argparse.SUPPRESS)
    for name in ("log_dir", "stderrthreshold", "vmodule", "log_file"):
        _flag(parser, name, default=None, help=argparse.SUPPRESS)
    return parser


def parse(argv: list[str] | None = None, environ: dict[str, str] | None = None) -> Options:
    """Parse flags (raises SystemExit on syntax errors, OptionsError on values that cannot work)."""
    env = dict(os.environ if environ is None else environ)
    ns = build_parser().parse_args(argv)
    namespace_arg = ns.namespace if ns.namespace is not None else env.get("KUBEFLOW_NAMESPACE", "")
    namespaces = tuple(sorted({n.strip() for n in namespace_arg.split(",") if n.strip()}))
    options = Options(
        master=ns.master,
        kubeconfig=env.get("KUBECONFIG") or ns.kubeconfig,
        namespaces=namespaces,
        threadiness=ns.threadiness,
        version=ns.version,
        monitoring_port=ns.monitoring_port,
        health_port=ns.health_port,
        gang_scheduling=ns.gang_scheduling,
        lock_namespace=ns.lock_namespace,
        leader_elect=ns.leader_elect,
        lease_duration=ns.leader_elect_lease_duration,
        renew_deadline=ns.leader_elect_renew_deadline,
        retry_period=ns.leader_elect_retry_period,
        kube_api_qps=ns.kube_api_qps,
        kube_api_burst=ns.kube_api_burst,
        kube_api_content_type=ns.kube_api_content_type,
        controller_queue_rate_limit=ns.controller_queue_rate_limit,
        controller_queue_burst=ns.controller_queue_burst,
        cluster_domain=ns.cluster_domain,
        worker_startup_deadline_seconds=ns.worker_startup_deadline_seconds,
        max_restarts_cap=ns.max_restarts_cap,
        launcher_log_interval_seconds=ns.launcher_log_interval_seconds,
        launcher_log_qps=ns.launcher_log_qps,
        exec_agent=ns.exec_agent,
        kubectl_delivery_image=ns.kubectl_delivery_image,
        host_waiter_image=ns.wait_for_hosts_image,
        max_worker_replicas=(
            max_worker_replicas(ns.cluster_domain)
            if ns.max_worker_replicas is None
            else ns.max_worker_replicas
        ),
        log_format=ns.log_format,
        verbosity=ns.v,
        shutdown_timeout=ns.shutdown_timeout,
    )
    validate(options)
    return options


def validate(options: Options) -> None:
    def fail(flag: str, message: str) -> None:
        raise OptionsError(f"invalid value for --{flag}: {message}")

    if options.threadiness < 1:
        fail("threadiness", f"{options.threadiness} (must be >= 1)")
    for flag, port in (("monitoring-port", options.monitoring_port), ("health-port", options.health_port)):
        if not 0 <= port <= 65535:
            fail(flag, f"{port} (must be a port number 0-65535)")
    if options.kube_api_qps <= 0:
        fail("kube-api-qps", f"{options.kube_api_qps} (must be > 0)")
    if options.kube_api_burst < 1:
        fail("kube-api-burst", f"{options.kube_api_burst} (must be >= 1)")
    if options.controller_queue_rate_limit < 1:
        fail("controller-queue-rate-limit", f"{options.controller_queue_rate_limit} (must be >= 1)")
    if options.controller_queue_burst < 1:
        fail("controller-queue-burst", f"{options.controller_queue_burst} (must be >= 1)")
    if options.leader_elect:
        if not options.lease_duration > options.renew_deadline:
            fail("leader-elect-lease-duration", "must be greater than --leader-elect-renew-deadline")
        if not options.renew_deadline > options.retry_period * 1.2:
            fail("leader-elect-renew-deadline", "must be greater than 1.2 x --leader-elect-retry-period")
        if options.retry_period <= 0:
            fail("leader-elect-retry-period", "must be > 0")
        if not options.lock_namespace:
            fail("lock-namespace", "must not be empty when leader election is on")
    if not 0 <= options.worker_startup_deadline_seconds <= MAX_SECONDS:
        fail(
            "worker-startup-deadline-seconds",
            f"{options.worker_startup_deadline_seconds} (must be 0-{MAX_SECONDS})",
        )
    if not 0 <= options.max_restarts_cap <= MAX_MAX_RESTARTS:
        fail("max-restarts-cap", f"{options.max_restarts_cap} (must be 0-{MAX_MAX_RESTARTS})")
    if not options.launcher_log_interval_seconds >= 1:
        fail("launcher-log-interval-seconds", f"{options.launcher_log_interval_seconds} (must be at least 1)")
    if not options.launcher_log_qps > 0:
        fail("launcher-log-qps", f"{options.launcher_log_qps} (must be > 0)")
    if options.exec_agent and not options.kubectl_delivery_image.strip():
        fail("kubectl-delivery-image", "must name an image when --exec-agent is on")
    if not options.host_waiter_image.strip():
        fail("wait-for-hosts-image", "must not be empty")
    ceiling = worker_replicas_ceiling()
    if not 1 <= options.max_worker_replicas <= ceiling:
        fail(
            "max-worker-replicas",
            f"{options.max_worker_replicas} (must be 1-{ceiling}: above it no job's hostfile fits a "
            "ConfigMap, and the CRD refuses such jobs)",
        )
    if options.shutdown_timeout < 0:
        fail("shutdown-timeout", "must be >= 0")
