"""One vLLM test's outcome in one run of the suite, as the plugin records it.

The plugin runs inside pytest in a child process and the suite reads its
report back, so outcomes travel as JSON lines; this record is the one shape
both sides agree on (a typed value, never a pytest summary parsed back).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from pathlib import Path

import attrs

__all__ = ["Status", "TestOutcome", "read_outcomes"]


class Status(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


@attrs.frozen
class TestOutcome:
    """A test's status, the decision points it called (count mode), and why it failed.

    ``unsupported`` is ``(option, value)`` of the
    :class:`~junction.dropin.UnsupportedOption` the failure raised, if
    any; ``error`` is the last line of pytest's report of a failure.
    """

    __test__ = False  # not a pytest test class

    nodeid: str
    status: Status
    exercised: tuple[str, ...] = ()
    unsupported: tuple[str, str] | None = None
    error: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "nodeid": self.nodeid,
                "status": self.status.value,
                "exercised": list(self.exercised),
                "unsupported": None if self.unsupported is None else list(self.unsupported),
                "error": self.error,
            }
        )

    @classmethod
    def from_json(cls, line: str) -> TestOutcome:
        data = json.loads(line)
        unsupported = data["unsupported"]
        return cls(
            data["nodeid"],
            Status(data["status"]),
            tuple(data["exercised"]),
            None if unsupported is None else (unsupported[0], unsupported[1]),
            data["error"],
        )


def read_outcomes(path: Path) -> dict[str, TestOutcome]:
    """The outcomes a run wrote, by test id (a missing file is an empty run)."""
    if not path.exists():
        return {}
    lines: Iterable[str] = path.read_text(encoding="utf-8").splitlines()
    return {o.nodeid: o for o in (TestOutcome.from_json(line) for line in lines if line)}
