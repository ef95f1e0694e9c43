"""Running a command in the test's own process, as a shell would see it end.

``main`` returns a status, or argparse exits (``SystemExit``) on bad usage;
either way a test wants the status and what was printed, and no traceback.
In-process runs are fast (no interpreter start-up); a few tests check the
same end to end in a subprocess.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import pytest

__all__ = ["Ended", "run_in_process"]


@attrs.frozen
class Ended:
    """A command's exit status and its standard output and error."""

    code: int
    out: str
    err: str

    @property
    def last_line(self) -> str:
        """Standard error's last line: the one-line message."""
        return self.err.strip().splitlines()[-1]


def run_in_process(
    main: Callable[[list[str]], int], argv: Sequence[str], capsys: pytest.CaptureFixture[str]
) -> Ended:
    """Run ``main(argv)``; fails the test if a traceback was printed."""
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return Ended(code, captured.out, captured.err)
