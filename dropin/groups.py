"""vLLM's KV-cache specs as core groups, for the mask and lookup adapters.

Only the three group kinds the core models translate, and the manager class
decides, not the spec: subclasses of vLLM's managers (chunked-local,
circular-buffer, sink attention) decide differently, so any other manager is
an option the core cannot express. HiSparse's host-tier manager is full
attention for the decisions (it inherits the lookup unchanged; only where its
blocks live differs). Translations are cached: the same few frozen specs are
asked about on every step (docs/design/dropin-translations.md).
"""

from __future__ import annotations

import functools
from typing import Any

from junction.core import GroupSpec

from ..audit.vllm.env import vllm
from .errors import Decision, UnsupportedOption

__all__ = ["core_group"]


@functools.cache
def core_group(decision: Decision, manager_cls: type, spec: Any, block_size: int) -> GroupSpec:
    """The core group of a vLLM group whose blocks hold ``block_size`` tokens, or
    :class:`UnsupportedOption` naming its manager.

    ``block_size`` is the group's effective block, which the caller states:
    decode-context parallelism shards an attention block's KV across ranks,
    so each rank's block covers ``dcp_world_size`` times the spec's tokens
    (vLLM's managers use that block for hashing, lookup and masks), while
    Mamba state is replicated and keeps the spec's block.
    """
    managers = vllm().managers
    if manager_cls in (managers.FullAttentionManager, managers.HiSparseSourceManager):
        return GroupSpec.full(block_size)
    if manager_cls is managers.SlidingWindowManager:
        return GroupSpec.sliding_window(block_size, spec.sliding_window)
    if manager_cls is managers.MambaManager:
        return GroupSpec.mamba(block_size)
    raise UnsupportedOption(decision, "kv_cache_manager", manager_cls.__name__)
