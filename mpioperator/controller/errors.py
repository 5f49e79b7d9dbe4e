"""The controller's own failures: what makes a sync retry with backoff, and a write refused after stopping.

Here rather than beside their first raiser, since every part of the sync raises or reports them.
"""

from __future__ import annotations


class SyncError(Exception):
    """The sync must be retried with backoff; the message is what upstream logs and returns."""


class ControllerStopped(Exception):
    """An API call asked of a controller that has stopped."""


class StatusConflict(SyncError):
    """The MPIJob changed since the sync read it, so the status it computed was not written over the newer
    one; the key is synced again, from the newer object (decisions-local L42)."""
