"""What one list or watch asks of the API server, as one value (metav1.ListOptions, which client-go too
hands to both verbs), and how this client reads the answer. The informers' layers pass it down whole
(factory -> informer -> reflector -> client) and the Protocols in kube/calls.py take it, so no layer
restates the keywords.

Each verb reads the fields that mean something to it and ignores the rest:
- a list: the selectors, `resource_version`, `resource_version_match`, `limit`, `continue_token`;
  a paged list (`list_pages`) also `page_bytes`, and takes no `resource_version_match` or
  `continue_token` (it follows the server's tokens itself);
- a watch: the selectors, `resource_version`, `timeout_seconds` (needed), `allow_bookmarks`,
  `inactivity_timeout`;
- both: `projection`, the fields to parse (kube/projection.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpioperator.kube.projection import Projection


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOptions:
    label_selector: str | None = None
    field_selector: str | None = None
    resource_version: str | None = None
    resource_version_match: str | None = None
    limit: int | None = None
    continue_token: str | None = None
    # The server ends the watch after this many seconds.
    timeout_seconds: int | None = None
    allow_bookmarks: bool = True
    projection: Projection | None = None
    # A paged list scales each next page's limit to come near this many bytes (kube/pages.py).
    page_bytes: int | None = None
    # The client abandons a watch that sends nothing for this long (default: timeout_seconds + 30 s).
    inactivity_timeout: float | None = None

    def list_query(self) -> dict[str, Any]:
        """The query of a list request (unset fields are left out of the URL)."""
        return {
            "labelSelector": self.label_selector,
            "fieldSelector": self.field_selector,
            "resourceVersion": self.resource_version,
            "resourceVersionMatch": self.resource_version_match,
            "limit": self.limit,
            "continue": self.continue_token,
        }

    def page_query(self, token: str | None, limit: int | None) -> dict[str, Any]:
        """The query of one page of a paged list: `resource_version` goes with the first page only, since a
        continue token carries its own."""
        query = self.list_query()
        query["resourceVersion"] = None if token else self.resource_version
        query["resourceVersionMatch"] = None
        query["limit"], query["continue"] = limit, token
        return query

    def watch_query(self) -> dict[str, Any]:
        """The query of a watch request."""
        if self.timeout_seconds is None:
            raise ValueError("a watch is given its timeout_seconds: the server must end it some time")
        return {
            "watch": "true",
            "resourceVersion": self.resource_version or None,
            "timeoutSeconds": self.timeout_seconds,
            "allowWatchBookmarks": "true" if self.allow_bookmarks else None,
            "labelSelector": self.label_selector,
            "fieldSelector": self.field_selector,
        }

    def read_timeout(self) -> float:
        """How long a watch may go silent: the server closes it after timeout_seconds, so that plus slack
        unless an inactivity deadline is given."""
        return self.inactivity_timeout or ((self.timeout_seconds or 0) + 30.0)


# A whole list, as it is now (what a list or a paged list asks when given no options).
EVERYTHING = ListOptions()
