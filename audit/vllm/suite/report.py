"""The vLLM suite's report: the counts, then every test that did not pass, grouped."""

from __future__ import annotations

import collections

from junction.upstream.vllm_0_33.env import PINNED_VERSION

from .suite import ACCEPTED, SuiteResult, Verdict

__all__ = ["render"]


def render(result: SuiteResult) -> str:
    """The report: the count line, then the tests that did not pass, grouped by reason."""
    passed = result.count(Verdict.PASSED)
    differ = [v.reason for v in result.verdicts if v.verdict is Verdict.EXPECTED_TO_DIFFER]
    failed = result.exercising - passed
    lines = [
        f"vLLM {PINNED_VERSION} tests with the core swapped in: {passed} passed, {failed} failed "
        f"(of {result.exercising} exercising the three decisions; {result.collected} collected)",
        f"expected to differ (a recorded finding): {len(differ)}"
        + (f" ({', '.join(sorted(set(differ)))})" if differ else ""),
    ]
    groups: dict[tuple[Verdict, str], list[str]] = collections.defaultdict(list)
    for test in result.verdicts:
        if test.verdict is not Verdict.PASSED:
            detail = f"  ({test.detail})" if test.detail else ""
            groups[(test.verdict, test.reason)].append(f"{test.nodeid}{detail}")
    for (verdict, reason), tests in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0][1])):
        lines.append(f"\n{len(tests)} {verdict.value}: {reason}")
        lines.extend(f"  {test}" for test in tests)
    broken = len(result.verdicts) - result.count(*ACCEPTED)
    lines.append(
        "\nthe suite's rule holds"
        if result.ok
        else f"\nthe suite's rule is broken by {broken} tests (audit/vllm/suite/suite.py)"
    )
    return "\n".join(lines)
