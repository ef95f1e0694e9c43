"""What each group of a real vLLM block pool has cached, as core's finders see it.

To compare vLLM's ``find_longest_cache_hit`` with ``core.reconcile_hits``
both must read the same cache, so this turns vLLM's block pool and one
request's hash chain into core finders (and the oracle's cached sets).
Block ``i`` of group ``g`` is cached iff the pool holds unit hash
``(i + 1) * s - 1`` for ``g`` (vLLM keys a block by its last hash unit).
With partial hits full attention matches whole blocks, then the deepest
registered unit of the first block it misses; Mamba serves any registered
unit; sliding windows always read whole blocks, as in vLLM.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from junction.core import (
    Finder,
    GroupKind,
    GroupLookup,
    GroupSpec,
    HitReconciliation,
    HybridGeometry,
    group_finder,
    next_grid_point,
    reconcile_hits,
)
from junction.reference.oracle.first_principles import OracleGroup, oracle_reconcile

__all__ = [
    "GroupReader",
    "GroupView",
    "core_reconcile",
    "group_readers",
    "oracle_groups",
    "oracle_reconcile_view",
    "pool_finders",
    "pool_views",
    "reader_finders",
]


@attrs.frozen
class GroupView:
    """One group's cache as a finder sees it: ``spec`` (a unit-sized spec when
    the group looks up hash units), the cached indices of the request's chain
    in units of ``spec.block_size``, and the raw pool state: the hash units of
    the chain registered for the group."""

    group: GroupSpec
    spec: GroupSpec
    cached: frozenset[int]
    registered: frozenset[int]


@attrs.frozen
class GroupReader:
    """How one group's finder reads a vLLM pool, fixed per engine.

    ``spec`` is the finder's spec (unit-sized when the group looks up hash
    units) and ``lookup`` its bound :class:`core.GroupLookup`; finder index
    ``i`` is the chain's hash unit ``(i + 1) * scale - 1``, except for a
    full-attention group read by unit, where ``covered_block`` (its block in
    hash units, else 0) selects the covered-unit reading.
    """

    group_id: int
    spec: GroupSpec
    lookup: GroupLookup
    scale: int
    covered_block: int

    def predicate(
        self, block_pool: Any, block_hashes: Sequence[Any], found: dict[int, Any] | None = None
    ) -> tuple[Callable[[int], bool], int]:
        """``is_cached`` over one request's chain, and how many indices exist.

        One pool call per question and no intermediate frames: this is the
        lookup's hot loop (vLLM's coordinator calls the pool directly). Each
        answer the pool gives is kept in ``found`` under its hash unit, so a
        caller that then collects the blocks need not ask again."""
        get, ids, units = block_pool.get_cached_block, [self.group_id], len(block_hashes)
        seen: dict[int, Any] = {} if found is None else found
        if self.covered_block:
            block_units = self.covered_block

            def covered(index: int) -> bool:
                for unit in range(index, min(next_grid_point(index, block_units), units)):
                    seen[unit] = answer = get(block_hashes[unit], ids)
                    if answer is not None:
                        return True
                return False

            return covered, units
        scale, count = self.scale, units // self.scale
        if scale == 1:  # a block is a hash unit: no index arithmetic per question

            def unit_cached(index: int) -> bool:
                if index >= count:
                    return False
                seen[index] = answer = get(block_hashes[index], ids)
                return answer is not None

            return unit_cached, count

        def cached(index: int) -> bool:
            # A lookup of M = N - 1 tokens may ask past the hashed chain.
            if index >= count:
                return False
            unit = (index + 1) * scale - 1
            seen[unit] = answer = get(block_hashes[unit], ids)
            return answer is not None

        return cached, count


def group_readers(geometry: HybridGeometry) -> tuple[GroupReader, ...]:
    """Every group's :class:`GroupReader` (an engine builds them once)."""
    unit, alignment = geometry.hash_block_size, geometry.alignment_tokens
    readers = []
    for group_id, group in enumerate(geometry.groups):
        spec, scale, covered_block = group, group.block_size // unit, 0
        drafts = group.eagle_group  # a unit-sized spec stays an EAGLE group or not
        if alignment < group.block_size and group.kind is GroupKind.FULL:
            spec, scale, covered_block = GroupSpec.full(unit, eagle_group=drafts), 1, scale
        elif alignment < group.block_size and group.kind is GroupKind.MAMBA:
            spec, scale = GroupSpec.mamba(unit, eagle_group=drafts), 1
        elif alignment < group.block_size:
            raise ValueError(f"{group}: vLLM gives sliding-window groups no hash-unit hits")
        readers.append(
            GroupReader(group_id, spec, GroupLookup(spec, alignment), scale, covered_block)
        )
    return tuple(readers)


def reader_finders(
    readers: Sequence[GroupReader], block_pool: Any, block_hashes: Sequence[Any]
) -> list[Finder]:
    """Core finders reading vLLM's pool on demand, from readers built once."""
    return [
        reader.lookup.finder(reader.predicate(block_pool, block_hashes)[0]) for reader in readers
    ]


def pool_finders(
    geometry: HybridGeometry, block_pool: Any, block_hashes: Sequence[Any]
) -> list[Finder]:
    """Core finders reading vLLM's pool on demand (:func:`reader_finders` of
    freshly built readers)."""
    return reader_finders(group_readers(geometry), block_pool, block_hashes)


def pool_views(
    geometry: HybridGeometry, block_pool: Any, block_hashes: Sequence[Any]
) -> list[GroupView]:
    """Every group's cached indices of the chain, read once from vLLM's pool."""
    views = []
    for reader in group_readers(geometry):
        is_cached, count = reader.predicate(block_pool, block_hashes)
        cached = frozenset(index for index in range(count) if is_cached(index))
        registered = frozenset(
            index
            for index, block_hash in enumerate(block_hashes)
            if block_pool.get_cached_block(block_hash, [reader.group_id]) is not None
        )
        views.append(GroupView(geometry.groups[reader.group_id], reader.spec, cached, registered))
    return views


def core_reconcile(
    geometry: HybridGeometry, views: Sequence[GroupView], max_hit_length: int, hashed_tokens: int
) -> HitReconciliation:
    """``core.reconcile_hits`` over the views (EAGLE lookups bounded by the hashed tokens)."""
    finders = [
        group_finder(
            view.spec, view.cached.__contains__, alignment_tokens=geometry.alignment_tokens
        )
        for view in views
    ]
    return reconcile_hits(geometry, finders, max_hit_length, hashed_tokens)


def oracle_groups(views: Sequence[GroupView]) -> list[OracleGroup]:
    """The views as the oracle's groups: each one's kind, sizes, cached set and EAGLE flag."""
    return [
        OracleGroup(
            view.spec.kind.value,
            view.spec.block_size,
            view.spec.window,
            view.cached,
            view.spec.eagle_group,
        )
        for view in views
    ]


def oracle_reconcile_view(
    geometry: HybridGeometry, views: Sequence[GroupView], max_hit_length: int, hashed_tokens: int
) -> tuple[int, int, int]:
    """The first-principles ``(h, ℓ, J)`` over the views (``reference.oracle``)."""
    groups = oracle_groups(views)
    return oracle_reconcile(
        groups, geometry.alignment_tokens, geometry.use_eagle, max_hit_length, hashed_tokens
    )
