"""``junction``: the one command (also ``python -m junction``), one argparse tree.

Each subcommand is a row of :data:`COMMANDS` (``audit`` a group of rows)
naming the function that declares its options on its parser and the one that
runs it (``run(args, parser)``). The tree is built once with the
program name ``junction``; a subcommand's options are declared when that
subcommand is parsed, so ``junction --help`` imports none of them and
``junction NAME --help`` only NAME's options module, which never imports an
optional package the demo install lacks (torch, vLLM): every help works
there. A subcommand whose extra is missing ends with one line naming it,
exit 2. Ctrl-C ends any subcommand with status 130 and one line.
"""

from __future__ import annotations

import argparse
import importlib
import runpy
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

__all__ = [
    "BENCHMARKS",
    "COMMANDS",
    "Command",
    "Extra",
    "Group",
    "build_parser",
    "dispatch",
    "main",
]

PROG = "junction"


class Extra(NamedTuple):
    """An optional dependency set of pyproject.toml and the top-level modules it installs."""

    name: str
    modules: tuple[str, ...]


REFERENCE = Extra("reference", ("hypothesis", "rich"))
KERNELS = Extra("kernels", ("torch", "triton", "numpy"))


class Command(NamedTuple):
    """A subcommand: its name, one line of help, ``module:function`` declaring its
    options on its parser and ``module:function`` running it (``(args, parser) -> int``),
    and the extra it needs beyond the core."""

    name: str
    help: str
    options: str
    runner: str
    extra: Extra | None


class Group(NamedTuple):
    """A subcommand with subcommands of its own (``junction audit NAME``)."""

    name: str
    summary: str
    commands: tuple[Command, ...]

    @property
    def help(self) -> str:
        return f"{self.summary}: {' | '.join(c.name for c in self.commands)}"


#: ``junction bench NAME``: ``benchmarks/bench_NAME.py`` of a checkout.
BENCHMARKS = (
    "core",
    "kernels",
    "engine",
    "audit",
    "audit_sglang",
    "dropin",
    "sweep",
    "gpu",
    "peer",
    "dropin_loop",
    "next_turn",
    "tier_next_turn",
)

_CLI = "junction.reference.cli"


def _reference(name: str, help: str, module: str, runner: str | None = None) -> Command:
    """A reference-side subcommand: ``add_options`` and ``run`` of ``cli.MODULE`` (``run``
    of ``cli.RUNNER`` where its options are declared apart from what the run imports)."""
    return Command(
        name, help, f"{_CLI}.{module}:add_options", f"{_CLI}.{runner or module}:run", REFERENCE
    )


COMMANDS: tuple[Command | Group, ...] = (
    _reference(
        "simulate",
        "retention policies side by side on a workload or a trace",
        "simulate_options",
        "simulate",
    ),
    _reference("sweep", "a grid of simulations, in worker processes or on Ray", "sweep"),
    _reference("fuzz", "check a retention policy's promises for a while", "fuzz"),
    _reference("replay", "re-run a saved counterexample on a policy", "replay"),
    _reference("hbm", "hit rate against HBM: policies x budgets x evictions, fast", "hbm"),
    _reference("findings", "docs/findings.md: the harness on the vLLM policies", "findings"),
    _reference("exhaustive", "core against the oracle on every input up to a bound", "exhaustive"),
    Command(
        "kernel-sweep",
        "the batched paths against core on every input up to a bound",
        f"{_CLI}.kernel_sweep_options:add_options",
        f"{_CLI}.kernel_sweep:run",
        KERNELS,
    ),
    _reference("vendor", "copy the core into an engine, check and verify the copy", "vendor"),
    _reference("results", "refresh a document's generated tables from their files", "results"),
    Group(
        "audit",
        "the engine audits",
        (
            Command(
                "findings",
                "the docs/findings.md audit sections, re-run on the installed engines",
                "junction.audit.cli:add_findings_options",
                "junction.audit.cli:findings",
                REFERENCE,
            ),
            Command(
                "engines",
                "the audited engines and whether each is installed",
                "junction.audit.cli:add_engines_options",
                "junction.audit.cli:engines",
                REFERENCE,
            ),
            # Without vLLM it skips (exit 0, one line naming the extra), as the audit's tests do.
            Command(
                "vllm-suite",
                "vLLM 0.33.0's own tests with the core swapped in",
                "junction.audit.vllm.suite.cli:add_options",
                "junction.audit.vllm.suite.cli:run",
                REFERENCE,
            ),
            Command(
                "vllm-engine",
                "vLLM 0.33.0's scheduler as shipped against the drop-in, every layout",
                "junction.audit.vllm.scheduler_differential.cli:add_options",
                "junction.audit.vllm.scheduler_differential.cli:run",
                REFERENCE,
            ),
        ),
    ),
    Command(
        "bench",
        "a benchmark of benchmarks/ (a checkout only): bench NAME [ARGS]",
        "junction.command:add_options",
        "junction.command:run",
        None,
    ),
)

