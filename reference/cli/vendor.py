"""``junction vendor``: copy the core into an engine and keep it honest.

* ``vendor copy TARGET``: copy the installed core into a new or empty folder,
  with its stamp ``VENDORED.json``.
* ``vendor check TARGET``: report local edits file by file, files Python may
  import in the sources' place, and whether an update is available; exit 1 on
  either, or on a stamp that names no published release nor the installed core.
* ``vendor update TARGET [--force]``: refresh the copy; local edits are
  refused unless ``--force`` discards them, a link in the copy always.
* ``vendor verify TARGET [--bound N]``: walk every input up to the bound,
  the copy against the first-principles oracle; exit 1 on a disagreement.

A target that is not what the command needs exits 2 with one line; a failed
write exits 1. Why ``verify`` is the walk alone: docs/design/vendor-verify.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from junction.reference import isolation, releases, vendoring
from junction.reference.cli import options
from junction.reference.cli.arguments import output_path
from junction.reference.cli.exhaustive import WALK_RATES
from junction.reference.oracle.exhaustive import count_inputs

__all__ = ["add_options", "run"]

# Bound 4 is about 10.1 million inputs (a couple of minutes); above it, hours.
MAX_BOUND = 4


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
        print("local edits: none (every file is as copied)")
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


def _verify(args: argparse.Namespace) -> int:
    """Walk the copy in a contained child (``cli.vendor_worker``) under a deadline.

    Only the child's one result frame counts: a child that exits (``SystemExit``
    in the copy, a crash) or runs past the deadline without sending it fails.
    """
    if not (args.target / "__init__.py").is_file():
        return _refuse(args, f"{args.target}: not a package folder (no __init__.py)", 2)
    seconds = args.seconds if args.seconds is not None else _verify_deadline(args.bound)
    outcome = isolation.run_in_child(
        "junction.reference.cli.vendor_worker", [str(args.target), str(args.bound)], seconds
    )
    if isinstance(outcome, isolation.NoResult) and outcome.timed_out:
        return _refuse(
            args,
            f"{args.target}: the walk did not end within {seconds:g} s (--seconds); "
            "the copy may loop forever on some input",
            1,
        )
    if isinstance(outcome, isolation.NoResult):
        return _refuse(
            args,
            f"{args.target}: the check ended without a result (exit status "
            f"{outcome.exit_status}): the copy exited or crashed during it",
            1,
        )
    message = outcome.message
    fields = message if type(message) is dict else {}
    status, report, error = fields.get("status"), fields.get("report"), fields.get("error")
    if status not in (0, 1, 2) or type(report) is not str or type(error) is not str:
        return _refuse(args, f"{args.target}: the check sent no valid result", 1)
    print(report, end="")
    if error:
        return _refuse(args, error[:1000], int(status))
    return int(status)


def add_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``vendor``'s actions and their options on its parser."""
    parser.description = __doc__
    actions = parser.add_subparsers(dest="action", required=True)
    for name, run, summary in (
        ("copy", _copy, "copy the installed core into TARGET with a stamp"),
        ("check", _check, "report drift of the copy in TARGET (exit 1 on local edits)"),
        ("update", _update, "refresh the copy in TARGET to the installed core"),
        ("verify", _verify, "walk every input up to a bound: the copy against the oracle"),
    ):
        action = actions.add_parser(name, help=summary, description=summary)
        action.add_argument("target", type=output_path, metavar="TARGET", help="the copy's folder")
        action.set_defaults(action_run=run, action_parser=action)
        if name == "update":
            action.add_argument(
                "--force", action="store_true", help="discard local edits of the copy"
            )
        if name == "verify":
            options.add_bound(action, maximum=MAX_BOUND, note=": about 1.9M inputs")
            options.add_seconds(
                action,
                default=None,
                bounds="the walk (default: five times its estimate, at least 60)",
            )


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The action named on the command line."""
    action: Callable[[argparse.Namespace], int] = args.action_run
    return action(args)
