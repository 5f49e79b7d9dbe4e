"""The metadata fields every slim cache keeps (pods and Secrets): what listers, indexers, ownership checks,
cleanup and event handlers read. Labels are kept too, but each cache copies them its own way."""

from __future__ import annotations

CACHED_METADATA = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "ownerReferences",
)
