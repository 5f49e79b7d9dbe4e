"""What the controller lists and watches, said once: the controller builds its informers from it, and
start-up checks, before leader election, that each may be listed (a Forbidden would otherwise show only
as a cache that never syncs)."""

from __future__ import annotations

from mpioperator.kube.resources import (
    CONFIG_MAPS,
    JOBS,
    MPIJOBS,
    PODS,
    PRIORITY_CLASSES,
    SECRETS,
    SERVICES,
    Resource,
)

# The kinds whose changes concern the MPIJob that controls them.
CHILD_RESOURCES: tuple[Resource, ...] = (PODS, JOBS, CONFIG_MAPS, SECRETS, SERVICES)
# Watched whatever the flags say.
WATCHED: tuple[Resource, ...] = (MPIJOBS, *CHILD_RESOURCES)

# The namespaces a resource is watched in; None is the whole cluster.
Scopes = tuple[str | None, ...]


def watched(namespaces: tuple[str, ...], pod_groups: Resource | None) -> list[tuple[Resource, Scopes]]:
    """Every resource the controller lists and watches, with the scopes it watches it in.

    `namespaces` is --namespace (empty: the whole cluster); `pod_groups` is the gang-scheduling backend's
    PodGroup kind, or None without gang scheduling, when neither it nor PriorityClasses are watched.
    """
    scopes: Scopes = namespaces or (None,)
    out = [(res, scopes) for res in WATCHED]
    if pod_groups is not None:
        out.append((pod_groups, scopes))
        out.append((PRIORITY_CLASSES, (None,)))  # cluster-scoped, whatever --namespace says
    return out
