"""`kubectl mpijob`, the console script `kubectl-mpijob` (kubectl finds plugins by that name on PATH).

Every failure is one line on stderr, `error: ...`, and exit code 1; usage errors exit 2, as argparse
does; Ctrl+C exits 130 without a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from mpioperator.cli.commands import COMMANDS
from mpioperator.cli.parser import parse
from mpioperator.client.errors import MPIJobError
from mpioperator.kube.errors import InvalidRequest


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = parse(argv)
    args.err = err  # where a command writes what is not its output (convert's warnings)
    try:
        return COMMANDS[args.command](args, out)
    except (MPIJobError, InvalidRequest) as exc:  # InvalidRequest: a name no request can carry
        err.write(f"error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `kubectl mpijob logs pi | head`: the reader has gone, which is not an error of ours.
        return 0


def entry() -> None:
    sys.exit(main())