Runner = Callable[[argparse.Namespace, argparse.ArgumentParser], int]


def _load(command: Command, parser: argparse.ArgumentParser, path: str) -> Any:
    """``module:function``'s function; a module of the command's missing extra ends the
    command with one line naming the extra (exit 2), any other import error propagates."""
    module, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as error:
        extra = command.extra
        missing = (error.name or "").partition(".")[0]
        if extra is None or missing not in extra.modules:
            raise
        parser.exit(
            2,
            f"{parser.prog}: error: needs the `{extra.name}` extra ({missing} is not "
            f"installed): pip install 'junction[{extra.name}]'\n",
        )


class _Parser(argparse.ArgumentParser):
    """A parser whose refusal is one line: a bad argument or input is named by
    its message, and the usage is a ``--help`` away, not printed above it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


class _Subcommand(_Parser):
    """A subcommand's parser: its options are declared the first time it is used."""

    def __init__(self, *args: object, command: Command | None = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.command = command

    def _declare(self) -> None:
        command, self.command = self.command, None
        if command is not None:
            _load(command, self, command.options)(self)
            self.set_defaults(junction_command=command, junction_parser=self)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._declare()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._declare()
        return super().format_help()


def _subcommands(parser: argparse.ArgumentParser, rows: Sequence[Command | Group]) -> None:
    commands = parser.add_subparsers(
        title="subcommands",
        metavar="SUBCOMMAND",
        required=True,
        parser_class=_Subcommand,
    )
    for row in rows:
        if isinstance(row, Group):
            group = commands.add_parser(row.name, help=row.help, description=row.help)
            _subcommands(group, row.commands)
        else:
            commands.add_parser(
                row.name,
                help=row.help,
                command=row,
                formatter_class=argparse.RawDescriptionHelpFormatter,
            )


def build_parser() -> argparse.ArgumentParser:
    """The whole tree; no subcommand's options are declared until it is parsed."""
    parser = _Parser(
        prog=PROG,
        description="Junction: the retention decisions of hybrid-model prefix caches. "
        f"`{PROG} SUBCOMMAND --help` for a subcommand's options.",
    )
    _subcommands(parser, COMMANDS)
    return parser


def dispatch(argv: Sequence[str]) -> int:
    """Parse ``argv`` on the tree and run the subcommand it names; the exit status."""
    args = build_parser().parse_args(list(argv))
    command: Command = args.junction_command
    parser: argparse.ArgumentParser = args.junction_parser
    run: Runner = _load(command, parser, command.runner)
    return run(args, parser)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``junction ARGS``; the exit status. Ctrl-C, SIGTERM and SIGHUP end
    it with one line and 130, 143 or 129, workers killed, nothing partial
    written (``reference.cli.terminal.interruptible``)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        from junction.reference.cli.terminal import interruptible
    except ImportError:  # the core alone: help runs, and each command names its extra
        try:
            return dispatch(arguments)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
    return interruptible(lambda: dispatch(arguments))


def add_options(parser: argparse.ArgumentParser) -> None:
    """``bench``'s options: the benchmark's name, then its own arguments."""
    parser.description = (
        "Runs benchmarks/bench_NAME.py of the checkout this junction is installed from "
        "(an editable install), with ARGS; BENCHMARKS.md says what each measures."
    )
    parser.add_argument("name", choices=BENCHMARKS, metavar="NAME", help=", ".join(BENCHMARKS))
    parser.add_argument("arguments", nargs=argparse.REMAINDER, metavar="ARGS")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``bench``: the benchmark module run as ``__main__``, the checkout's root on the path
    (the console script's path starts at its own folder, never the checkout)."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "benchmarks" / f"bench_{args.name}.py").is_file():
        parser.exit(
            2,
            f"{parser.prog}: error: the benchmarks live in a checkout, and this junction "
            f"is installed from {root}: install a checkout with pip install -e\n",
        )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    # As ``python -m benchmarks.bench_NAME ARGS``: runpy puts the module's file in
    # argv[0], which a benchmark that starts worker processes runs again.
    sys.argv = [sys.argv[0], *args.arguments]
    runpy.run_module(f"benchmarks.bench_{args.name}", run_name="__main__", alter_sys=True)
    return 0
