"""The one terminal layer: progress bars and tables for every command, from rich.

Every command that can run longer than a few seconds shows one progress line
on standard error (so standard output stays the command's result, byte for
byte, whether or not a terminal is attached). On a terminal the line is live;
elsewhere (CI logs, pipes, tests) rich prints nothing until the end, so logs
are not flooded with redraws.

Rejected: the two hand-made progress lines this replaces (one in ``fuzz``,
one in ``simulate``), which each re-implemented redraw, width and ETA; and
tqdm, which has no tables, so a second library would have been needed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

__all__ = ["ProgressLine", "interruptible", "progress", "stderr", "table"]

stderr = Console(stderr=True, highlight=False)


class ProgressLine(Protocol):
    """What a running command reports: work done so far, and what it is doing now."""

    def __call__(self, advance: int = 1, *, status: str | None = None) -> None: ...


@contextmanager
def progress(description: str, total: float | None) -> Iterator[ProgressLine]:
    """A progress line on standard error for ``total`` units (``None``: unknown).

    Yields a callable: ``advance(n)`` adds ``n`` units done; ``status=`` replaces
    the text after the bar (what is running now). Shows done/total, elapsed and
    an estimate of the time left.
    """
    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),  # "n/?" when the total is unknown: the count still shows
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[status]}"),
    ]
    console = Console(stderr=True, highlight=False)
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task(description, total=total, status="")

        def advance(advance: int = 1, *, status: str | None = None) -> None:
            if status is None:
                bar.update(task, advance=advance)
            else:
                bar.update(task, advance=advance, status=status)

        try:
            yield advance
        except BaseException:
            # An interrupted or failed command says so in one line of its own:
            # the half-drawn bar is neither left above it nor redrawn.
            bar.live.transient = True
            console.quiet = True
            raise


def table(title: str | None, header: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    """A rich table (first column left-aligned, the rest right-aligned)."""
    result = Table(title=title, title_justify="left")
    for index, name in enumerate(header):
        result.add_column(name, justify="left" if index == 0 else "right")
    for row in rows:
        result.add_row(*row)
    return result


def interruptible(main: Callable[[], int]) -> int:
    """``main()``'s exit status; Ctrl-C ends it with 130 and one line, never a traceback.

    Every command's entry point goes through this; what a command writes, it
    writes whole or not at all, so an interrupted one leaves nothing partial.
    """
    try:
        return main()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
