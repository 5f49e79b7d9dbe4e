"""Annotations through which a pod template chooses its simulated outcome on kwok nodes (stages.yaml)."""

from __future__ import annotations

READY_AFTER = "sim.mpioperator.io/ready-after"
RUN_FOR = "sim.mpioperator.io/run-for"
EXIT_CODE = "sim.mpioperator.io/exit-code"


def outcome(
    *, run_for: str | None = None, exit_code: int | None = None, ready_after: str | None = None
) -> dict[str, str]:
    """Annotations: ready after `ready_after`, then run for `run_for`, then exit with `exit_code`."""
    annotations: dict[str, str] = {}
    if ready_after is not None:
        annotations[READY_AFTER] = ready_after
    if run_for is not None:
        annotations[RUN_FOR] = run_for
    if exit_code is not None:
        annotations[EXIT_CODE] = str(exit_code)
    return annotations
