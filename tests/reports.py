"""What the run's tests recorded, read back at its end (the ``pytest_terminal_summary`` hooks)."""

from __future__ import annotations

from collections.abc import Iterator

from _pytest.terminal import TerminalReporter

#: The ``record_property`` name of a line of the run's closing summary (the ``summary`` fixture).
SUMMARY = "junction summary"
#: That of a bug zoo test's scoreboard row: ``(mutant, promise caught or "-",
#: seconds to the first counterexample or None, seconds)`` (``tests/quality``).
SCOREBOARD = "bug zoo"


def recorded(terminalreporter: TerminalReporter, name: str) -> Iterator[tuple[str, object]]:
    """Each ``(test id, value)`` the run's tests recorded under ``name``
    (``record_property``), in test-id order: reports reach the controller
    from every worker, a module's globals do not."""
    reports = [r for kind in terminalreporter.stats.values() for r in kind]
    for report in sorted(
        (r for r in reports if getattr(r, "when", None) == "call"), key=lambda r: r.nodeid
    ):
        for key, value in report.user_properties:
            if key == name:
                yield report.nodeid, value
