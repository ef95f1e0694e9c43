"""A vendored copy of the core, made by the command, inside an engine package of a test's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from junction.command import dispatch as reference


@pytest.fixture
def vendored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """``tmp_path/myengine/retention_core``: copied by ``vendor copy``, output discarded."""
    engine = tmp_path / "myengine"
    engine.mkdir()
    (engine / "__init__.py").write_text("")
    target = engine / "retention_core"
    assert reference(["vendor", "copy", str(target)]) == 0
    capsys.readouterr()
    return target


def edit_line(path: Path, number: int, text: str) -> None:
    """Replace line ``number`` (1-based) of ``path`` with ``text``."""
    lines = path.read_text().splitlines(keepends=True)
    lines[number - 1] = text + "\n"
    path.write_text("".join(lines))
