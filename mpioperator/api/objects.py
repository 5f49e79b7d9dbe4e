"""How every Kubernetes object is held in this code base: the plain JSON dict the API server sent.

One alias for it, so a signature reads as "an API object" rather than as an arbitrary mapping.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
