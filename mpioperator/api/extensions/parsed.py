"""Every extension a job asks for, parsed once from its annotations (docs/architecture.md).

The sync reads a job's `mpioperator.io/` annotations once, at its start, into one immutable `Extensions`
value with what validation found wrong with them; the features, the decorators and the status step are
handed that value instead of reading the annotations again. A bad value reads as absent (or its default),
as each extension's own reader has it: the job is Invalid then, and nothing is made from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpioperator.api import annotation_keys as keys
from mpioperator.api.extensions import conveniences, elastic, launch, launcher_log, replica_modes, restarts
from mpioperator.api.field_errors import FieldError
from mpioperator.api.objects import Obj


@dataclass(frozen=True, slots=True)
class Extensions:
    launch: launch.Settings
    restarts: restarts.Settings
    conveniences: conveniences.Settings
    modes: replica_modes.Settings
    bounds: elastic.Bounds | None
    log: launcher_log.Settings
    # What is wrong with the annotations, in the order the API's validation reports it.
    errors: tuple[FieldError, ...] = ()


def parse(job: Obj) -> Extensions:
    """The extensions of a defaulted job (its spec decides some: the launcher's working directory, the SSH
    keys' mount), with what is wrong with its annotations."""
    found = keys.of(job)
    errors = (
        conveniences.validate_conveniences(job, found)
        + replica_modes.validate(job, found)
        + launch.validate_annotations(job, found)
        + restarts.validate_restarts(job, found)
        + elastic.validate_bounds(job, found)
        + launcher_log.validate_launcher_log(job, found)
    )
    return Extensions(
        launch=launch.settings(found),
        restarts=restarts.settings(found),
        conveniences=conveniences.settings(job, found),
        modes=replica_modes.settings(found),
        bounds=elastic.read_bounds(found),
        log=launcher_log.settings(found),
        errors=tuple(errors),
    )
