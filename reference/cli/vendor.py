"""``junction vendor``: copy the core into an engine and keep it honest.

* ``vendor copy TARGET``: copy the installed core into a new or empty folder,
  with its stamp ``VENDORED.json``.
* ``vendor check TARGET``: report local edits file by file, files Python may
  import in the sources' place, and whether an update is available; exit 1 on
  either, or on a stamp that names no published release nor the installed core.
* ``vendor update TARGET [--force]``: refresh the copy; local edits are
  refused unless ``--force`` discards them, a link in the copy always.
* ``vendor verify TARGET [--bound N]``: ask the copy, in a contained worker,
  every input up to the bound and judge its answers here against the
  first-principles oracle; exit 1 on a disagreement or a copy that stops
  answering.

A target that is not what the command needs exits 2 with one line; a failed
write exits 1. Why ``verify`` is the walk alone: docs/design/vendor-verify.md.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable
from typing import Any

from junction import core
from junction.reference import isolation, releases, vendoring
from junction.reference.cli import options
from junction.reference.cli.arguments import output_path
from junction.reference.cli.coverage import report_coverage
from junction.reference.cli.exhaustive import WALK_RATES
from junction.reference.oracle.exhaustive import Ask, check_exhaustively, count_inputs

__all__ = ["add_options", "run"]

# Bound 4 is about 19.5 million inputs, the free functions' included (minutes); above
# it, hours.
MAX_BOUND = 4
WORKER = "junction.reference.cli.vendor_worker"  # where the copy is imported, and answers


def _refuse(args: argparse.Namespace, message: str, status: int) -> int:
    """One line naming the action (``junction vendor copy: error: ...``); ``status``."""
    print(f"{args.action_parser.prog}: error: {message}", file=sys.stderr)
    return status


def _copy(args: argparse.Namespace) -> int:
    try:
        stamp = vendoring.vendor(args.target)
    except vendoring.NotVendorable as error:
        return _refuse(args, str(error), 2)
    except OSError as error:
        return _refuse(args, f"{args.target}: {error}; nothing written", 1)
    print(f"copied {stamp.origin} into {args.target}: {len(stamp.files)} files")
    print(f"stamp {args.target / vendoring.STAMP_NAME}: digest {stamp.digest}")
    return 0


def _check(args: argparse.Namespace) -> int:
    try:
        drift = vendoring.drift(args.target)
    except vendoring.NotVendorable as error:
        return _refuse(args, str(error), 2)
    except OSError as error:
        return _refuse(args, f"{args.target}: {error}", 2)
    stamp = drift.stamp
    problem = releases.stamp_problem(stamp, drift.installed)
    if problem:  # nothing in the stamp can be believed, so nothing is judged against it
        return _refuse(args, f"{args.target}: {problem}", 1)
    print(
        f"{args.target}: vendored from {stamp.origin} at {stamp.copied_at}, "
        f"{len(stamp.files)} files"
    )
    if drift.local:
        print(f"local edits ({len(drift.local)} files):")
        for change in drift.local:
            print(f"  {change.describe()}")
    else:
        print("local edits: none (every source is as copied)")
    if drift.upstream:
        print(
            f"installed {drift.installed.origin} has a different core "
            f"({len(drift.upstream)} files); `vendor update {args.target}` refreshes the copy:"
        )
        for change in drift.upstream:
            print(f"  {change.describe()}")
    else:
        print(f"installed {drift.installed.origin}: the same core as the copy's source")
    if drift.strays:
        print(
            f"files Python may import in place of the sources ({len(drift.strays)}), "
            "which the check cannot vouch for (remove them; caches are rebuilt from the sources):"
        )
        for stray in drift.strays:
            print(f"  {stray.describe()}")
    return 1 if drift.local or drift.strays else 0


def _update(args: argparse.Namespace) -> int:
    try:
        before = vendoring.update(args.target, discard_local_edits=args.force)
    except vendoring.NotVendorable as error:
        return _refuse(args, str(error), 2)
    except OSError as error:
        return _refuse(args, f"{args.target}: {error}; `vendor check` shows where it stopped", 1)
    for change in before.local:
        print(f"discarded local edit: {change.describe()}")
    print(
        f"updated {args.target} from {before.stamp.origin} to {before.installed.origin}: "
        f"{len(before.upstream)} files changed"
    )
    return 0


def _verify_deadline(bound: int) -> float:
    """Seconds the walk may take: five times its estimate at the measured rates, at least 60."""
    counts = count_inputs(bound)
    estimate = sum(counts[name] / rate for name, rate in WALK_RATES.items())
    return max(60.0, 5 * 2 * estimate)  # the free functions walk split and mask again


def _asking(copy: isolation.Service) -> Ask:
    """Ask the copy's worker; each answer must be a list with one answer per question."""
    ids = itertools.count()

    def ask(decision: str, questions: list[list[Any]]) -> Callable[[], list[Any]]:
        key = next(ids)
        copy.send({"id": key, "decision": decision, "questions": questions})

        def collect() -> list[Any]:
            message = copy.receive()
            fields = message if type(message) is dict else {}
            answers = fields.get("answers")
            shaped = set(fields) == {"id", "answers"} and type(fields["id"]) is int
            if not (shaped and fields["id"] == key and type(answers) is list):
                raise isolation.ServiceFailed(f"it sent no answers to request {key}")
            if len(answers) != len(questions):
                raise isolation.ServiceFailed(
                    f"it sent {len(answers)} answers to {len(questions)} questions"
                )
            return answers

        return collect

    return ask


