"""The upstream engines as Junction knows them: one package per vLLM release, and the pins.

Everything that knows a release of vLLM (loading it, translating its specs,
reading its pools, its lookup and its departures from first principles) is
in that release's package here (``vllm_0_33``), which the drop-in and the
audit both build on; the drop-in picks the package of the installed vLLM
(:func:`vllm_release`). This layer imports only ``junction.core`` (and vLLM,
on first use), never the reference side, the audit or the drop-in
(docs/design/upstream-layer.md).
"""

from __future__ import annotations

from .pins import EngineMissing, Pin, public_version
from .releases import VLLM_RELEASES, VllmMissing, VllmRelease, vllm_release

__all__ = [
    "VLLM_RELEASES",
    "EngineMissing",
    "Pin",
    "VllmMissing",
    "VllmRelease",
    "public_version",
    "vllm_release",
]
