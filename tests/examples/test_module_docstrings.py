"""Module docstrings stay short: what the module guarantees and the one why.

Rationale that needs more goes to ``docs/design/``, one note per decision,
linked from the docstring by path (which must exist); every module of the
package (tests aside) is held to :data:`LIMIT` lines.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.parts import PARTS, ROOT

LIMIT = 20
NOTE = re.compile(r"docs/design/[\w.-]+\.md")


def docstring_lines(source: str) -> int:
    """Lines of a module's docstring (0 without one)."""
    docstring = ast.get_docstring(ast.parse(source))
    return len(docstring.splitlines()) if docstring else 0


def modules() -> list[Path]:
    return sorted(path for folder in PARTS for path in (ROOT / folder).rglob("*.py"))


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_count_is_the_docstrings_lines() -> None:
    long = '"""One line.\n\n' + "more\n" * LIMIT + '"""\n\nX = 1\n'
    assert docstring_lines(long) == LIMIT + 2
    assert docstring_lines('"""One line."""\n') == 1
    assert docstring_lines("X = 1\n") == 0


@pytest.mark.parametrize("path", modules(), ids=_name)
def test_a_module_docstring_is_at_most_the_limit(path: Path) -> None:
    lines = docstring_lines(path.read_text(encoding="utf-8"))
    assert lines <= LIMIT, (
        f"{_name(path)}: a module docstring of {lines} lines (at most {LIMIT}): say what "
        "it guarantees and the one why; more rationale goes to a docs/design/ note"
    )


@pytest.mark.parametrize("path", modules(), ids=_name)
def test_every_design_note_a_module_cites_exists(path: Path) -> None:
    missing = [
        n for n in NOTE.findall(path.read_text(encoding="utf-8")) if not (ROOT / n).is_file()
    ]
    assert not missing, f"{_name(path)} cites design notes that are not there: {missing}"
