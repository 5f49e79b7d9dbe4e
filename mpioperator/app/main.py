"""`mpi-operator`: parse flags, check the cluster, elect a leader, run the controller until told to stop."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
import uuid

import structlog
from prometheus_client import REGISTRY, CollectorRegistry

from mpioperator import __version__
from mpioperator.app import event_loop, logsetup
from mpioperator.app import options as opts
from mpioperator.app.gc_tuning import (
    pause_collection,
    resume_collection,
    resume_collection_past_the_cache,
    tune_gc,
)
from mpioperator.app.leases import KubeLeaseClient
from mpioperator.app.malloc_tuning import limit_arenas, release_free_memory
from mpioperator.app.server import HealthServer
from mpioperator.app.startup import StartupError, check_cluster, make_client
from mpioperator.clock import RealClock
from mpioperator.controller.controller import ControllerSettings, MPIJobController
from mpioperator.controller.log_follower import FollowSettings
from mpioperator.controller.metrics import JobMetrics
from mpioperator.controller.state_metrics import JobStateCollector
from mpioperator.kube.client import KubeClient
from mpioperator.leaderelection.elector import LeaderElector, LeadershipLost

log = structlog.get_logger("mpi-operator")

LOCK_NAME = "mpi-operator"


def version_lines() -> list[str]:
    return [
        "API Version: v2",
        f"Version: {__version__}",
        "Git SHA: Not provided.",
        "Built: Not provided.",
        f"Python Version: {sys.version.split()[0]}",
    ]


def main(argv: list[str] | None = None) -> int:
    try:
        options = opts.parse(argv)
    except opts.OptionsError as exc:
        print(f"mpi-operator: {exc}", file=sys.stderr)
        return 2
    if options.version:
        print("\n".join(version_lines()))
        return 0
    logsetup.configure(log_format=options.log_format, verbosity=options.verbosity)
    tune_gc()
    limit_arenas()
    try:
        return event_loop.run(run(options))
    except StartupError as exc:
        print(f"mpi-operator: {exc}", file=sys.stderr)
        return 1
    except LeadershipLost as exc:
        log.error("leader election lost", error=str(exc))
        return 1


def controller_settings(options: opts.Options) -> ControllerSettings:
    """The controller's share of the flags, as plain values (the controller knows nothing of flags)."""
    return ControllerSettings(
        namespaces=options.namespaces,
        cluster_domain=options.cluster_domain,
        queue_qps=float(options.controller_queue_rate_limit),
        queue_burst=options.controller_queue_burst,
        gang_scheduling=options.gang_scheduling,
        worker_startup_deadline_seconds=options.worker_startup_deadline_seconds,
        exec_agent_image=options.kubectl_delivery_image if options.exec_agent else None,
        host_waiter_image=options.host_waiter_image,
        max_worker_replicas=options.max_worker_replicas,
        max_restarts_cap=options.max_restarts_cap,
        launcher_log=FollowSettings(
            options.launcher_log_interval_seconds,
            options.launcher_log_qps,
            max(1, int(2 * options.launcher_log_qps)),
        ),
    )


