"""Timing through pyperf, and the side-by-side table every per-call benchmark prints.

pyperf calibrates how many calls a value times, warms up, and spreads the
values over worker processes (``--processes``; ``--fast`` and
``--rigorous`` as in pyperf). Each row of a table is one pyperf benchmark
per side, whose calls are built once, outside the timing, and timed in the
thread's CPU time (a shared machine's other load does not add to it); the
table gives each side's median and their ratio. A benchmark whose worker would spend
most of its life importing vLLM or torch runs its values in one process
instead (pyperf's ``--in-process``), which its docstring says.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterable, Sequence

import pyperf

Call = Callable[[], object]
#: What a side's calls run inside, entered around each timed value (outside its time).
Around = Callable[[], contextlib.AbstractContextManager[object]]
Clock = Callable[[], float]


def runner(
    module: str,
    *,
    in_process: bool = False,
    processes: int | None = None,
    forward: Sequence[str] = (),
) -> pyperf.Runner:
    """pyperf's runner for the benchmark module ``module`` (its workers run
    ``python -m module``, so ``junction bench NAME`` and ``python -m`` both
    work), with its own defaults for ``--in-process`` and ``--processes``;
    the module's own options named in ``forward`` (as ``--name``, added to
    ``runner.argparser`` before the first benchmark) reach its workers."""

    def add_cmdline_args(command: list[str], args: argparse.Namespace) -> None:
        for name in forward:
            command.extend((f"--{name.replace('_', '-')}", str(getattr(args, name))))

    made = pyperf.Runner(
        processes=processes, program_args=("-m", module), add_cmdline_args=add_cmdline_args
    )
    made.argparser.set_defaults(in_process=in_process)
    return made


def time_calls(
    loops: int, call: Call, around: Around = contextlib.nullcontext, clock: Clock = time.thread_time
) -> float:
    """pyperf's time function: seconds of ``loops`` calls of ``call``, inside
    ``around()``, by ``clock``: by default this thread's CPU time, which the
    other tenants of a shared machine do not add to."""
    with around():
        started = clock()
        for _ in range(loops):
            call()
        return clock() - started


def side_by_side(
    made: pyperf.Runner,
    sides: tuple[str, str],
    rows: Iterable[tuple[str, Call, Call]],
    around: tuple[Around, Around] = (contextlib.nullcontext, contextlib.nullcontext),
    clock: Clock = time.thread_time,
) -> None:
    """Time each row's two calls (each its own pyperf benchmark; the first
    side's inside ``around[0]()``, the second's inside ``around[1]()``; a
    row is built as it is timed), then, in the process that ran them all,
    print each side's median in microseconds and the ratio of the first to
    the second; ``clock`` as in :func:`time_calls`."""
    results = [
        (name, *(made.bench_time_func(f"{name}: {side}", time_calls, call, context, clock)
                 for side, call, context in zip(sides, calls, around, strict=True)))
        for name, *calls in rows
    ]  # fmt: skip
    if made.args.worker:
        return
    first, second = sides
    print(f"median per call (us); ratio {first} / {second}")
    print(f"  {first:>9}  {second:>9}  {'ratio':>6}  case")
    for name, ours, theirs in results:
        mine, other = ours.median() * 1e6, theirs.median() * 1e6
        print(f"  {mine:9.2f}  {other:9.2f}  {mine / other:6.2f}  {name}")
