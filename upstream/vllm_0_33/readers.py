"""How vLLM 0.33.0's block pool answers a core finder: one group's reader.

Block ``i`` of group ``g`` is cached iff the pool holds unit hash
``(i + 1) * s - 1`` for ``g`` (vLLM keys a block by its last hash unit).
With partial hits full attention matches whole blocks, then the deepest
registered unit of the first block it misses; Mamba serves any registered
unit; sliding windows always read whole blocks, as in vLLM. The drop-in's
lookup and the audit's both read the pool through these readers.
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
    HybridGeometry,
    InvalidArgument,
    next_grid_point,
)

__all__ = ["GroupReader", "group_readers"]


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

    def finder(
        self,
        block_pool: Any,
        block_hashes: Sequence[Any],
        found: dict[int, Any],
        run: list[Any] | None = None,
    ) -> Finder:
        """The group's core finder over one request's chain, reading the pool as
        vLLM's scan reads it.

        A full-attention group's finder gets its cached run (``core.CachedRun``):
        read by whole blocks (``run`` a list: one pool call a block) the run's
        blocks are kept in ``run``; read by hash units, the run ends past the
        deepest registered unit of the first block not registered whole. Any
        other group reads through :meth:`predicate`. Each answer read by unit is
        kept in ``found`` under its hash unit, and a unit found there already is
        not asked again."""
        get, ids = block_pool.get_cached_block, [self.group_id]
        if run is not None:  # whole blocks: block i is hash unit (i + 1) * scale - 1
            scale = self.scale
            count = len(block_hashes) // scale

            def is_cached(index: int) -> bool:
                return index < count and get(block_hashes[(index + 1) * scale - 1], ids) is not None

            def block_run(limit: int) -> int:
                # From what the run holds; a unit read already (block 0) is not asked again.
                end = min(limit, count)
                for index in range(len(run), end):
                    unit = (index + 1) * scale - 1
                    answer = found[unit] if unit in found else get(block_hashes[unit], ids)
                    if answer is None:
                        return index
                    run.append(answer[0])
                return end

            return self.lookup.finder(is_cached, block_run)
        covered, units = self.predicate(block_pool, block_hashes, found)
        if self.spec.kind is not GroupKind.FULL:
            return self.lookup.finder(covered)
        block_units = self.covered_block

        def covered_run(limit: int) -> int:
            # Hash unit u is covered iff a unit in [u, its block's end) is
            # registered: a block registered at its last unit is covered whole;
            # in the first that is not, the run ends past its deepest registration.
            start = 0
            while start < limit:
                end = min(start + block_units, units)
                deepest = end - 1
                while deepest >= start:
                    if deepest in found:  # read already (block 0)
                        answer = found[deepest]
                    else:
                        found[deepest] = answer = get(block_hashes[deepest], ids)
                    if answer is not None:
                        break
                    deepest -= 1
                if deepest < start + block_units - 1:  # the run ends in this block
                    return min(deepest + 1, limit)
                start += block_units
            return limit

        return self.lookup.finder(covered, covered_run)


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
            raise InvalidArgument(
                "geometry", group, "vLLM gives sliding-window groups no hash-unit hits"
            )
        readers.append(
            GroupReader(group_id, spec, GroupLookup(spec, alignment), scale, covered_block)
        )
    return tuple(readers)
