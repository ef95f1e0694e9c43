"""A conformance run's result: one verdict per promise, and the report that holds them.

Typed all the way: the verdict is a :class:`.verdict.Verdict`, a violation a
:class:`.verdict.Violation` with its numbers; :meth:`ConformanceReport.table`
renders them for people (the fuzz command prints it), nothing parses it back.
"""

from __future__ import annotations

import json

import attrs

from .promise import Promise
from .scenario import Scenario
from .verdict import Verdict, Violation

__all__ = ["ConformanceReport", "PromiseVerdict"]


@attrs.frozen
class PromiseVerdict:
    """One promise's outcome over a run.

    ``violation`` is set when ``status`` is violated; ``error`` (the
    ``PolicyError`` text, naming the policy and the call) when it is error;
    ``counterexample`` is the (shrunk) scenario of either. ``examples``
    counts the examples judged.
    ``seconds_to_counterexample`` is the wall time from the start of the run
    to the first failing example, before shrinking; ``seconds`` the time this
    promise's checks took. ``flaky``: the counterexample failed once and not
    when Hypothesis replayed it (the policy's answers changed).
    """

    promise: Promise
    status: Verdict
    examples: int
    seconds: float
    counterexample: Scenario | None = None
    violation: Violation | None = None
    error: str = ""
    seconds_to_counterexample: float | None = None
    flaky: bool = False

    @property
    def statement(self) -> str:
        return self.promise.statement

    @property
    def message(self) -> str:
        """What went wrong, for people: the violation rendered, or the policy error."""
        text = str(self.violation) if self.violation is not None else self.error
        if self.flaky:
            text += " (flaky: it did not fail again when replayed)"
        return text


@attrs.frozen
class ConformanceReport:
    """Every promise's verdict; ``call_seconds``: the per-call limit it ran under, if any;
    ``min_examples``: the examples a promise had to judge to be kept.

    In-process runs have no per-call limit; the ``fuzz`` command's worker
    process does (``--call-seconds``), and its report says so.
    """

    policy: str
    seed: int
    verdicts: tuple[PromiseVerdict, ...]
    call_seconds: float | None = None
    min_examples: int = 1

    @property
    def passed(self) -> bool:
        return not self.violated

    @property
    def violated(self) -> tuple[PromiseVerdict, ...]:
        """The verdicts that failed: every one but ``kept``."""
        return tuple(v for v in self.verdicts if v.status.failed)

    def table(self) -> str:
        limit = "" if self.call_seconds is None else f", {self.call_seconds:g} s per policy call"
        lines = [f"policy {self.policy!r}, seed {self.seed}{limit}"]
        lines.append(f"  kept only on at least {self.min_examples} examples per promise")
        lines.append(f"  {'promise':<16}{'verdict':<10}{'examples':>9}{'seconds':>9}")
        for v in self.verdicts:
            lines.append(
                f"  {v.promise.value:<16}{v.status.value:<10}{v.examples:>9}{v.seconds:>9.1f}"
            )
        for v in self.violated:
            lines.append(f"\n{v.statement}: {v.status.value}\n  {v.message}")
            if v.counterexample is not None:
                lines.append(f"  scenario: {json.dumps(v.counterexample.to_json())}")
        return "\n".join(lines)
