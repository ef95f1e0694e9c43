"""vLLM's KV-cache specs as core groups, for the mask and lookup adapters.

Only the three group kinds the core models translate: a ``FullAttentionSpec``
group run by ``FullAttentionManager``, a ``SlidingWindowSpec`` group run by
``SlidingWindowManager`` and a ``MambaSpec`` group run by ``MambaManager``.
The manager class, not the spec class, decides: vLLM picks managers by spec
(``spec_manager_map``) and subclasses of these managers (chunked-local,
circular-buffer, sink attention) decide differently, so any other manager is
an option the core cannot express. Translations are cached: a spec is a
frozen dataclass, and the same few specs are asked about on every engine
step.

One subclass is full attention for the decisions: HiSparse's
``HiSparseSourceManager`` (the host tier of a HiSparse model's cache; its
tests are 17 of the suite's). It inherits ``FullAttentionManager``'s lookup
unchanged (it overrides neither ``find_longest_cache_hit`` nor
``supports_fine_grained_hash_lookup``, and has no mask of its own); what it
changes is where its blocks live (a private host pool, which the lookup
adapter reads per group) and that the coordinator hands back its blocks up
to its own hit instead of the reconciled one (``retains_longer_hit``),
which is reading the pool for a length the core computed, not a decision
(:mod:`.lookup`). HiSparse's other managers (hot, resident) hold groups that
opt out of prefix caching, which take no part in the lookup.
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