async def run(
    options: opts.Options,
    *,
    client: KubeClient | None = None,
    stop: asyncio.Event | None = None,
    registry: CollectorRegistry = REGISTRY,
) -> int:
    """The operator until `stop` (by default: the first SIGTERM or SIGINT). A test starting it in-process
    passes its own `client` (closed here at the end), `stop` and `registry`."""
    scope = "cluster" if options.cluster_scoped else ",".join(options.namespaces)
    log.info(
        "starting",
        version=__version__,
        scope=scope,
        event_loop=event_loop.loop_name(asyncio.get_running_loop()),
        options=options.describe(),
    )
    if stop is None:
        stop = asyncio.Event()
        _install_signal_handlers(stop)
    metrics = JobMetrics(registry)
    client = client or make_client(options)
    # Liveness answers from the start: the checks below may take a while (a review per right and
    # namespace with --exec-agent), and a kubelet that sees no answer restarts the pod before they end.
    # Readiness says not yet until they have passed.
    server = HealthServer(port=options.health_port, registry=registry, serve_metrics=False)
    checked = asyncio.Event()
    server.add_ready_check(
        "startup-checks", lambda: None if checked.is_set() else "the start-up checks have not passed yet"
    )
    try:
        await server.start()
        log.info("serving health checks", port=server.port)
        await check_cluster(client, options)
        checked.set()
        clock = RealClock()
        controller = MPIJobController(
            client,
            metrics,
            settings=controller_settings(options),
            clock=clock,
        )
        registry.register(JobStateCollector(controller.cached_mpijobs, clock.utcnow))
        metrics_server = None
        if options.monitoring_port:
            metrics_server = HealthServer(port=options.monitoring_port, registry=registry, serve_metrics=True)
            await metrics_server.start()
        identity = f"{socket.gethostname()}_{uuid.uuid4()}"

        async def lead() -> None:
            metrics.is_leader.set(1)
            log.info("became leader", identity=identity)
            pause_collection()
            try:
                await controller.run(
                    options.threadiness,
                    stop,
                    drain_timeout=options.shutdown_timeout,
                    on_synced=caches_synced,
                )
            finally:
                resume_collection()

        def caches_synced() -> None:
            resume_collection_past_the_cache()
            # Handing the first lists' freed bodies back to the system takes malloc_trim 0.1-0.2 s with
            # 10,000 pods cached. In a pool thread (ctypes lets go of the GIL) it no longer stands between
            # the synced caches and the workers' first syncs.
            asyncio.get_running_loop().run_in_executor(None, release_free_memory)

        if options.leader_elect:
            # Renewals have their own connections and QPS bucket: behind pod creates held by a slow
            # admission webhook they would miss the renew deadline, and the leader would step down.
            lease_lane = client.lane("leader-election")
            leases = KubeLeaseClient(lease_lane)
            elector = LeaderElector(
                leases,
                name=LOCK_NAME,
                namespace=options.lock_namespace,
                identity=identity,
                clock=clock,
                lease_duration=options.lease_duration,
                renew_deadline=options.renew_deadline,
                retry_period=options.retry_period,
                on_new_leader=lambda who: log.info("new leader elected", leader=who),
                on_error=_lease_error,
                release_watch=leases,
            )
            server.add_health_check("leaderElection", elector.healthz)
            # A standby is ready (to take over); a leader is ready once its caches have synced.
            server.add_ready_check(
                "informers-synced", lambda: controller.ready_check() if elector.is_leader else None
            )
            election = asyncio.ensure_future(elector.run(lead))
            stopper = asyncio.ensure_future(stop.wait())
            await asyncio.wait({election, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if not election.done():
                # Not leading yet: stopping is just leaving the election.
                if not elector.is_leader:
                    election.cancel()
                await asyncio.gather(election, return_exceptions=True)
            else:
                stopper.cancel()
            metrics.is_leader.set(0)
            await lease_lane.close()
            if election.done() and not election.cancelled() and election.exception() is not None:
                exc = election.exception()
                assert exc is not None
                raise exc
        else:
            server.add_ready_check("informers-synced", controller.ready_check)
            await lead()
        if metrics_server is not None:
            await metrics_server.stop()
        log.info("stopped")
        return 0
    finally:
        await server.stop()
        await client.close()


def _lease_error(exc: BaseException) -> None:
    """A failed attempt to get, take or renew the Lease (the elector retries it): said, never swallowed."""
    log.warning("lease attempt failed", error=f"{type(exc).__name__}: {exc}")


def _install_signal_handlers(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()

    def first_signal() -> None:
        if stop.is_set():
            # A second signal means "now": skip the graceful drain, as apiserver-style handlers do.
            sys.exit(1)
        log.info("shutdown requested")
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, first_signal)


if __name__ == "__main__":
    sys.exit(main())