def _verify(args: argparse.Namespace) -> int:
    """Ask the copy every input in a contained worker (``cli.vendor_worker``), under a
    deadline, and judge each answer here against the oracle.

    The copy's code never runs in this process: what its worker sends is answers,
    never a verdict, and a worker that exits, crashes, runs past the deadline or
    sends anything but answers fails the copy.
    """
    target = args.target
    if not (target / "__init__.py").is_file():
        return _refuse(args, f"{target}: not a package folder (no __init__.py)", 2)
    seconds = args.seconds if args.seconds is not None else _verify_deadline(args.bound)
    started = time.perf_counter()
    try:
        with isolation.Service(WORKER, [str(target)], seconds) as copy:
            loaded = copy.receive()
            if loaded != {"loaded": True}:
                fields = loaded if type(loaded) is dict else {}
                why = isolation.one_line(fields.get("load_failed")) or (
                    "its worker's first message was neither loaded nor load_failed"
                )
                return _refuse(args, f"{target}: cannot import the copy: {why}", 1)
            coverage = check_exhaustively(core, args.bound, ask=_asking(copy), free_functions=True)
    except isolation.ServiceFailed as failure:
        if failure.timed_out:
            return _refuse(
                args,
                f"{target}: the walk did not end within {seconds:g} s (--seconds); "
                "the copy may loop forever on some input",
                1,
            )
        return _refuse(args, f"{target}: the copy stopped answering: {failure}", 1)
    return report_coverage(coverage, str(target), args.bound, time.perf_counter() - started)


def add_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``vendor``'s actions and their options on its parser."""
    parser.description = __doc__
    actions = parser.add_subparsers(dest="action", required=True)
    for name, run, summary in (
        ("copy", _copy, "copy the installed core into TARGET with a stamp"),
        (
            "check",
            _check,
            "report drift of the copy in TARGET (exit 1 on local edits, on files Python may "
            "import in place of its sources, or on a stamp of no published release)",
        ),
        ("update", _update, "refresh the copy in TARGET to the installed core"),
        (
            "verify",
            _verify,
            "ask the copy every input up to a bound in a contained worker; judge its "
            "answers here against the oracle",
        ),
    ):
        action = actions.add_parser(name, help=summary, description=summary)
        action.add_argument("target", type=output_path, metavar="TARGET", help="the copy's folder")
        action.set_defaults(action_run=run, action_parser=action)
        if name == "update":
            action.add_argument(
                "--force", action="store_true", help="discard local edits of the copy"
            )
        if name == "verify":
            options.add_bound(action, maximum=MAX_BOUND, note=": about 6.1M inputs")
            options.add_seconds(
                action,
                default=None,
                bounds="the walk (default: five times its estimate, at least 60)",
            )


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The action named on the command line."""
    action: Callable[[argparse.Namespace], int] = args.action_run
    return action(args)
