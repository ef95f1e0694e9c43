"""``junction``: one command for every entry point (also ``python -m junction``).

A thin dispatcher: each subcommand is one row of :data:`COMMANDS`, naming
the entry point it hands the rest of the command line to. Entry points are
imported only when their subcommand runs, so ``junction fuzz`` needs the demo
install alone and ``junction --help`` needs nothing but the core's.
``junction SUBCOMMAND --help`` is that entry point's own help. Ctrl-C ends
any subcommand with status 130 and one line.
"""

from __future__ import annotations

import importlib
import runpy
import sys
from collections.abc import Callable, Sequence
from typing import NamedTuple

__all__ = ["BENCHMARKS", "COMMANDS", "Command", "main"]

PROG = "junction"


class Command(NamedTuple):
    """A subcommand: its name, one line of help, and what runs it (given the arguments)."""

    name: str
    help: str
    run: Callable[[list[str]], int]


def _reference(name: str) -> Callable[[list[str]], int]:
    def run(argv: list[str]) -> int:
        from junction.reference.cli.main import main as reference

        return reference([name, *argv])

    return run


def _entry(module: str) -> Callable[[list[str]], int]:
    def run(argv: list[str]) -> int:
        entry: Callable[[list[str]], int] = importlib.import_module(module).main
        return entry(argv)

    return run


def _audit(argv: list[str]) -> int:
    if argv[:1] == ["vllm-suite"]:
        return _entry("junction.audit.vllm.suite.__main__")(argv[1:])
    return _entry("junction.audit.__main__")(argv)


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
)


def _bench(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in BENCHMARKS:
        known = ", ".join(BENCHMARKS)
        if argv and argv[0] not in ("-h", "--help"):
            print(
                f"{PROG} bench: error: unknown benchmark {argv[0]!r} (one of {known})",
                file=sys.stderr,
            )
            return 2
        print(
            f"usage: {PROG} bench NAME [ARGS...]; NAME one of {known} (benchmarks/, BENCHMARKS.md)"
        )
        return 0 if argv else 2
    module = f"benchmarks.bench_{argv[0]}"
    try:
        importlib.import_module("benchmarks")
    except ImportError:
        print(
            f"{PROG} bench: error: the benchmarks live in a checkout: run it from its root",
            file=sys.stderr,
        )
        return 2
    sys.argv = [f"{PROG} bench {argv[0]}", *argv[1:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0


COMMANDS: tuple[Command, ...] = (
    Command(
        "simulate",
        "retention policies side by side on a workload or a trace",
        _reference("simulate"),
    ),
    Command("sweep", "a grid of simulations, in worker processes or on Ray", _reference("sweep")),
    Command("fuzz", "check a retention policy's promises for a while", _reference("fuzz")),
    Command("replay", "re-run a saved counterexample on a policy", _reference("replay")),
    Command("hbm", "hit rate against HBM: policies x budgets x evictions, fast", _reference("hbm")),
    Command(
        "findings", "docs/findings.md: the harness on the vLLM policies", _reference("findings")
    ),
    Command(
        "exhaustive",
        "core against the oracle on every input up to a bound",
        _reference("exhaustive"),
    ),
    Command(
        "kernel-sweep",
        "the batched paths against core on every input up to a bound",
        _entry("junction.reference.cli.kernel_sweep"),
    ),
    Command(
        "vendor", "copy the core into an engine, check and verify the copy", _reference("vendor")
    ),
    Command(
        "audit", "the audits: findings [--write FILE] | engines | vllm-suite [--cache DIR]", _audit
    ),
    Command("bench", "a benchmark of benchmarks/ (checkout only): bench NAME [ARGS]", _bench),
)


def usage() -> str:
    width = max(len(c.name) for c in COMMANDS)
    rows = "\n".join(f"  {c.name:<{width}}  {c.help}" for c in COMMANDS)
    return (
        f"usage: {PROG} SUBCOMMAND [ARGS...]\n\n"
        "Junction: the retention decisions of hybrid-model prefix caches.\n\n"
        f"subcommands:\n{rows}\n\n"
        f"`{PROG} SUBCOMMAND --help` for a subcommand's options."
    )


def _dispatch(argv: Sequence[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    named = {c.name: c for c in COMMANDS}
    command = named.get(argv[0])
    if command is None:
        print(
            f"{PROG}: error: unknown subcommand {argv[0]!r} (one of {', '.join(named)})",
            file=sys.stderr,
        )
        return 2
    return command.run(list(argv[1:]))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``junction ARGS``; the exit status. Ctrl-C, SIGTERM and SIGHUP end
    it with one line and 130, 143 or 129, workers killed, nothing partial
    written (``reference.cli.terminal.interruptible``, as every entry point)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        from junction.reference.cli.terminal import interruptible
    except ImportError:  # the core alone: only help runs, and each command names its extra
        try:
            return _dispatch(arguments)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
    return interruptible(lambda: _dispatch(arguments))
