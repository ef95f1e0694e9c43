"""SGLang 0.5.23's unified radix cache as a third subject of the promise harness.

:mod:`.env` loads SGLang on a CPU-only machine (or says why it cannot),
:mod:`.cache` drives a real ``UnifiedRadixCache`` the way SGLang's scheduler
feeds it, :mod:`.subject` adapts it to ``junction.reference.harness.subject``
and :mod:`.findings` holds what the audit found. Nothing here is imported by
``audit``'s vLLM side: each engine loads only when its audit runs.
"""

from __future__ import annotations

from ..record import AuditedEngine
from .env import PIN

__all__ = ["ENGINE"]


def _findings() -> str:
    from .findings import findings_markdown  # runs SGLang and vLLM: imported only when asked

    return findings_markdown()


ENGINE = AuditedEngine(name="sglang", pin=PIN, tests="tests/audit/sglang/", findings=_findings)
