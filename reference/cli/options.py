"""The options the ``junction`` subcommands share, each declared once.

A subcommand composes its parser from these groups and declares only the
options no other subcommand has; what differs between subcommands (a
default, whether an option repeats) is a parameter here, never a second
declaration (``tests/cli/test_options.py`` fails on a flag added in two
places).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from junction.reference.policies.registry import policy_names
from junction.reference.simulator.geometries import DEFAULT_GEOMETRIES, GEOMETRIES
from junction.reference.simulator.pool import PoolSize
from junction.reference.simulator.run import ARRIVALS

from .arguments import (
    finite_seconds,
    geometry_name,
    int_at_least,
    int_between,
    interval_list,
    output_path,
    pool_blocks,
    pool_fraction,
    pool_tokens,
)

__all__ = [
    "DEFAULT_POOL",
    "add_bound",
    "add_builtin_workload",
    "add_geometry",
    "add_interval",
    "add_intervals",
    "add_jobs",
    "add_json",
    "add_out",
    "add_policy",
    "add_pools",
    "add_requests",
    "add_scheduling",
    "add_seconds",
    "add_seed",
    "add_step",
    "add_trace",
]

#: The pool a run gets when no ``--blocks``, ``--pool-tokens`` or ``--pool-fraction`` is given.
DEFAULT_POOL = PoolSize("blocks", 40_000)

# An argument parser, or one of its (mutually exclusive) groups.
Container = argparse._ActionsContainer


def add_trace(
    parser: Container,
    *,
    repeatable: bool = False,
    hash_only: bool = False,
    default: str | None = None,
    note: str = "",
) -> None:
    """``--trace FILE`` (the path as given: it names the workload in the outputs) and
    ``--requests N``; ``note`` is what the command adds (where the file must be, its default)."""
    kinds = "hash-id (Mooncake)" if hash_only else "token-id or hash-id (Mooncake)"
    parser.add_argument(
        "--trace",
        action="append" if repeatable else "store",
        default=default,
        metavar="FILE",
        help=f"a JSONL trace to replay, {kinds}, plain or gzip (docs/trace-format.md)"
        f"{', repeatable' if repeatable else ''}{note}",
    )
    add_requests(
        parser, meaning="with --trace: only the first N requests of each trace (file order)"
    )


def add_requests(parser: Container, *, meaning: str, default: int | None = None) -> None:
    """``--requests N`` (N >= 1): how many requests a run takes; ``meaning`` says which."""
    parser.add_argument(
        "--requests", type=int_at_least(1), default=default, metavar="N", help=meaning
    )


def add_builtin_workload(parser: Container) -> None:
    """The built-in agent workload's size: ``--sessions``, ``--turns``, ``--system-prompt``."""
    at_least_1 = int_at_least(1)
    parser.add_argument(
        "--sessions", type=at_least_1, default=48, help="built-in: agent sessions (default 48)"
    )
    parser.add_argument(
        "--turns", type=at_least_1, default=4, help="built-in: turns per session (default 4)"
    )
    parser.add_argument(
        "--system-prompt",
        type=at_least_1,
        default=1500,
        metavar="TOKENS",
        help="built-in: system prompt tokens (default 1500)",
    )


def add_seed(parser: Container) -> None:
    """``--seed``: the same seed gives the same run."""
    parser.add_argument(
        "--seed",
        type=int_at_least(0),
        default=0,
        help="the seed: the same seed gives the same run (default 0)",
    )


def add_geometry(parser: Container) -> None:
    """``--geometry NAME``, repeatable (the command's default: :data:`DEFAULT_GEOMETRIES`)."""
    parser.add_argument(
        "--geometry",
        type=geometry_name,
        action="append",
        metavar="NAME",
        help=f"geometry to run, repeatable ({', '.join(GEOMETRIES)}; "
        f"default: {' and '.join(DEFAULT_GEOMETRIES)})",
    )


def add_pools(parser: argparse.ArgumentParser, *, repeatable: bool) -> None:
    """The pool's size three ways. One pool (``args.pool``, :data:`DEFAULT_POOL` unless
    given): the three exclude each other. Repeatable (``args.pools``, None unless given):
    they combine, every pool one more point of the grid."""
    container: Container = parser if repeatable else parser.add_mutually_exclusive_group()
    how = "are repeatable and combine" if repeatable else "exclude each other"
    how = f"; the three {how} (default: --blocks {DEFAULT_POOL.value})"
    for option, kind, metavar, what in (
        (
            "--blocks",
            pool_blocks,
            "N|unbounded",
            "a pool of N blocks, or unbounded (never evicts); lower it for eviction pressure",
        ),
        ("--pool-tokens", pool_tokens, "N", "a pool holding N tokens in every group at once"),
        (
            "--pool-fraction",
            pool_fraction,
            "F",
            "F in (0, 1] of the working set (every distinct full prompt block)",
        ),
    ):
        container.add_argument(
            option,
            dest="pools" if repeatable else "pool",
            type=kind,
            action="append" if repeatable else "store",
            metavar=metavar,
            help=what + how,
        )
    if not repeatable:
        parser.set_defaults(pool=DEFAULT_POOL)


