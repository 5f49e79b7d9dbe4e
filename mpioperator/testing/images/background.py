"""The image build hack/test.sh starts in the background, so the first tiers run while it builds; the
tests that need the images wait here for it to finish, and fail with its log's tail if it failed.

hack/test.sh exports MPIOPERATOR_IMAGES_BUILD, a directory where the build writes `log` as it goes and
`status` (its exit code) at the end. Without the variable there is nothing to wait for.
"""

from __future__ import annotations

import os
from pathlib import Path

from mpioperator.testing.wait import wait_for

ENV = "MPIOPERATOR_IMAGES_BUILD"
# A cold build of every image on a loaded 2-core machine, with room to spare.
TIMEOUT = 3600.0


class BackgroundBuildFailed(RuntimeError):
    pass


def _status(directory: Path) -> str:
    path = directory / "status"
    return path.read_text().strip() if path.exists() else ""


def log_tail(directory: Path, lines: int = 40) -> str:
    log = directory / "log"
    text = log.read_text(errors="replace") if log.exists() else "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def wait_for_background_build(timeout: float = TIMEOUT) -> None:
    """Returns once the background build (if any) succeeded; raises with its log's tail if it failed."""
    value = os.environ.get(ENV)
    if not value:
        return
    directory = Path(value)
    status = wait_for(
        lambda: _status(directory), timeout=timeout, interval=2.0, what=f"the image build ({directory}/log)"
    )
    if status != "0":
        raise BackgroundBuildFailed(
            f"the background image build (hack/build-images.sh) failed with exit {status}; "
            f"the end of {directory}/log:\n{log_tail(directory)}"
        )
