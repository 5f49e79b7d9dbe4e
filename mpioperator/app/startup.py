"""Start-up: build the API client from flags, and fail fast with one line when the cluster cannot work."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import structlog
from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_exponential

from mpioperator import __version__
from mpioperator.app.options import Options
from mpioperator.controller.controller import gang_backend
from mpioperator.controller.features.exec_agent import OPERATOR_RIGHTS
from mpioperator.controller.watched import Scopes
from mpioperator.controller.watched import watched as watched_resources
from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient, RequestMetrics
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.protoapi import PROTOBUF
from mpioperator.kube.ratelimit import ClientLimiters
from mpioperator.kube.resources import KUBERNETES_POD_GROUPS, MPIJOBS, SELF_SUBJECT_ACCESS_REVIEWS, Resource

log = structlog.get_logger(__name__)

T = TypeVar("T")

USER_AGENT = f"mpi-operator/{__version__}"
_PROBE_DEADLINE = 30.0
# The checks send a list per watched resource and namespace, and with --exec-agent an access review per
# right and namespace: hundreds of requests for a few dozen namespaces. They go out this many at a time,
# on connections and a token bucket of their own, so neither the controller's bucket (which they would
# use up, and whose --kube-api-qps would pace them to minutes) nor its connections wait for them.
CHECK_CONCURRENCY = 8
CHECK_QPS = 100.0
CHECK_BURST = 100


class StartupError(RuntimeError):
    """A condition under which the operator cannot do its job; the message is printed as one line."""


def make_client(options: Options, *, metrics: RequestMetrics | None = None) -> KubeClient:
    """The API client the flags describe; `metrics`, if given, is told about every request."""
    qps, burst = float(options.kube_api_qps), int(options.kube_api_burst)
    protobuf = options.kube_api_content_type == PROTOBUF
    pool = pool_size(options)

    def made_by(factory: Callable[..., KubeClient], *where: str) -> KubeClient:
        return factory(
            *where,
            user_agent=USER_AGENT,
            pool_size=pool,
            qps=qps,
            burst=burst,
            metrics=metrics,
            protobuf=protobuf,
        )

    try:
        if options.master and not options.kubeconfig:
            return made_by(KubeClient.explicit, options.master)
        if options.kubeconfig:
            client = made_by(KubeClient.from_kubeconfig, options.kubeconfig)
            if options.master:
                client.override_host(options.master)
            return client
        return made_by(KubeClient.in_cluster)
    except Exception as exc:
        raise StartupError(f"cannot build an API client: {exc}") from exc


def pool_size(options: Options) -> int:
    """The session's connection limit: each sync worker may have several requests in flight (a job's
    workers are created together), a connection per watch (one per resource and namespace served) with
    one spare for each while it reconnects, and a few more. Leader election and the start-up checks
    have connections of their own (lanes). Fewer than the watches, and the watches hold every connection
    while the informers' lists wait for one until they time out: the caches never sync."""
    watches = sum(len(scopes) for _, scopes in watched(options))
    return options.threadiness * 2 + 2 * watches + 4


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, errors.ApiError) and (exc.status == 0 or exc.status >= 500 or exc.status == 429)


def watched(options: Options) -> list[tuple[Resource, Scopes]]:
    """Every resource the controller these flags configure will list and watch, with its scopes."""
    return watched_resources(options.namespaces, gang_backend(options.gang_scheduling).resource)


def _not_served(res: Resource, options: Options) -> str:
    if res is MPIJOBS:
        return (
            "the MPIJob CRD (mpijobs.kubeflow.org/v2beta1) is not served by the API server; "
            "apply manifests/base first"
        )
    if res is KUBERNETES_POD_GROUPS:
        return (
            f"--gang-scheduling={options.gang_scheduling} needs Kubernetes' Workload API "
            f"({res.plural}.{res.group}/{res.version}), which the API server does not serve; start it "
            f"with --feature-gates=GenericWorkload=true,GangScheduling=true and "
            f"--runtime-config={res.group}/{res.version}=true, or turn --gang-scheduling off"
        )
    if res.kind == "PodGroup":
        return (
            f"--gang-scheduling={options.gang_scheduling} needs the PodGroup CRD "
            f"({res.plural}.{res.group}/{res.version}), which the API server does not serve; "
            "install the gang scheduler first or turn --gang-scheduling off"
        )
    return f"{res.plural}.{res.group or 'core'} is not served"


