"""What each group of a real vLLM block pool has cached, as core's finders and the oracle see it.

To compare vLLM's ``find_longest_cache_hit`` with ``core.reconcile_hits``
both must read the same cache, so this turns vLLM's block pool and one
request's hash chain into core finders and views (and the oracle's cached
sets), read through the release's readers
(:mod:`junction.upstream.vllm_0_33.readers`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from junction.core import (
    Finder,
    GroupSpec,
    HitReconciliation,
    HybridGeometry,
    group_finder,
    reconcile_hits,
)
from junction.reference.oracle.first_principles import OracleGroup, oracle_reconcile
from junction.upstream.vllm_0_33.readers import GroupReader, group_readers

__all__ = [
    "GroupView",
    "core_reconcile",
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
