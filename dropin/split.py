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

The scheduler's three split options are the core's engine options
(docs/domain.md, decision 2), bound with the rest:

* ``num_hash_lookahead_tokens`` is ``hash_lookahead_tokens`` (vLLM's
  scheduler turns its EAGLE block drop off when it is set, and hands the
  drop flag it kept);
* ``mamba_shared_prefix_checkpoint`` (``enable_mamba_shared_prefix_checkpoint``
  narrowed by the manager) is ``exact_junction_stop``;
* ``mamba_has_prefill_checkpoint_blocks`` with the first Mamba group's
  ``prefill_checkpoint_alignment`` is a :class:`junction.core.PrefillCheckpoints`
  on the grid vLLM places the checkpoint on: the hash unit with
  ``mamba_partial_cache_hit``, else the scheduler block, keyed on the
  prefill's end as vLLM's scheduler keys it (``keyed_on_prefill_end``, the
  compatibility form; docs/domain.md, decision 2). The alignment is
  read only with the blocks on, as vLLM reads it (its own split tests call
  the split on stand-ins that carry it only then); with no alignment the
  backend writes no checkpoint, so none is bound. The hash unit is then
  vLLM's own (the backend's checkpoint rule reads it) rather than the block.

No setting is refused: the core answers every call itself.
"""

from __future__ import annotations

import functools
from typing import Any

from junction.core import ChunkSplitter, PrefillCheckpoints, prefill_end

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
    computed = request.num_computed_tokens
    start = computed + num_new_local_computed_tokens + num_external_computed_tokens
    num_tokens = request.num_tokens
    # A decoding request's chunk is never split (core.prefill_end): most calls
    # of a running engine, answered before the engine's settings are read.
    # Anything unusual (a count that is no int, negative, past the request)
    # goes to the splitter, which checks every count and raises.
    if (
        type(start) is int
        and type(num_new_tokens) is int
        and num_new_tokens >= 0
        and computed >= 0
        and num_new_local_computed_tokens >= 0
        and num_external_computed_tokens >= 0
        and prefill_end(request.num_prompt_tokens, num_tokens) <= start <= num_tokens
    ):
        return num_new_tokens
    max_prefill_tokens = scheduler.max_num_scheduled_tokens
    threshold = scheduler.scheduler_config.long_prefill_token_threshold
    if threshold > 0:
        max_prefill_tokens = min(max_prefill_tokens, threshold)
    partial_hits = bool(scheduler.mamba_partial_cache_hit)
    block_size = scheduler.cache_config.block_size
    checkpoints = _checkpoints(scheduler, partial_hits)
    splitter = _splitter(
        block_size,
        scheduler.hash_block_size if partial_hits or checkpoints else block_size,
        bool(scheduler.use_eagle_block_drop),
        partial_hits,
        max_prefill_tokens,
        scheduler.num_hash_lookahead_tokens,
        bool(scheduler.mamba_shared_prefix_checkpoint),
        checkpoints,
    )
    return splitter.split(
        num_computed_tokens=request.num_computed_tokens,
        num_new_tokens=num_new_tokens,
        num_prompt_tokens=request.num_prompt_tokens,
        num_tokens=num_tokens,
        shared_prefix_boundary=request.shared_prefix_boundary,
        num_new_local_computed_tokens=num_new_local_computed_tokens,
        num_external_computed_tokens=num_external_computed_tokens,
    )


# An engine has one setting; the cache holds the few a test process makes.
_splitter = functools.lru_cache(maxsize=64)(ChunkSplitter)


def _checkpoints(scheduler: Any, partial_hits: bool) -> PrefillCheckpoints | None:
    """The backend's internal checkpoints, or ``None`` where it writes none."""
    if not scheduler.mamba_has_prefill_checkpoint_blocks:
        return None
    alignment = scheduler.mamba_prefill_checkpoint_alignment
    if alignment is None:
        return None
    unit = scheduler.hash_block_size if partial_hits else scheduler.block_size
    # vLLM's scheduler keys the checkpoint on the prefill's end (its backend on the chunk's).
    return _prefill_checkpoints(alignment, unit, True)


_prefill_checkpoints = functools.lru_cache(maxsize=64)(PrefillCheckpoints)
