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

import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

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

__all__ = [
    "TERMINATION_SIGNALS",
    "ProgressLine",
    "Terminated",
    "exit_status",
    "interruptible",
    "progress",
    "signalled",
    "stderr",
    "table",
]

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


class Terminated(KeyboardInterrupt):
    """A termination signal (SIGTERM, SIGHUP), raised where a Ctrl-C would be.

    A subclass of ``KeyboardInterrupt`` so that every path that already ends
    a command cleanly on Ctrl-C (workers killed, nothing partial committed)
    ends it the same way on ``timeout``, a CI cancel or ``docker stop``.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


TERMINATION_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_received: list[int] = []  # the signals that asked this process to end, first first


def signalled() -> int | None:
    """The first Ctrl-C or termination signal this command received, if any.

    Long loops that run untrusted code (which may catch what the signal
    raised) ask this to stop anyway: ``fuzz`` stops its examples on it.
    """
    return _received[0] if _received else None


def _interrupt(signum: int, frame: object) -> None:
    _received.append(signum)
    raise KeyboardInterrupt


def _unraisable(previous: Callable[[Any], object]) -> Callable[[Any], object]:
    """A ``sys.unraisablehook`` for a run that signals end.

    A handler's exception raised inside a callback Python cannot propagate
    from (a garbage-collector callback, such as Hypothesis registers, or a
    finalizer) is printed as "Exception ignored" with a traceback. The signal
    is recorded all the same (:func:`signalled`, which long loops ask, and
    which ends the command with its one line), so that exception is dropped
    silently; anything else goes to the hook before.
    """

    def hook(unraisable: Any) -> None:
        if _received and isinstance(unraisable.exc_value, KeyboardInterrupt):
            return
        previous(unraisable)

    return hook


def _terminate(signum: int, frame: object) -> None:
    # Once is enough: a second signal must not interrupt the cleanup the first began.
    for number in TERMINATION_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    _received.append(signum)
    raise Terminated(signum)


def exit_status(signum: int) -> int:
    """The status a command ends with on signal ``signum``: 128 + its number, as shells report."""
    return 128 + signum


def interruptible(main: Callable[[], int]) -> int:
    """``main()``'s exit status; a Ctrl-C, SIGTERM or SIGHUP ends it with one line.

    Exit status: 130 after Ctrl-C (``interrupted``), 143 after SIGTERM and
    129 after SIGHUP (``terminated (SIGTERM)``), 1 for a ``MemoryError`` the
    up-front estimates missed (``error: out of memory ...``), never a traceback. Every
    command's entry point goes through this; what a command writes, it
    writes whole or not at all, and its worker processes end with it, so an
    ended one leaves nothing partial and nothing running. A signal that a
    layer turned into an error of its own (a policy call catches
    everything) still ends the command this way.
    """
    before = sys.unraisablehook
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _interrupt)
        for number in TERMINATION_SIGNALS:
            signal.signal(number, _terminate)
        # Put back after the run: commands run in one process (the tests) do
        # not stack a hook each.
        sys.unraisablehook = _unraisable(before)
    try:
        return _ending(main)
    finally:
        sys.unraisablehook = before


def _ending(main: Callable[[], int]) -> int:
    """:func:`interruptible`'s run of ``main``, its handlers in place."""
    try:
        code = main()
    except KeyboardInterrupt as error:
        if not _received:  # raised by other means than this module's handlers
            _received.append(error.signum if isinstance(error, Terminated) else signal.SIGINT)
        code = 0
    except MemoryError:
        # The estimates refuse what they can count up front; this is what they missed.
        print(
            "error: out of memory (the machine's, or the address-space limit, ulimit -v); "
            "nothing written",
            file=sys.stderr,
        )
        return 1
    except BaseException:
        # Unwinding from a signal can break a library's own state on the way (an
        # assertion inside Hypothesis's engine): still the one line, no traceback.
        if not _received:
            raise
        code = 0
    signum = signalled()
    if signum is None:
        return code
    if signum == signal.SIGINT:
        print("interrupted", file=sys.stderr)
        return 130
    print(f"terminated ({signal.Signals(signum).name})", file=sys.stderr)
    return exit_status(signum)
