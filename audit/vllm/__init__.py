"""vLLM 0.33.0's own code as a subject of the promise harness, and the drop-in's proving ground.

:mod:`.env` loads vLLM on a CPU-only machine (or says why it cannot),
:mod:`.engine` drives a real ``KVCacheManager`` the way vLLM's scheduler
feeds it, :mod:`.subject` adapts it to ``junction.reference.harness.subject``,
:mod:`.findings` holds what the audit found (with :mod:`.diagnosis`, and the
option findings of :mod:`.mask_findings` and :mod:`.split_findings`);
:mod:`.scheduler_differential` runs vLLM's real scheduler against the
drop-in and :mod:`.suite` vLLM's own tests with the core swapped in.
"""

from __future__ import annotations

from junction.upstream.vllm_0_33.env import PIN

from ..record import AuditedEngine

__all__ = ["ENGINE"]


def _findings() -> str:
    from .findings import findings_markdown  # runs vLLM: imported only when asked

    return findings_markdown()


ENGINE = AuditedEngine(
    name="vllm",
    pin=PIN,
    tests="tests/audit/",  # the drop-in's tests and SGLang's (whose imports reach vLLM's) too
    findings=_findings,
    policies=("vllm-0.33", "vllm-pr47782"),
)
