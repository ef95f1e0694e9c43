"""``junction fuzz``: time-boxed conformance fuzzing of one policy.

``--policy`` is a registered name or ``module:attribute``. The promises take
turns until ``--seconds`` are spent (a hard deadline, the policy's import
included); the table gives each promise's verdict, and a violation prints
its shrunk counterexample as a replayable scenario; ``--seed`` replays a
run. The policy's code runs in a contained worker that only answers policy
calls, and every check runs here (``run_conformance(..., isolated=True)``,
docs/fuzzing.md), so nothing the policy does can forge a verdict. An example
running at the deadline is judged, its calls waited for up to
``--seconds`` + ``--call-seconds`` + 1 s. A call past ``--call-seconds`` is
``timeout``, an exception of any kind ``error``, a promise that judged no
example ``unchecked``, one kept on fewer than ``--min-examples`` ``too few``.
Exit 0 when every promise was checked and held; 1 otherwise, naming the
first failure; 2 for bad arguments or a policy that cannot be loaded.
``--json`` is written whole at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from junction.reference.cli import options, outputs, terminal
from junction.reference.cli.arguments import finite_seconds, int_at_least
from junction.reference.engine.policy import PolicyError
from junction.reference.harness import (
    ConformanceReport,
    Promise,
    PromiseVerdict,
    Verdict,
    run_conformance,
)
from junction.reference.harness.runner import MIN_EXAMPLES

__all__ = ["add_options", "run"]

_MARKS = {
    Verdict.KEPT: "",
    Verdict.VIOLATED: " VIOLATED",
    Verdict.ERROR: " ERROR",
    Verdict.TIMEOUT: " TIMEOUT",
    Verdict.UNCHECKED: " unchecked",
    Verdict.TOO_FEW: " too few",
}


def _fuzz(args: argparse.Namespace) -> ConformanceReport:
    """The run, with a progress line in seconds (the budget) and the examples per promise.

    Raises :class:`PolicyError` when the policy cannot be loaded.
    """
    counts: dict[Promise, str] = {}
    # Unnamed: the promises the policy makes (the next turn only with decode checkpoints).
    promises = tuple(Promise.named(p) for p in args.promise) if args.promise else None
    with terminal.progress("fuzz", args.seconds) as advance:
        started, shown = time.perf_counter(), 0

        def on_verdict(verdict: PromiseVerdict) -> None:
            nonlocal shown
            mark = _MARKS[verdict.status]
            counts[verdict.promise] = f"{verdict.promise.value} {verdict.examples}{mark}"
            elapsed = int(min(time.perf_counter() - started, args.seconds))
            advance(elapsed - shown, status="  ".join(counts.values()))
            shown = elapsed

        report = run_conformance(
            args.policy,
            isolated=True,
            seconds=args.seconds,
            call_seconds=args.call_seconds,
            min_examples=args.min_examples,
            policy_path=args.policy_path,
            seed=args.seed,
            promises=promises,
            # A signal that reached a policy call of the harness's own (the dense bound's,
            # which catches everything) still stops the run at the next example.
            stop=lambda: terminal.signalled() is not None,
            on_verdict=on_verdict,
        )
        if terminal.signalled() is not None:
            raise KeyboardInterrupt
        return report


def _headline(report: ConformanceReport) -> str:
    """One line naming the first failure (an unchecked promise last) and how many failed."""
    # A found failure first, then ``too few``, an unchecked promise last.
    last = (Verdict.TOO_FEW, Verdict.UNCHECKED)
    failed = sorted(
        report.violated, key=lambda v: last.index(v.status) + 1 if v.status in last else 0
    )
    first = failed[0]
    more = f" (and {len(failed) - 1} more; see the table)" if len(failed) > 1 else ""
    return f"fuzz: {first.promise.value} {first.status.value}: {first.message}{more}"


def _json(report: ConformanceReport, seconds: float) -> dict[str, Any]:
    return {
        "policy": report.policy,
        "seed": report.seed,
        "seconds": seconds,
        "call_seconds": report.call_seconds,
        "min_examples": report.min_examples,
        "passed": report.passed,
        "verdicts": [
            {
                "promise": v.promise.value,
                "statement": v.statement,
                "status": v.status.value,
                "examples": v.examples,
                "seconds": round(v.seconds, 3),
                "message": v.message,
                "counterexample": v.counterexample.to_json() if v.counterexample else None,
                "flaky": v.flaky,
            }
            for v in report.verdicts
        ],
    }


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    json_path: Path | None = args.json
    if json_path is not None:
        try:  # before the run: a report that cannot be written is bad usage
            outputs.check_file("--json", json_path)
        except outputs.OutputError as error:
            print(f"{parser.prog}: error: {error}", file=sys.stderr)
            return 2
        json_path.unlink(missing_ok=True)  # a run that ends early leaves no stale report
    try:
        outcome = _fuzz(args)
    except PolicyError as error:  # it cannot be loaded: bad usage
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    print(outcome.table())
    if json_path is not None:
        data = json.dumps(_json(outcome, args.seconds), indent=2).encode()
        try:
            outputs.commit(json_path.parent, {json_path.name: data})
        except outputs.OutputError as error:
            print(f"{parser.prog}: error: {error}; no report written", file=sys.stderr)
            return 1
    if outcome.passed:
        return 0
    print(_headline(outcome), file=sys.stderr)
    return 1


def _folder(text: str) -> str:
    """An existing folder, for ``--policy-path``."""
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"not a folder: {text!r}")
    return str(Path(text).resolve())


def add_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``fuzz``'s options on its parser."""
    parser.description = __doc__
    options.add_policy(parser, repeatable=False)
    options.add_seconds(
        parser, default=60.0, bounds="the whole run, the policy's import included (default 60)"
    )
    parser.add_argument(
        "--call-seconds",
        type=finite_seconds,
        default=10.0,
        help="limit for one policy call; longer is a timeout verdict (default 10)",
    )
    parser.add_argument(
        "--policy-path",
        action="append",
        default=[],
        type=_folder,
        metavar="DIR",
        help="a folder the policy's worker imports from, and fuzz itself never "
        "(repeatable; put a policy's folder here, not on PYTHONPATH)",
    )
    parser.add_argument(
        "--min-examples",
        type=int_at_least(1),
        default=MIN_EXAMPLES,
        help=f"examples a promise must judge to be kept, else 'too few' (default {MIN_EXAMPLES})",
    )
    options.add_seed(parser)
    parser.add_argument(
        "--promise",
        action="append",
        choices=[p.value for p in Promise],
        help="check only this promise (repeatable; default: all)",
    )
    options.add_json(parser, what="the report")
