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
for (docs/domain.md, vLLM section). Each raises :class:`UnsupportedOption`
on the calls where it acts, and only there (elsewhere vLLM's answer is the
one without it, which the core gives):

* hash lookahead tokens: vLLM leaves ``max(1, k)`` tokens past its last
  cacheable positions, so ``k = 1`` is the core's one recomputed token and
  only ``k > 1`` acts;
* the opt-in exact shared-prefix stop (``enable_mamba_shared_prefix_checkpoint``):
  acts when the junction lies inside the proposed chunk, within the prompt,
  off the Mamba grid counted from the chunk's start (on it, the exact stop is
  the floored one);
* internal prefill checkpoint blocks: act when the chunk reaches the end of
  the prefill and the backend can export the prompt's checkpoint inside it,
  which vLLM's backend-capability predicate
  ``is_mamba_prefill_checkpoint_valid`` says (at the checkpoint position, the
  core's last cacheable position of the prefill). The adapter asks it only
  whether to refuse; the answer never comes from vLLM.
"""

from __future__ import annotations

import functools
from typing import Any

from junction.core import ChunkSplitter, last_cacheable_position

from ..vllm_env import vllm
from .errors import Decision, UnsupportedOption

__all__ = ["core_split"]


def core_split(
    self: Any,
    request: Any,
    num_new_tokens: int,
    num_new_local_computed_tokens: int = 0,
    num_external_computed_tokens: int = 0,
) -> int:
    """Drop-in for ``Scheduler._mamba_block_aligned_split``: its signature, names
    included (vLLM's tests pass ``self=`` by keyword)."""
    scheduler = self
    start = (
        request.num_computed_tokens + num_new_local_computed_tokens + num_external_computed_tokens
    )
    _refuse_options(scheduler, request, start, num_new_tokens)
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


def _refuse_options(scheduler: Any, request: Any, start: int, num_new_tokens: int) -> None:
    """Raise :class:`UnsupportedOption` when an option the core lacks acts on this call."""
    lookahead = scheduler.num_hash_lookahead_tokens
    if lookahead > 1:
        raise UnsupportedOption(Decision.SPLIT, "num_hash_lookahead_tokens", lookahead)
    prompt, end = request.num_prompt_tokens, start + num_new_tokens
    prefill_end = max(prompt, request.num_tokens - 1)
    if start >= prefill_end:
        return  # decode: vLLM's split returns the tokens unchanged, options or not
    block_size = scheduler.cache_config.block_size
    junction = request.shared_prefix_boundary
    if (
        scheduler.mamba_shared_prefix_checkpoint
        and start < junction < end
        and junction <= prompt
        and (junction - start) % block_size
    ):
        raise UnsupportedOption(Decision.SPLIT, "enable_mamba_shared_prefix_checkpoint", True)
    # Read in vLLM's order: its stand-ins carry the alignment only with the blocks.
    if not (scheduler.mamba_has_prefill_checkpoint_blocks and end >= prefill_end):
        return
    alignment = scheduler.mamba_prefill_checkpoint_alignment
    if alignment is not None:
        unit = (
            scheduler.hash_block_size if scheduler.mamba_partial_cache_hit else scheduler.block_size
        )
        checkpoint = last_cacheable_position(
            prefill_end, unit, bool(scheduler.use_eagle_block_drop)
        )
        if vllm().interface.is_mamba_prefill_checkpoint_valid(
            query_start=start,
            query_end=end,
            checkpoint_position=checkpoint,
            hash_block_size=scheduler.hash_block_size,
            mamba_block_size=block_size,
            checkpoint_alignment=alignment,
        ):
            raise UnsupportedOption(Decision.SPLIT, "mamba_has_prefill_checkpoint_blocks", True)
