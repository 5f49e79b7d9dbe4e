"""What the launcher container runs when the job asks us to choose (issue 18): the generated mpirun line,
or in debug mode a command that waits while the user works in the launcher by hand."""

from __future__ import annotations

import shlex

from mpioperator.api import conveniences
from mpioperator.api.objects import Obj
from mpioperator.controller.builders.mpirun_command import mpirun_command

# On the launcher Job's own metadata (which a resume never merges into): the Job was made for debug mode.
# The sync reads it back to end debug mode when the job's annotation goes.
DEBUG_MARKER = conveniences.DEBUG_MODE


def generated_command(job: Obj, hostfile: str) -> list[str] | None:
    program = conveniences.launcher_program(job)
    return None if program is None else mpirun_command(job, program, hostfile)


def command_line(words: list[str]) -> str:
    return shlex.join(words)


def set_launcher_command(job: Obj, template: Obj, hostfile: str) -> None:
    container = template["spec"]["containers"][0]
    generated = generated_command(job, hostfile)
    if generated is not None:
        # As args, so the image's entrypoint still runs first: MPI images often set up PATH and the
        # library path there, or wait for the hostfile's names to resolve.
        container["args"] = generated
    if conveniences.debug_mode(job):
        container["command"] = list(conveniences.debug_command(job))
        container.pop("args", None)


def mark_debug(job: Obj, launcher: Obj) -> None:
    if conveniences.debug_mode(job):
        metadata = launcher["metadata"]
        metadata["annotations"] = {**(metadata.get("annotations") or {}), DEBUG_MARKER: "true"}


def made_for_debug(launcher: Obj) -> bool:
    """Whether a launcher Job was created in debug mode."""
    annotations = (launcher.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(DEBUG_MARKER, "")).lower() == "true"
