"""The README's examples run, and print what their comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


@pytest.mark.parametrize("source", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs_and_prints_what_it_says(source: str) -> None:
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(source, str(README), "exec"), {})
    printed = output.getvalue().splitlines()
    # A comment right after print(...) that starts like Python output is checked.
    claims = re.findall(r"^print\(.*?\)\s+#\s+(tensor\(\[[^\]]*\]\)|\d+)\b", source, re.M)
    squeezed = [line.replace(" ", "") for line in printed]
    for claim in claims:
        assert claim.replace(" ", "") in squeezed, (claim, printed)
    assert printed
