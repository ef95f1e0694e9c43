"""The two recorded exceptions to "every exercising test passes", each with its evidence.

:data:`EXPECTED_TO_DIFFER`: a vLLM test that fails with the core swapped in
counts not against it only where its expectation encodes a recorded finding
(``audit.vllm.findings.FINDINGS``); an entry naming no finding cannot be built,
and one whose test no longer differs or is no longer selected fails the
suite. :data:`FAILS_WITHOUT_THE_CORE`: tests exercising a decision point
that fail against unmodified vLLM 0.33.0 here, left out of the count; the
suite fails if one starts passing or another starts failing. Both are empty
today.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ..findings import FINDINGS

__all__ = ["EXPECTED_TO_DIFFER", "FAILS_WITHOUT_THE_CORE", "ExpectedDifference"]


def _recorded(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    keys = sorted(finding.key for finding in FINDINGS)
    if value not in keys:
        raise ValueError(f"finding {value!r} is not a recorded finding ({', '.join(keys)})")


@attrs.frozen
class ExpectedDifference:
    """A vLLM test (pytest id) whose expectation encodes a recorded finding (its key)."""

    test: str
    finding: str = attrs.field(validator=_recorded)


def _by_test(entries: tuple[ExpectedDifference, ...]) -> Mapping[str, ExpectedDifference]:
    table = {entry.test: entry for entry in entries}
    if len(table) != len(entries):
        raise ValueError("a test is listed twice as expected to differ")
    return table


EXPECTED_TO_DIFFER: Mapping[str, ExpectedDifference] = _by_test(())

FAILS_WITHOUT_THE_CORE: Mapping[str, str] = {}
