"""The chunk split adapter: ``Scheduler._mamba_block_aligned_split`` onto the core.

It reads the same scheduler attributes vLLM's method reads, maps them onto
:func:`junction.core.mamba_block_aligned_split`'s inputs and returns its
answer. vLLM's ``cache_config.block_size`` is the Mamba block ``b`` (align
mode sets it); ``hash_block_size`` is the unit of the prompt's partial tail,
which vLLM stops at only with ``mamba_partial_cache_hit``; the long-prefill
cap is ``min(max_num_scheduled_tokens, long_prefill_token_threshold)`` when
the threshold is set, as vLLM computes it. Those are fixed per engine, so
they bind a :class:`junction.core.ChunkSplitter` once per distinct setting
(validated there, cached here); a call checks only the request's counts.

Three scheduler settings change vLLM's answer in ways the core has no input
for (docs/domain.md, vLLM section): internal prefill checkpoint blocks (on
when the Mamba groups reserve them *and* the backend can export one, i.e.
``mamba_prefill_checkpoint_alignment`` is set: without it vLLM never uses
them), hash lookahead tokens and the opt-in exact shared-prefix stop. Any of
them on raises :class:`UnsupportedOption`, whatever the request: whether it
would have changed this particular answer is vLLM's logic, which the adapter
does not run.
"""

from __future__ import annotations

import functools
from typing import Any

from junction.core import ChunkSplitter

from .errors import Decision, UnsupportedOption

__all__ = ["core_split"]


def core_split(
    scheduler: Any,
    request: Any,
    num_new_tokens: int,
    num_new_local_computed_tokens: int = 0,
    num_external_computed_tokens: int = 0,
) -> int:
    """Drop-in for ``Scheduler._mamba_block_aligned_split`` (same signature)."""
    _refuse_options(scheduler)
    max_prefill_tokens = scheduler.max_num_scheduled_tokens
    threshold = scheduler.scheduler_config.long_prefill_token_threshold
    if threshold > 0:
        max_prefill_tokens = min(max_prefill_tokens, threshold)
    partial_hits = bool(scheduler.mamba_partial_cache_hit)
    block_size = scheduler.cache_config.block_size
    splitter = _splitter(
        block_size,
        scheduler.hash_block_size if partial_hits else block_size,
        bool(scheduler.use_eagle_block_drop),
        partial_hits,
        max_prefill_tokens,
    )
    return splitter.split(
        num_computed_tokens=request.num_computed_tokens,
        num_new_tokens=num_new_tokens,
        num_prompt_tokens=request.num_prompt_tokens,
        num_tokens=request.num_tokens,
        shared_prefix_boundary=request.shared_prefix_boundary,
        num_new_local_computed_tokens=num_new_local_computed_tokens,
        num_external_computed_tokens=num_external_computed_tokens,
    )


# An engine has one setting; the cache holds the few a test process makes.
_splitter = functools.lru_cache(maxsize=64)(ChunkSplitter)


def _refuse_options(scheduler: Any) -> None:
    if (
        scheduler.mamba_has_prefill_checkpoint_blocks
        and scheduler.mamba_prefill_checkpoint_alignment is not None
    ):
        raise UnsupportedOption(
            Decision.SPLIT,
            "mamba_has_prefill_checkpoint_blocks",
            scheduler.mamba_has_prefill_checkpoint_blocks,
        )
    if scheduler.num_hash_lookahead_tokens:
        raise UnsupportedOption(
            Decision.SPLIT, "num_hash_lookahead_tokens", scheduler.num_hash_lookahead_tokens
        )
    if scheduler.mamba_shared_prefix_checkpoint:
        raise UnsupportedOption(
            Decision.SPLIT,
            "enable_mamba_shared_prefix_checkpoint",
            scheduler.mamba_shared_prefix_checkpoint,
        )
