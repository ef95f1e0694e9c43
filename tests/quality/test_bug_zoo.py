"""The suite finds these bugs: every zoo mutant breaks a named promise.

Each mutant (``mutants.ZOO``, one per defect class of docs/domain.md) runs
through the public conformance harness on the one promise its row names,
with a bounded budget of examples (``Mutant.examples``: 200 for most). The test requires that
promise violated, with a shrunk, replayable counterexample that fails again
when replayed. The
default policy passing every promise is ``tests/engine/test_promises.py``.
The scoreboard (caught / total, time to the first counterexample) is printed
at the end of the run (``scoreboard.py``, from each test's recorded row).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from junction.reference.harness import Verdict, replay, run_conformance
from tests.reports import SCOREBOARD

from .mutants import ZOO, Mutant


@pytest.mark.parametrize("mutant", ZOO, ids=[m.key for m in ZOO])
def test_the_harness_catches_the_mutant(
    mutant: Mutant, record_property: Callable[[str, object], None]
) -> None:
    started = time.perf_counter()
    report = run_conformance(
        mutant.policy(),
        examples=mutant.examples,
        promises=[mutant.promise],
        fail_fast=True,
        engine_factory=mutant.engine,
    )
    elapsed = time.perf_counter() - started
    caught = report.violated
    record_property(
        SCOREBOARD,
        (
            mutant.name,
            caught[0].promise.value if caught else "-",
            caught[0].seconds_to_counterexample if caught else None,
            elapsed,
        ),
    )
    assert caught, f"{mutant.name}: {mutant.promise.value} held in {mutant.examples} examples"
    verdict = caught[0]
    assert verdict.status is Verdict.VIOLATED, verdict.message
    assert verdict.promise is mutant.promise, (verdict.promise, verdict.message)
    assert verdict.counterexample is not None
    again = replay(verdict.counterexample, mutant.policy(), mutant.engine)
    assert again is not None, "the shrunk counterexample does not replay"
