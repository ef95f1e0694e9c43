"""``python -m junction.audit.vllm.suite``: vLLM 0.33.0's own tests with the core swapped in.

Prints the passed and failed counts of the tests exercising the three
decisions, then every test that did not pass with its reason, grouped.
Exits 0 only when the suite's rule holds (:mod:`.suite`); 1 otherwise, or
with one line when a run could not be made; 2 for a usage error. ``--cache``
holds the sdist, the unpacked tests, the offline model configuration and
the reports (reused). Without vLLM installed it prints why and exits 0, as
the audit's tests skip, unless ``--require-vllm`` (CI) makes that 1. It is
part of ``make verify``.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

from junction.reference.cli import options, terminal

from ..env import PINNED_VERSION, vllm_missing_reason
from .suite import ACCEPTED, SuiteResult, Verdict, run_suite
from .workspace import prepare


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m junction.audit.vllm.suite", description=__doc__
    )
    parser.add_argument("--cache", type=Path, default=Path(".vllm-suite"), metavar="DIR")
    options.add_jobs(parser, default=2, note=": test processes side by side")
    parser.add_argument(
        "--require-vllm", action="store_true", help="a missing vLLM exits 1 instead of skipping"
    )
    args = parser.parse_args(argv)
    if (missing := vllm_missing_reason()) is not None:
        required = args.require_vllm
        print(
            f"vllm-suite: {'--require-vllm is given but ' if required else 'skipped: '}{missing}",
            file=sys.stderr,
        )
        return 1 if required else 0
    try:
        workspace = prepare(args.cache)
        result = run_suite(workspace, args.cache / "reports", args.jobs)
    except (RuntimeError, OSError) as error:
        print(f"vllm-suite: {error}", file=sys.stderr)
        return 1
    print(render(result))
    return 0 if result.ok else 1


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


if __name__ == "__main__":
    sys.exit(terminal.interruptible(main))
