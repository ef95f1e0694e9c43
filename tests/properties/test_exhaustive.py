"""Bounded-exhaustive: every input up to a bound, core against the oracle.

``make verify`` runs bound 3 (about 3.6 million inputs); ``make fuzz`` raises
it with ``--exhaustive-bound``. The count is in the run's closing summary so a reader can
see what "exhaustive" covered.
"""

from __future__ import annotations

from collections.abc import Callable

from junction.reference.oracle.exhaustive import check_exhaustively
from tests import options

from .core_under_test import core

BOUND = options.exhaustive_bound
MINIMUM_INPUTS = 200_000


def test_every_input_up_to_the_bound_matches_the_oracle(summary: Callable[[str], None]) -> None:
    coverage = check_exhaustively(core, BOUND)
    per_decision = ", ".join(f"{name}: {count:,}" for name, count in coverage.checked.items())
    summary(f"bounded-exhaustive (bound {BOUND}): {coverage.total:,} inputs ({per_decision})")
    assert not coverage.mismatch_count, "\n".join(coverage.mismatches)
    assert coverage.total >= MINIMUM_INPUTS
