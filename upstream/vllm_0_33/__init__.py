"""vLLM 0.33.0: loading it (:mod:`.env`), its specs and core's groups each way
(:mod:`.specs`), reading its block pools (:mod:`.readers`), its lookup
restated with its four departures (:mod:`.lookup_model`) and its scheduler's
replayed boundaries and split settings (:mod:`.scheduler`).

The module's names below are the release's :class:`~junction.upstream.VllmRelease`
(what the drop-in reads); the audit reads the submodules too. Nothing here
imports vLLM until :func:`vllm` is called.
"""

from __future__ import annotations

from .env import PIN, PINNED_VERSION, VllmModules, vllm, vllm_missing_reason
from .lookup_model import VllmLookup, vllm_lookup
from .readers import GroupReader, group_readers
from .specs import core_group

__all__ = [
    "PIN",
    "PINNED_VERSION",
    "GroupReader",
    "VllmLookup",
    "VllmModules",
    "core_group",
    "group_readers",
    "vllm",
    "vllm_lookup",
    "vllm_missing_reason",
]
