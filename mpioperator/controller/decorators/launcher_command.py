"""What the launcher container runs when the job asks us to choose (docs/extensions.md): the generated mpirun
line, or in debug mode a command that waits while the user works in the launcher by hand; and after a resume,
or in debug mode, the command and init containers the job's per-replica annotations choose (replica_modes)."""

from __future__ import annotations

import shlex

from mpioperator.api import annotation_keys
from mpioperator.api import constants as api
from mpioperator.api.extensions import conveniences
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj
from mpioperator.controller.decorators.mpirun_command import mpirun_command

# On the launcher Job's own metadata (which a resume never merges into): the Job was made for debug mode.
# The sync reads it back to end debug mode when the job's annotation goes.
DEBUG_MARKER = conveniences.DEBUG_MODE
# Likewise: the Job was made after a resume, with the resume's settings for the launcher.
RESUME_MARKER = annotation_keys.MADE_AFTER_RESUME


def generated_command(job: Obj, ext: Extensions, hostfile: str) -> list[str] | None:
    program = ext.conveniences.launcher_program
    return None if program is None else mpirun_command(job, program, hostfile)


def command_line(words: list[str]) -> str:
    return shlex.join(words)


def set_launcher_command(job: Obj, ext: Extensions, template: Obj, hostfile: str) -> None:
    container = template["spec"]["containers"][0]
    generated = generated_command(job, ext, hostfile)
    if generated is not None:
        # As args, so the image's entrypoint still runs first: MPI images often set up PATH and the
        # library path there, or wait for the hostfile's names to resolve.
        container["args"] = generated
    if ext.conveniences.debug_mode:
        container["command"] = list(ext.conveniences.debug_command)
        container.pop("args", None)
    ext.modes.apply(job, api.LAUNCHER, template["spec"])


def mark_debug(job: Obj, ext: Extensions, launcher: Obj) -> None:
    """Say on the launcher Job what it was made for: debug mode, or a resume with launcher settings."""
    metadata = launcher["metadata"]
    if ext.conveniences.debug_mode:
        metadata["annotations"] = {**(metadata.get("annotations") or {}), DEBUG_MARKER: "true"}
    elif ext.modes.launcher_resume_settings(job):
        metadata["annotations"] = {**(metadata.get("annotations") or {}), RESUME_MARKER: "true"}


def made_for_debug(launcher: Obj) -> bool:
    """Whether a launcher Job was created in debug mode."""
    annotations = (launcher.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(DEBUG_MARKER, "")).lower() == "true"


def made_after_resume(launcher: Obj) -> bool:
    """Whether a launcher Job was created after a resume, with the resume's launcher settings."""
    annotations = (launcher.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(RESUME_MARKER, "")).lower() == "true"
