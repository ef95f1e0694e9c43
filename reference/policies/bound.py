"""The built-in policies' core bindings, bound once per setting and reused.

``core.reachable_block_mask`` and ``core.mamba_block_aligned_split`` are a
fresh :class:`core.GroupMask` or :class:`core.ChunkSplitter` per call: right
for a one-off call, wasteful in a policy asked on every chunk, where the
binding's validation and its derived plan (and, for a periodic plan, its
pre-tiled runs of 8,192 blocks) would be rebuilt each time for the same
group. Bindings are cached by value (alignment, group, EAGLE, ``R``; the
splitter's block, hash unit, flags and budget; all frozen and hashable), so
every policy instance and every engine with the same setting shares one.

A request's reachable boundaries are a pure function of its prompt length,
its junction and three numbers of the geometry, and a policy hands them to
every mask of every group of the request's chunks, and its split stops at
them on every chunk (``core.promised_stop``): :func:`boundaries`
memoizes ``core.reachable_boundaries`` by those values, typed (so a ``True``
is not served the answer for ``1``: it reaches the core, which rejects it;
an exception is not cached, so a bad argument raises at every call).

Rejected: a cache per policy instance keyed by the geometry's identity (a
policy would need an ``__init__`` that every subclass must call, and
identity keys must hold their objects alive to stay unique).
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
