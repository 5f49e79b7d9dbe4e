"""What each replica type's pods run in debug mode and after a resume (T9k's `runMode.debug.replicaSpecs`
and `runMode.pause.resumeSpecs`), from the `mpioperator.io/` annotations (docs/extensions.md).

Debug mode (`mpioperator.io/debug-mode`) already replaces the launcher's command; here the workers' can be
replaced too, and either type's init containers left out. After a resume (the job has a `Suspended`
condition and is no longer suspended) the pods made from then on can run another command and skip their
init containers. Debug mode's settings win over a resume's. Only the template's own init containers are
left out: what the operator adds to a pod stays.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mpioperator.api import accessors, annotation_keys
from mpioperator.api import constants as api
from mpioperator.api.extensions import conveniences
from mpioperator.api.field_errors import FieldError, JSONString, invalid, too_long
from mpioperator.api.objects import Obj

_COMMANDS = {
    (False, api.LAUNCHER): conveniences.RESUME_LAUNCHER_COMMAND,
    (False, api.WORKER): conveniences.RESUME_WORKER_COMMAND,
    (True, api.WORKER): conveniences.DEBUG_WORKER_COMMAND,
}
_SKIPS = {True: conveniences.DEBUG_SKIP_INIT_CONTAINERS, False: conveniences.RESUME_SKIP_INIT_CONTAINERS}
_REPLICA_TYPES = (api.LAUNCHER, api.WORKER)


@dataclass(frozen=True, slots=True)
class Override:
    """How a replica type's pods made now differ from its template."""

    command: tuple[str, ...] | None  # replaces the first container's command; its args go
    skip_init_containers: bool


def resumed(job: Obj) -> bool:
    """The job ran into a suspension and is out of it (its Suspended condition stays, False, for good)."""
    status = job.get("status") or {}
    found = any(c.get("type") == api.COND_SUSPENDED for c in status.get("conditions") or ())
    return found and not accessors.suspended(job)


def _types(value: str | None) -> tuple[list[str], list[str]]:
    """The replica types named (comma-separated) and the words that are not one."""
    named = [part.strip() for part in (value or "").split(",") if part.strip()]
    return [t for t in named if t in _REPLICA_TYPES], [t for t in named if t not in _REPLICA_TYPES]


def _override(found: Mapping[str, str], debug: bool, replica_type: str) -> Override | None:
    key = _COMMANDS.get((debug, replica_type))
    command = conveniences.shell_words(found.get(key)) if key else None
    skip = replica_type in _types(found.get(_SKIPS[debug]))[0]
    if not command and not skip:
        return None
    return Override(command or None, skip)


@dataclass(frozen=True, slots=True)
class Settings:
    """What a job's annotations change in each replica type's pods in debug mode and after a resume."""

    debug_mode: bool = False
    # (debug mode, replica type) -> its override, for the pairs that change anything.
    overrides: tuple[tuple[bool, str, Override], ...] = ()

    def override(self, job: Obj, replica_type: str) -> Override | None:
        """What changes in `replica_type`'s pods made now; None when nothing."""
        if not self.debug_mode and not resumed(job):
            return None
        for debug, kind, found in self.overrides:
            if debug == self.debug_mode and kind == replica_type:
                return found
        return None

    def apply(self, job: Obj, replica_type: str, spec: Obj) -> None:
        """Change a pod spec copied from the template as `override` says (nothing without annotations)."""
        found = self.override(job, replica_type)
        if found is None:
            return
        if found.skip_init_containers:
            spec.pop("initContainers", None)
        if found.command is not None:
            container = spec["containers"][0]
            container["command"] = list(found.command)
            container.pop("args", None)

    def launcher_resume_settings(self, job: Obj) -> bool:
        """Whether a resume changes what the launcher runs: its suspended Job is then made again."""
        return not self.debug_mode and self.override(job, api.LAUNCHER) is not None


def settings(found: Mapping[str, str]) -> Settings:
    """The replica modes of a job whose annotations are `found` (annotation_keys.of)."""
    overrides = tuple(
        (debug, kind, found_override)
        for debug in (True, False)
        for kind in _REPLICA_TYPES
        if (found_override := _override(found, debug, kind)) is not None
    )
    return Settings(annotation_keys.flag(found.get(conveniences.DEBUG_MODE, "")) is True, overrides)


def override(job: Obj, replica_type: str) -> Override | None:
    """What the job's annotations change in `replica_type`'s pods made now; None when nothing."""
    return settings(annotation_keys.of(job)).override(job, replica_type)


def apply(job: Obj, replica_type: str, spec: Obj) -> None:
    settings(annotation_keys.of(job)).apply(job, replica_type, spec)


def launcher_resume_settings(job: Obj) -> bool:
    return settings(annotation_keys.of(job)).launcher_resume_settings(job)


def validate(job: Obj, found: Mapping[str, str] | None = None) -> list[FieldError]:
    """What is wrong with the replica modes' annotations; `found`: the job's annotations when already
    read."""
    found = annotation_keys.of(job) if found is None else found
    errors: list[FieldError] = []
    for key in _COMMANDS.values():
        if key not in found:
            continue
        words = conveniences.shell_words(found[key])
        if len(found[key].encode("utf-8", "surrogatepass")) > conveniences.MAX_WORDS_BYTES:
            errors.append(too_long(_field(key), conveniences.MAX_WORDS_BYTES))
        elif words is None:
            errors.append(invalid(_field(key), JSONString(found[key]), "unbalanced quotes"))
        elif not words:
            errors.append(invalid(_field(key), JSONString(found[key]), "must name a command"))
    for key in _SKIPS.values():
        if key in found:
            named, bad = _types(found[key])
            if bad or not named:
                detail = "must name Launcher, Worker or both, comma-separated"
                errors.append(invalid(_field(key), JSONString(found[key]), detail))
    return errors


_field = annotation_keys.field_path
