"""The reference side's errors are one family: every class derives from ``JunctionError``.

Read from the source (importing every audit module would need vLLM and
SGLang): each exception class the reference side and the audits define
derives from ``JunctionError`` or from one that does. The exceptions listed
in ``OUTSIDE`` are not errors a caller catches (the harness's control flow)
or belong to another piece of work (see each reason).
"""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

from junction.reference.errors import InvalidValue, JunctionError, PoolExhausted

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = {
    "Exception",
    "BaseException",
    "ValueError",
    "RuntimeError",
    "AssertionError",
    "ConnectionError",
    "NotImplementedError",
    "TypeError",
    "KeyError",
}
OUTSIDE = {
    "_Found": "the harness's signal to Hypothesis, caught inside the runner",
    "_OutOfTime": "the harness's deadline, a BaseException by design",
    "UnsupportedOption": "the drop-in's: it reads only core and the audit's vLLM readers",
}


def exception_classes() -> dict[str, list[str]]:
    """Every class of reference/ and audit/ deriving from an exception: name -> its bases."""
    found: dict[str, list[str]] = {}
    for folder in ("reference", "audit", "dropin"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef):
                    found[node.name] = [ast.unparse(base).split(".")[-1] for base in node.bases]
    exceptions: dict[str, list[str]] = {}
    changed = True
    while changed:  # classes deriving from a builtin exception or from one of these
        changed = False
        for name, bases in found.items():
            if name not in exceptions and any(b in BUILTIN or b in exceptions for b in bases):
                exceptions[name] = bases
                changed = True
    return exceptions


def in_family(name: str, classes: dict[str, list[str]]) -> bool:
    bases = classes[name]
    return "JunctionError" in bases or any(b in classes and in_family(b, classes) for b in bases)


def test_every_reference_and_audit_error_is_a_junction_error() -> None:
    classes = exception_classes()
    assert {"TraceError", "PolicyError", "OutputError", "PoolExhausted"} <= set(classes)
    strays = [n for n in classes if n not in OUTSIDE and n != "JunctionError"]
    assert [n for n in strays if not in_family(n, classes)] == []


def test_one_class_per_meaning_no_name_defined_twice() -> None:
    names = []
    for folder in ("reference", "audit", "dropin"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names += [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    errors = set(exception_classes())
    twice = sorted({n for n in names if n in errors and names.count(n) > 1})
    assert twice == []


def test_the_cores_shape_argument_value_rule() -> None:
    error = InvalidValue("num_blocks", 1, "a pool needs the null block and one more")
    assert str(error) == "num_blocks=1: a pool needs the null block and one more"
    assert (error.argument, error.value, error.rule) == ("num_blocks", 1, error.rule)
    assert isinstance(error, ValueError) and isinstance(error, JunctionError)
    message_only = PoolExhausted("vLLM's pool cannot fit a 9-token prompt")
    assert (message_only.argument, message_only.value) == (None, None)
    assert message_only.rule == str(message_only) and isinstance(message_only, RuntimeError)
    assert str(pickle.loads(pickle.dumps(error))) == str(error)


def test_a_validator_raises_the_family() -> None:
    from junction.reference.engine.block_pool import BlockPool

    with pytest.raises(InvalidValue, match=r"^num_blocks=1: a pool needs") as info:
        BlockPool(1)
    assert info.value.argument == "num_blocks"
