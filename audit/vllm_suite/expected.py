"""The tests whose vLLM expectation is allowed to differ from the core, and why.

A vLLM test may fail with the core swapped in and still not count against
it only where the test's expectation encodes one of the audit's recorded
findings (``audit.findings.FINDINGS``): vLLM's answer there is the defect,
the core's the first-principles one. Each entry names the finding by key;
:func:`check_tables` rejects a key that is not recorded, and the suite
reports an entry whose test no longer differs (a stale excuse is an error,
not a pass).

Today the table is empty: with the core swapped in no test fails on a
wrong answer, every failure is an option the core cannot express yet
(:class:`junction.audit.dropin.UnsupportedOption`), which counts as a
failure.

:data:`FAILS_WITHOUT_THE_CORE` lists the tests exercising a decision point
that fail against unmodified vLLM 0.33.0 on this CPU platform, with the
failure observed: they are reported and left out of the count (there is no
vLLM answer for the core to match), and the suite fails if one of them
starts passing or another vLLM test starts failing.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..findings import FINDINGS

__all__ = ["EXPECTED_TO_DIFFER", "FAILS_WITHOUT_THE_CORE", "check_tables"]

EXPECTED_TO_DIFFER: Mapping[str, str] = {}

_PADDING = (
    "tests/v1/core/test_scheduler.py::"
    "test_spec_decode_padding_dropped_when_recurrent_alignment_clips"
)
FAILS_WITHOUT_THE_CORE: Mapping[str, str] = {
    f"{_PADDING}[{aligned}]": (
        "on this CPU machine vLLM 0.33.0 schedules the clipped request's "
        "aligned_tokens, not 1 (`assert out.num_scheduled_tokens[r2.request_id] == 1`, "
        "test_scheduler.py:3161)"
    )
    for aligned in (2, 3)
}


def check_tables() -> None:
    """Raise ``ValueError`` when an expected-to-differ entry names no recorded finding."""
    keys = {finding.key for finding in FINDINGS}
    for test, key in EXPECTED_TO_DIFFER.items():
        if key not in keys:
            raise ValueError(f"{test}: {key!r} is not a recorded finding ({sorted(keys)})")
