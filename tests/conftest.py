"""Hypothesis profiles: ``dev`` (default), ``ci`` (derandomized, no deadline), ``fuzz``,
``mutmut`` (``make mutmut``: derandomized, few examples, no shrinking).

``CI`` in the environment selects ``ci``; ``HYPOTHESIS_PROFILE`` overrides.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci",
    max_examples=500,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "fuzz",
    max_examples=20_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# Runs once per mutant: a killed mutant needs one failing example, not a
# shrunk one, and no example database may carry failures across mutants.
settings.register_profile(
    "mutmut",
    max_examples=100,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)
