"""No module over its size limit without a note saying why.

A module of the package (every part and ``junction/``'s own) holds one concept
in at most :data:`LIMIT` lines, a benchmark in at most :data:`BENCHMARK_LIMIT`.
A longer module carries a comment line ``# size: <why>`` of at least
:data:`WORDS` words saying why it stays one module (a table of data, one
concept that splitting would scatter); nothing else exempts it.
"""

from __future__ import annotations

import re

from tests.parts import ROOT, sources

LIMIT = 500
BENCHMARK_LIMIT = 300
WORDS = 6
NOTE = re.compile(r"^# size: (.+)$", re.MULTILINE)


def size_note(source: str) -> str | None:
    """The reason a module's ``# size:`` comment line gives, if it gives one."""
    for match in NOTE.finditer(source):
        if len(match[1].split()) >= WORDS:
            return match[1]
    return None


def test_only_a_comment_line_with_a_reason_is_a_note() -> None:
    reason = "one table of layouts: data, not logic"
    assert size_note(f'"""Doc."""\n\n# size: {reason}\nX = 1\n') == reason
    assert size_note("# size: long\n") is None  # no reason
    assert size_note(f"X = 1  # size: {reason}\n") is None  # not a line of its own
    assert size_note(f'"""\n    # size: {reason}\n"""\n') is None  # indented: not the module's
    assert size_note("X = 1\n") is None


def test_no_module_is_over_its_limit_without_a_note() -> None:
    over = []
    for path, benchmark in sources():
        source = path.read_text(encoding="utf-8")
        lines = len(source.splitlines())
        limit = BENCHMARK_LIMIT if benchmark else LIMIT
        if lines > limit and size_note(source) is None:
            over.append(f"{path.relative_to(ROOT)}: {lines} lines (at most {limit})")
    assert not over, (
        "modules over their limit: split each by concept, or say why it is one module in "
        f"a '# size: <why>' comment line of at least {WORDS} words: {over}"
    )
