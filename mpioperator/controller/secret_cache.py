"""What the Secret cache keeps of each Secret: its metadata and the names of its keys, never a value.

Every Secret in the watched namespaces is cached, most of them not the operator's (Helm keeps each release
in one, up to a MiB each). The controller reads only the names, owners and key names of the SSH Secrets it
makes, and whether a user-named one exists with the right keys; the one thing that needs values, checking
a user's keys are well formed, reads that Secret from the API server (controller/user_ssh_secret.py).

Annotations are not kept: nothing here reads them, and `kubectl apply` copies a whole Secret, values
included, into one of them.
"""

from __future__ import annotations

from mpioperator.controller.cached_metadata import CACHED_METADATA
from mpioperator.kube.projection import KEEP, KEY_NAMES, FieldSpec, Projection

SECRET_FIELDS: FieldSpec = {
    "metadata": dict.fromkeys((*CACHED_METADATA, "labels"), KEEP),
    "type": KEEP,
    "data": KEY_NAMES,
}
SECRET_CACHE_PROJECTION = Projection(SECRET_FIELDS, "Secret")
"""The Secret informer's projection: each cached Secret's `data` maps its key names to None."""

SECRET_PAGE_BYTES = 16 << 20
"""Every list of Secrets is paged (none served whole from the watch cache), each page near this size: a
Secret may hold up to ~1.5 MiB, and a page is held whole while it is parsed, with the next one read
ahead. Small Secrets still come a thousand or more to a page."""
SECRET_FIRST_PAGE = 16
"""The first page's limit, before any page's size is known: 16 of the largest Secrets are ~32 MiB."""
