"""The built-in policies' core bindings, bound once per setting and reused.

A policy is asked on every chunk, so a fresh :class:`core.GroupMask` or
:class:`core.ChunkSplitter` per call would rebuild the same validation and
plan each time. Bindings are cached by value (all their fields frozen and
hashable), so every policy and engine with one setting shares one; a cache
keyed by value, not per policy instance, needs no ``__init__`` of every
subclass and holds no object alive. :func:`boundaries` memoizes
``core.reachable_boundaries`` by its typed arguments (``True`` is not served
``1``'s answer; an exception is not cached).
"""

from __future__ import annotations

import functools

from junction.core import (
    ChunkSplitter,
    GroupMask,
    GroupSpec,
    OffGridInterval,
    PrefillCheckpoints,
    reachable_boundaries,
)

__all__ = ["boundaries", "chunk_splitter", "group_mask"]


@functools.lru_cache(maxsize=1024)
def group_mask(
    alignment_tokens: int,
    spec: GroupSpec,
    use_eagle: bool,
    retention_interval: int | None,
    off_grid_interval: OffGridInterval = OffGridInterval.SEGMENT_ENDS,
) -> GroupMask:
    """The group's binding (``core.InvalidArgument`` for a setting the core rejects)."""
    return GroupMask(alignment_tokens, spec, use_eagle, retention_interval, off_grid_interval)


@functools.lru_cache(maxsize=1024, typed=True)
def chunk_splitter(
    block_size: int,
    hash_block_size: int,
    use_eagle: bool,
    partial_hits: bool,
    max_prefill_tokens: int | None,
    hash_lookahead_tokens: int = 0,
    exact_junction_stop: bool = False,
    prefill_checkpoints: PrefillCheckpoints | None = None,
) -> ChunkSplitter:
    """The engine's split binding (``core.InvalidArgument`` for a setting the core rejects)."""
    return ChunkSplitter(
        block_size,
        hash_block_size,
        use_eagle,
        partial_hits,
        max_prefill_tokens,
        hash_lookahead_tokens,
        exact_junction_stop,
        prefill_checkpoints,
    )


@functools.lru_cache(maxsize=4096, typed=True)
def boundaries(
    num_prompt_tokens: int,
    shared_prefix_boundary: int,
    eagle_drop_tokens: int,
    whole_block_sizes: tuple[int, ...],
    hit_grid_tokens: int,
    declared_checkpoints: tuple[int, ...] = (),
) -> tuple[int, ...]:
    """``core.reachable_boundaries`` of these values, computed once per distinct request."""
    return reachable_boundaries(
        num_prompt_tokens,
        shared_prefix_boundary,
        eagle_drop_tokens,
        whole_block_sizes,
        hit_grid_tokens=hit_grid_tokens,
        declared_checkpoints=declared_checkpoints,
    )
