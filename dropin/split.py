"""The chunk split adapter: ``Scheduler._mamba_block_aligned_split`` onto the core.

It reads the scheduler attributes vLLM's method reads and maps them onto
:func:`junction.core.mamba_block_aligned_split`'s inputs: the Mamba block,
the hash unit of a partial tail, the long-prefill cap as vLLM computes it,
and the three split options (hash lookahead, the exact junction stop,
internal prefill checkpoints on vLLM's grid). Those are fixed per engine, so
they bind a :class:`junction.core.ChunkSplitter` once per setting; a call
checks only the request's counts. No setting is refused
(docs/design/dropin-translations.md).
"""

from __future__ import annotations

import functools
from typing import Any

from junction.core import ChunkSplitter, PrefillCheckpoints, prefill_end

__all__ = ["core_split"]


_NONE = 0  # the default of both computed counts, as in vLLM's signature


def core_split(
    self: Any,
    request: Any,
    num_new_tokens: int,
    num_new_local_computed_tokens: int = _NONE,
    num_external_computed_tokens: int = _NONE,
) -> int:
    """Drop-in for ``Scheduler._mamba_block_aligned_split``: its signature, names
    included (vLLM's tests pass ``self=`` by keyword)."""
    scheduler = self
    computed = request.num_computed_tokens
    boundary = request.shared_prefix_boundary
    num_tokens = request.num_tokens
    # A decoding request's chunk is never split (core.prefill_end): most calls
    # of a running engine, answered before the engine's settings are read.
    # The answer stands only where the splitter would accept every argument
    # (each an int, not a bool, none negative, the start within the request);
    # anything else goes to the splitter, which names the argument and raises.
    # A running request's call leaves both computed counts at their default,
    # the int 0 itself: nothing else is that object, so it needs no other check.
    if (
        num_new_local_computed_tokens is _NONE
        and num_external_computed_tokens is _NONE
        and type(computed) is int
        and type(num_new_tokens) is int
        and type(boundary) is int
        and computed >= 0
        and num_new_tokens >= 0
        and boundary >= 0
        and prefill_end(request.num_prompt_tokens, num_tokens) <= computed <= num_tokens
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
        shared_prefix_boundary=boundary,
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
