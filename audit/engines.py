"""The audited engines: one row each, read by every command and test that concerns them.

``junction audit findings`` writes each row's docs/findings.md
section and ``engines`` lists the rows; the tests' ``--require-NAME``
options and their skip rule (``tests/audit/installed.py``) read them too.
Adding an engine is its subpackage, whose ``__init__`` defines its
:class:`~.record.AuditedEngine`, and one row here (docs/architecture.md,
"Walk-through: adding an audited engine").
"""

from __future__ import annotations

from . import sglang, vllm
from .record import AuditedEngine

__all__ = ["ENGINES", "engine_names"]

ENGINES: tuple[AuditedEngine, ...] = (vllm.ENGINE, sglang.ENGINE)


def engine_names() -> tuple[str, ...]:
    """The rows' names, in order (vLLM first: SGLang's audit compares with it)."""
    return tuple(e.name for e in ENGINES)
