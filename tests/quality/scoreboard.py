"""The bug zoo's scoreboard, printed after the run from the rows its tests recorded.

Called from ``tests/conftest.py``'s summary hook: under ``make test`` the
controller process, which prints the summary, loads no folder's conftest.
"""

from __future__ import annotations

from _pytest.terminal import TerminalReporter

from tests.reports import SCOREBOARD, recorded

from .mutants import ZOO


def write_scoreboard(terminalreporter: TerminalReporter) -> None:
    order = {mutant.name: index for index, mutant in enumerate(ZOO)}
    rows = [row for _, row in recorded(terminalreporter, SCOREBOARD)]
    scoreboard = sorted(rows, key=lambda row: order[row[0]])
    write = terminalreporter.write_line
    caught = sum(1 for _, promise, _, _ in scoreboard if promise != "-")
    write(f"\nbug zoo: {caught}/{len(ZOO)} mutants caught")
    write(f"  {'mutant':<78}{'promise':<16}{'first (s)':>10}{'total (s)':>10}")
    for name, promise, first, total in scoreboard:
        shown = "-" if first is None else f"{first:.1f}"
        write(f"  {name:<78}{promise:<16}{shown:>10}{total:>10.1f}")
