"""What each group of a real vLLM block pool has cached, as core's finders see it.

Lookup is not a policy decision: ``core.reconcile_hits`` is exact by first
principles. To compare vLLM's ``HybridKVCacheCoordinator.find_longest_cache_hit``
with it, both must read the *same* cache, so this module turns vLLM's block
pool plus one request's block-hash chain into core finders (and into the
oracle's cached sets, for promise 6 of docs/domain.md).

vLLM keys a block of ``B = s * H`` tokens by the hash of its last hash unit
(``BlockHashListWithBlockSize``), so group ``g`` has block ``i`` cached iff
the pool holds unit hash ``(i + 1) * s - 1`` for ``g``. With partial hits
(``A = H`` finer than a block) two groups look up hash units instead:

* full attention matches whole blocks from block 0, then the deepest
  registered hash unit inside the first block it misses (the prompt's partial
  tail, ``_cache_partial_tail_block``). As a unit finder: unit ``u`` is
  covered iff some unit from ``u`` to the end of its block is registered
  (KV is append-only, so a tail registered at ``k`` covers every unit up to
  ``k``);
* Mamba serves a state at any hash unit registered for it.

Sliding-window groups never get partial hits in vLLM (their manager cannot
look up hash units, and a configuration where one is wider than ``H``
disables partial hits), so they always read whole blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from junction.core import (
    Finder,
    GroupKind,
    GroupSpec,
    HitReconciliation,
    HybridGeometry,
    group_finder,
    next_grid_point,
    reconcile_hits,
)
from junction.reference.oracle.first_principles import OracleGroup, oracle_reconcile

__all__ = [
    "GroupView",
    "core_reconcile",
    "oracle_reconcile_view",
    "pool_finders",
    "pool_views",
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


def _unit_predicate(
    geometry: HybridGeometry, block_pool: Any, block_hashes: Sequence[Any], group_id: int
) -> tuple[GroupSpec, Callable[[int], bool], int]:
    """The finder spec of a group, its ``is_cached`` and how many indices exist."""
    group = geometry.groups[group_id]
    unit = geometry.hash_block_size
    alignment = geometry.alignment_tokens
    units = len(block_hashes)
    ids = [group_id]

    def registered(index: int) -> bool:
        return (
            0 <= index < units and block_pool.get_cached_block(block_hashes[index], ids) is not None
        )

    scale = group.block_size // unit
    if alignment < group.block_size and group.kind is GroupKind.FULL:

        def covered(index: int) -> bool:
            block_end = next_grid_point(index, scale)
            return any(registered(k) for k in range(index, min(block_end, units)))

        return GroupSpec.full(unit), covered, units
    if alignment < group.block_size and group.kind is GroupKind.MAMBA:
        return GroupSpec.mamba(unit), registered, units
    if alignment < group.block_size:
        raise ValueError(f"{group}: vLLM gives sliding-window groups no hash-unit hits")

    def block_cached(index: int) -> bool:
        return registered((index + 1) * scale - 1)

    return group, block_cached, units // scale


def pool_finders(
    geometry: HybridGeometry, block_pool: Any, block_hashes: Sequence[Any]
) -> list[Finder]:
    """Core finders reading vLLM's pool on demand (what an engine would do)."""
    finders = []
    for group_id in range(len(geometry.groups)):
        spec, is_cached, _ = _unit_predicate(geometry, block_pool, block_hashes, group_id)
        finders.append(group_finder(spec, is_cached, alignment_tokens=geometry.alignment_tokens))
    return finders


def pool_views(
    geometry: HybridGeometry, block_pool: Any, block_hashes: Sequence[Any]
) -> list[GroupView]:
    """Every group's cached indices of the chain, read once from vLLM's pool."""
    views = []
    for group_id, group in enumerate(geometry.groups):
        spec, is_cached, count = _unit_predicate(geometry, block_pool, block_hashes, group_id)
        cached = frozenset(index for index in range(count) if is_cached(index))
        registered = frozenset(
            index
            for index, block_hash in enumerate(block_hashes)
            if block_pool.get_cached_block(block_hash, [group_id]) is not None
        )
        views.append(GroupView(group, spec, cached, registered))
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


def oracle_reconcile_view(
    geometry: HybridGeometry, views: Sequence[GroupView], max_hit_length: int, hashed_tokens: int
) -> tuple[int, int, int]:
    """The first-principles ``(h, ℓ, J)`` over the views (``reference.oracle``)."""
    groups = [
        OracleGroup(view.spec.kind.value, view.spec.block_size, view.spec.window, view.cached)
        for view in views
    ]
    return oracle_reconcile(
        groups, geometry.alignment_tokens, geometry.use_eagle, max_hit_length, hashed_tokens
    )
