"""Docstrings say what a thing is, briefly, and never its history.

A module docstring of a part is what the module guarantees and the one why, in
at most :data:`LIMIT` lines; rationale that needs more goes to ``docs/design/``, one
note per decision, linked from the docstring by path (which must exist). No
docstring (module, class or function; the package's and the benchmarks')
narrates history: each phrase of :data:`HISTORY` is refused. Upstream
references (``vLLM #50409``, ``PR #47782``) are facts of the domain and
pass; this project's issue numbers (three digits at most) do not.
"""

from __future__ import annotations

import ast
import functools
import inspect
import io
import re
import tokenize

from tests.parts import PARTS, ROOT, sources

LIMIT = 20
NOTE = re.compile(r"docs/design/[\w.-]+\.md")
# What only a history narrates, each named as the failure reports it.
HISTORY = {
    "'used to' (what it did before)": re.compile(
        r"\bused(?<!\bis used)(?<!\bare used)(?<!\bbe used)(?<!\bbeen used)(?<!\bwas used)"
        r"(?<!\bwere used) to\b",
        re.I,
    ),
    "a sentence opening with 'Now'": re.compile(r"(?:^|[.!?:;]\s+)Now\b"),
    "'what it was before'": re.compile(r"\bwhat (?:it|they) (?:was|were) before\b", re.I),
    "'previously', 'formerly', 'they once'": re.compile(
        r"\b(?:previously|formerly)\b|\b(?:they|we) once\b|\bonce (?:was|were|had)\b", re.I
    ),
    "a change narrated": re.compile(
        r"\b(?:was|were|has been|have been) (?:split|moved|renamed|rewritten|replaced|merged"
        r"|removed|introduced|changed|added)\b",
        re.I,
    ),
    "an issue number of this project": re.compile(
        r"\bissues? #?\d{1,3}\b|(?<![\w#/&])#\d{1,3}\b", re.I
    ),
    "a date": re.compile(r"\b20\d\d-\d\d-\d\d\b"),
}


def module_docstring(source: str) -> str | None:
    """A module's docstring as ``ast.get_docstring`` gives it, read off its first token.

    The module's first statement is all a docstring can be, so nothing past
    it is parsed.
    """
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in _BEFORE_CODE:
            continue
        if token.type == tokenize.STRING:
            text = ast.literal_eval(token.string)
            return inspect.cleandoc(text) if isinstance(text, str) else None
        return None
    return None


_BEFORE_CODE = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING)


def docstring_lines(source: str) -> int:
    """Lines of a module's docstring (0 without one)."""
    docstring = module_docstring(source)
    return len(docstring.splitlines()) if docstring else 0


@functools.cache
def _sources() -> list[tuple[str, str]]:
    """Every module the rules hold for, by name, read once."""
    return [
        (str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path, _ in sources()
    ]


def test_the_count_is_the_docstrings_lines() -> None:
    long = '"""One line.\n\n' + "more\n" * LIMIT + '"""\n\nX = 1\n'
    assert docstring_lines(long) == LIMIT + 2
    assert docstring_lines('"""One line."""\n') == 1
    assert docstring_lines("X = 1\n") == 0
    for source in ('# A comment.\n\n"""Two\n    lines."""\nX = 1\n', 'b"""Bytes."""\n', "X = 1\n"):
        assert module_docstring(source) == ast.get_docstring(ast.parse(source))


def test_a_module_docstring_is_at_most_the_limit() -> None:
    long = [
        f"{name}: {len(docstring.splitlines())} lines"
        for name, source in _sources()
        if name.split("/")[0] in PARTS  # the parts' modules
        and (docstring := module_docstring(source))
        and len(docstring.splitlines()) > LIMIT
    ]
    assert not long, (
        f"module docstrings over {LIMIT} lines: say what each guarantees and the one why; "
        f"more rationale goes to a docs/design/ note: {long}"
    )


def test_every_design_note_a_module_cites_exists() -> None:
    missing = [
        f"{name}: {note}"
        for name, source in _sources()
        for note in NOTE.findall(source)
        if not (ROOT / note).is_file()
    ]
    assert not missing, f"design notes cited but not there: {missing}"


def history(docstring: str) -> list[str]:
    """The kinds of :data:`HISTORY` a docstring shows, each with the words found."""
    return [
        f"{kind}: {match[0]!r}"
        for kind, rule in HISTORY.items()
        for match in rule.finditer(docstring)
    ]


def test_the_history_rule_tells_a_history_from_a_fact() -> None:
    narrated = [
        "A promise used to be a string keyed into three tables.",
        "The tables were written twice. Now the enum is the key.",
        "The JSON is byte for byte what it was before the simulator was split into modules.",
        "They once parsed its prose; previously a table.",
        "Every axis of issue 23.",
        "Added in #12, on 2026-12-01.",
    ]
    facts = [
        "The value is used to key the table; they are used to count.",
        "The only state one token past every lookup (vLLM #50409).",
        "As merged in PR #47782; pre-#47782: the first only.",
        "Off, the policy is what it was without them; now and then a block was evicted.",
        "Once the pool is full, the oldest block goes; tokens 0..2026 are kept.",
        "The call of a binding (an engine binds it once).",
    ]
    assert all(history(text) for text in narrated), [t for t in narrated if not history(t)]
    assert not [found for text in facts for found in history(text)]


def _docstrings(tree: ast.Module) -> list[tuple[str, str]]:
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, _DOCUMENTED))]
    found = [(getattr(node, "name", "module"), ast.get_docstring(node)) for node in nodes]
    return [(name, text) for name, text in found if text]


_DOCUMENTED = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
# Every docstring is triple-quoted: a module none of whose triple-quoted strings
# narrates is passed without a parse.
_TRIPLE_QUOTED = re.compile(r'"""(.*?)"""|\'\'\'(.*?)\'\'\'', re.DOTALL)


def test_no_docstring_narrates_history() -> None:
    narrated = [
        f"{module} ({name}): {found}"
        for module, source in _sources()
        if history("\n".join(a or b for a, b in _TRIPLE_QUOTED.findall(source)))
        for name, text in _docstrings(ast.parse(source))
        for found in history(text)
    ]
    assert not narrated, (
        "docstrings that narrate history (say what the code is and why; git holds what "
        f"it was): {narrated}"
    )