async def _in_order(checks: Sequence[Awaitable[T]], gate: asyncio.Semaphore) -> list[T]:
    """Every check, at most the gate's number at a time; their answers in the order given. When some
    fail, the first of them in that order is raised (as a one-by-one run would have met it), once all
    have ended."""

    async def bounded(check: Awaitable[T]) -> T:
        async with gate:
            return await check

    outcomes = await asyncio.gather(*(bounded(c) for c in checks), return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return outcomes  # type: ignore[return-value]


async def _check_list(client: KubeClient, res: Resource, namespace: str | None, options: Options) -> None:
    try:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception(_transient),
            stop=stop_after_delay(_PROBE_DEADLINE),
            wait=wait_exponential(multiplier=0.2, max=5),
            reraise=True,
        ):
            with attempt:
                await client.list(res, namespace, ListOptions(limit=1))
    except errors.NotFound as exc:
        message = _not_served(res, options)
        if res is not MPIJOBS and res.kind != "PodGroup":
            message = f"{message}: {exc.message}"
        raise StartupError(message) from exc
    except (errors.Forbidden, errors.Unauthorized) as exc:
        where = f"in namespace {namespace}" if namespace else "cluster-wide"
        raise StartupError(
            f"not allowed to list {res.plural}{'.' + res.group if res.group else ''} {where}: "
            f"{exc.message or exc.reason}; check the operator's RBAC"
        ) from exc
    except errors.ApiError as exc:
        raise StartupError(f"cannot reach the API server: {exc}") from exc


async def check_cluster(client: KubeClient, options: Options) -> None:
    """Every CRD we need is served (MPIJob; the PodGroup kind with gang scheduling) and every watched
    resource may be listed, in every namespace we serve; with --exec-agent, the agent's rights there too.
    The checks run side by side on a lane of the client with a token bucket of its own (CHECK_*)."""
    lane = client.lane(
        "start-up checks", pool_size=CHECK_CONCURRENCY, limiters=ClientLimiters(CHECK_QPS, CHECK_BURST)
    )
    gate = asyncio.Semaphore(CHECK_CONCURRENCY)
    try:
        # The MPIJob CRD first: without it every other answer is beside the point.
        mpijobs = [(res, ns) for res, scopes in watched(options) for ns in scopes if res is MPIJOBS]
        others = [(res, ns) for res, scopes in watched(options) for ns in scopes if res is not MPIJOBS]
        await _in_order([_check_list(lane, res, ns, options) for res, ns in mpijobs], gate)
        await _in_order([_check_list(lane, res, ns, options) for res, ns in others], gate)
        if options.exec_agent:
            await check_exec_agent_rights(lane, options, gate)
    finally:
        await lane.close()
    log.info("cluster checks passed", scope=options.namespaces or "cluster")


def _right(group: str, resource: str, subresource: str, verb: str) -> str:
    name = f"{resource}/{subresource}" if subresource else resource
    return f"{verb} {name}{'.' + group if group else ''}"


async def _allowed(client: KubeClient, namespace: str | None, right: tuple[str, str, str, str]) -> bool:
    group, resource, subresource, verb = right
    attributes = {"group": group, "resource": resource, "subresource": subresource, "verb": verb}
    if namespace:
        attributes["namespace"] = namespace
    review = {
        "apiVersion": SELF_SUBJECT_ACCESS_REVIEWS.api_version,
        "kind": SELF_SUBJECT_ACCESS_REVIEWS.kind,
        "spec": {"resourceAttributes": attributes},
    }
    try:
        answer = await client.create(SELF_SUBJECT_ACCESS_REVIEWS, review)
    except errors.ApiError as exc:
        raise StartupError(f"cannot check the rights --exec-agent needs: {exc}") from exc
    return bool(answer.get("status", {}).get("allowed"))


async def check_exec_agent_rights(
    client: KubeClient, options: Options, gate: asyncio.Semaphore | None = None
) -> None:
    """With --exec-agent, the operator holds what the agent needs in every namespace it serves; without
    it every opted-in job would be held by the API server's refusals, one job at a time. The reviews go
    out side by side (`gate` bounds them); the first namespace, in the flag's order, that lacks a right
    is named."""
    namespaces = options.namespaces or (None,)
    reviews = [(ns, right) for ns in namespaces for right in OPERATOR_RIGHTS]
    answers = await _in_order(
        [_allowed(client, ns, right) for ns, right in reviews], gate or asyncio.Semaphore(CHECK_CONCURRENCY)
    )
    for namespace in namespaces:
        missing = [
            _right(*right)
            for (ns, right), allowed in zip(reviews, answers, strict=True)
            if ns == namespace and not allowed
        ]
        if missing:
            where = f"in namespace {namespace}" if namespace else "cluster-wide"
            raise StartupError(
                f"--exec-agent needs the rights to {', '.join(missing)} {where}, which the operator "
                "lacks; install manifests/components/exec-agent (Helm: execAgent.enabled=true) or turn "
                "--exec-agent off"
            )
