"""Whether a local component's HTTP health endpoint answers yet, for the harness's readiness waits."""

from __future__ import annotations

import urllib.error
import urllib.request


def answers_ok(url: str) -> bool:
    """Whether a GET of `url` answers 200 within 2 s; a refused or timed-out connection is "not yet"."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False
