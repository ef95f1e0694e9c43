"""``junction replay FILE [--policy NAME]``: re-run saved counterexamples.

FILE holds what ``fuzz`` printed or wrote: one scenario (the JSON printed
under a violation) or a ``fuzz --json`` report, whose every counterexample
is replayed. Each scenario runs once on ``--policy`` (a built-in name or
``module:attribute``, default ``junction``) in this process, through the
same check the harness ran, and prints whether its promise holds now. Exit
status 0 when every promise holds; 1 when one is violated or the policy
raised (the line names the call); 2 for a file that is not a scenario or a
report (not a regular file, over the cap, a scenario outside its promise's
scope or too large for memory: ``cli.inputs``), or a policy that cannot be
loaded.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from junction.core import JunctionError
from junction.reference.cli import inputs, options
from junction.reference.engine.policy import PolicyError
from junction.reference.harness import Scenario, replay
from junction.reference.policies.registry import resolve_policy
from junction.reference.workloads.files import InputFileError, read_json

__all__ = ["add_options", "run", "scenarios_in"]


class NotAScenario(JunctionError, ValueError):
    """The file holds no scenario; the message names the file and what was found."""


def scenarios_in(path: Path) -> list[Scenario]:
    """The scenarios of a saved scenario or ``fuzz --json`` report (:class:`NotAScenario`),
    each checked before it runs (``cli.inputs``: its promise's scope, its size)."""
    try:
        data: Any = read_json(path)
    except InputFileError as error:
        raise NotAScenario(f"{path}: cannot read a JSON document: {error}") from None
    if isinstance(data, dict) and isinstance(data.get("verdicts"), list):
        found = [v.get("counterexample") for v in data["verdicts"] if isinstance(v, dict)]
        saved = [c for c in found if c]
        if not saved:
            raise NotAScenario(f"{path}: a fuzz report without a counterexample")
    elif isinstance(data, dict) and "promise" in data and "geometry" in data:
        saved = [data]
    else:
        raise NotAScenario(f"{path}: neither a scenario nor a fuzz --json report")
    try:
        scenarios = [Scenario.from_json(item) for item in saved]
    except (KeyError, TypeError, ValueError) as error:
        raise NotAScenario(
            f"{path}: not a valid scenario: {type(error).__name__}: {error}"
        ) from None
    for scenario in scenarios:
        try:
            inputs.check_scenario(
                f"{path}: not a valid {scenario.promise.value} scenario", scenario
            )
        except inputs.InputError as error:
            raise NotAScenario(str(error)) from None
    return scenarios


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        scenarios = scenarios_in(args.file)
        policy = resolve_policy(args.policy)
    except (NotAScenario, PolicyError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    status = 0
    for scenario in scenarios:
        promise = scenario.promise.value
        try:
            violation = replay(scenario, policy)
        except PolicyError as error:
            print(f"{promise}: error: {error}")
            status = 1
            continue
        except JunctionError as error:  # the engine refuses the scenario (a request too large)
            print(f"{parser.prog}: error: {args.file}: cannot replay: {error}", file=sys.stderr)
            return 2
        if violation is None:
            print(f"{promise}: holds")
        else:
            print(f"{promise}: VIOLATED: {violation}")
            status = 1
    return status


def add_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``replay``'s options on its parser."""
    parser.description = __doc__
    parser.add_argument("file", type=Path, metavar="FILE", help="a scenario or fuzz report (JSON)")
    options.add_policy(parser, repeatable=False)
