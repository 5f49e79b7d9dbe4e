"""The launcher's mpirun line built from the job, so users need not know each MPI's flags
(docs/extensions.md).

Each implementation gets the hostfile the operator mounts, the number of ranks (slots on every host) and
the ranks per host in its own words: Open MPI `--hostfile`/`-np` (the hostfile's `slots=` places them)
and `--mca key value`; Intel MPI and MPICH (both Hydra) `-f`/`-n`/`-ppn`.
"""

from __future__ import annotations

from mpioperator.api import accessors
from mpioperator.api import constants as api
from mpioperator.api.extensions.conveniences import LauncherProgram
from mpioperator.api.objects import Obj


def hosts(job: Obj) -> int:
    """The hosts of the hostfile: every worker, and the launcher when it runs as one."""
    return accessors.worker_replicas(job) + (1 if accessors.run_launcher_as_worker(job) else 0)


def mpirun_command(job: Obj, program: LauncherProgram, hostfile: str) -> list[str]:
    slots = max(accessors.slots_per_worker(job), 1)
    ranks = str(hosts(job) * slots)
    mpirun = f"{program.mpi_home}/bin/mpirun" if program.mpi_home else "mpirun"
    if accessors.mpi_implementation(job) == api.OPENMPI:
        line = [mpirun, "--hostfile", hostfile, "-np", ranks]
        for key, value in program.mca:
            line += ["--mca", key, value]
    else:
        line = [mpirun, "-f", hostfile, "-n", ranks, "-ppn", str(slots)]
    return [*line, *program.extra_args, *program.program]
