"""Thin entry point, for running the operator from a source checkout: `python cmd/mpi-operator/main.py`."""

from __future__ import annotations

import sys

from mpioperator.app.main import main

if __name__ == "__main__":
    sys.exit(main())