def add_step(parser: Container, *, chunk: int) -> None:
    """What one engine step schedules: ``--budget`` and ``--chunk`` (default ``chunk``)."""
    parser.add_argument(
        "--budget",
        type=int_at_least(1),
        default=2048,
        metavar="TOKENS",
        help="tokens scheduled per step (the engine's max_num_batched_tokens; default 2048)",
    )
    parser.add_argument(
        "--chunk",
        type=int_at_least(0),
        default=chunk,
        metavar="TOKENS",
        help=f"prefill tokens per request per step, 0 for no cap (default {chunk})",
    )


def add_scheduling(parser: Container) -> None:
    """When requests arrive and how they decode: ``--concurrency``, ``--arrivals``, ``--eagle``."""
    parser.add_argument(
        "--concurrency", type=int_at_least(1), default=8, help="sessions open at once (default 8)"
    )
    parser.add_argument(
        "--arrivals",
        choices=ARRIVALS,
        help="when requests are sent: sessions (closed loop, --concurrency at once), trace "
        "(at their timestamps), sequential (one at a time); default: trace for a trace "
        "with timestamps, else sessions",
    )
    parser.add_argument(
        "--eagle",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="EAGLE speculative decoding (default off)",
    )


def add_interval(parser: Container, *, default: int | None, default_text: str) -> None:
    """``--interval R``: the interval policy's ``R`` (the command checks it against ``L``)."""
    parser.add_argument(
        "--interval",
        type=int_at_least(1),
        default=default,
        metavar="R",
        help=f"the interval policy's R, a multiple of every geometry's L (default {default_text})",
    )


def add_intervals(
    parser: Container, *, minimum: int, default: tuple[int, ...] | None, default_text: str
) -> None:
    """``--intervals R,R,...``: retention intervals, each ``>= minimum``, sorted, each once.
    Without a default, ``none`` is the empty list (the command's own choice otherwise)."""
    listed = interval_list(minimum)

    def intervals(text: str) -> tuple[int, ...]:
        return () if default is None and text == "none" else listed(text)

    intervals.__name__ = listed.__name__
    parser.add_argument(
        "--intervals",
        type=intervals,
        default=default,
        metavar="R,R,..." if default is not None else "R,R,...|none",
        help=f"retention intervals, multiples of every geometry's L (default {default_text})",
    )


def _policy(text: str) -> str:
    """A registered policy's name, or ``module:attribute`` (loaded by the runs)."""
    if text not in policy_names() and ":" not in text:
        raise argparse.ArgumentTypeError(
            f"{text!r}: not a registered policy ({', '.join(policy_names())}) nor module:attribute"
        )
    return text


def add_policy(parser: Container, *, repeatable: bool, note: str = "") -> None:
    """``--policy NAME``: a registered policy or ``module:attribute``. One (default
    ``junction``): the command loads it and reports what fails. Repeatable (default
    None): a grid's rows, whose runs load them later, so a name that cannot be one is
    refused now."""
    parser.add_argument(
        "--policy",
        action="append" if repeatable else "store",
        type=_policy if repeatable else str,
        default=None if repeatable else "junction",
        metavar="NAME",
        help="a registered policy or module:attribute"
        + (", repeatable" if repeatable else " (default junction)")
        + note,
    )


def add_jobs(parser: Container, *, default: int | None, note: str = "") -> None:
    """``--jobs N``: worker processes; ``default`` None is the CPU count."""
    if default is None:
        default_text = f"the CPU count, {os.cpu_count()} here; 1: in this process"
    else:
        default_text = str(default)
    parser.add_argument(
        "--jobs",
        type=int_at_least(1),
        default=default,
        metavar="N",
        help=f"worker processes (default {default_text}){note}",
    )


def add_out(parser: Container, *, default: Path, writes: str, folder: bool = True) -> None:
    """``--out``: where the command's files go (never the empty string)."""
    parser.add_argument(
        "--out",
        type=output_path,
        default=default,
        metavar="DIR" if folder else "FILE",
        help=f"where {writes} go (default {default}{'/' if folder else ''})",
    )


def add_json(parser: Container, *, what: str) -> None:
    """``--json FILE``: also write ``what`` as JSON."""
    parser.add_argument(
        "--json", type=output_path, metavar="FILE", help=f"also write {what} as JSON"
    )


def add_seconds(parser: Container, *, default: float | None, bounds: str) -> None:
    """``--seconds``: a finite deadline > 0 for what ``bounds`` says."""
    parser.add_argument(
        "--seconds",
        type=finite_seconds,
        default=default,
        help=f"deadline in seconds for {bounds}",
    )


def add_bound(parser: Container, *, maximum: int | None = None, note: str = "") -> None:
    """``--bound N``: the exhaustive walk's size of every dimension, 1 to ``maximum``."""
    parser.add_argument(
        "--bound",
        type=int_at_least(1) if maximum is None else int_between(1, maximum),
        default=3,
        help="the walk's size of every dimension"
        + ("" if maximum is None else f", 1-{maximum}")
        + f" (default 3{note})",
    )
