"""Hypothesis strategies for MPIJobs, shared by the unit and integration fuzz tests.

Importing this package loads a settings profile, so every fuzz test is reproducible in CI: `ci` (the default)
derandomizes (examples are a function of the test's code, not of a random seed) and keeps no example
database; `explore` (HYPOTHESIS_PROFILE=explore) draws fresh random examples on each run, for bug hunting.
Example counts are set per test with @settings(max_examples=...).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "explore", derandomize=False, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
