"""What the operator and the launcher's `wait-for-hosts` init container agree on (docs/extensions.md)."""

from __future__ import annotations

from typing import Final

# The init container's name in the launcher pod, and the subcommand of `mpi-operator` it runs.
CONTAINER_NAME: Final = "mpioperator-wait-for-hosts"
SUBCOMMAND: Final = "wait-for-hosts"
# The waiter's exit code when its hosts were not all reachable within the job's start-up deadline; its
# termination message then names them, after this prefix. The operator fails the job on the two together:
# its pod cache keeps a container status's exit code and message, not the container's name.
EXIT_DEADLINE: Final = 3
MESSAGE_PREFIX: Final = f"{SUBCOMMAND}: "
