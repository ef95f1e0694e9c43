"""What a sliding-window finder asks the cache, beyond the hit it answers.

The oracle properties compare answers; an engine's ``is_cached`` may walk a
hash chain, so the finder also promises (``core.finders``) to ask about each
block at most once, and only about blocks of a candidate tail that fits
under the bound: a hit of 0 needs no cached block and asks about none.
"""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from .core_under_test import GroupLookup, GroupSpec, lcm
from .strategies import group_specs


def _fitting_tail_blocks(spec: GroupSpec, alignment: int, bound: int, drop: bool) -> set[int]:
    """Blocks of the tails of every positive candidate hit that fit under ``bound``.

    The tail of ``a`` is ``[max(0, a/B - cdiv(W-1, B)), a/B + E)`` and must end
    at or before ``floor_B(bound)``; ``E`` is the peek block of an EAGLE
    group asked to drop."""
    block = spec.block_size
    peek = 1 if drop and spec.eagle_group else 0
    need = spec.blocks_for_hit(drop)
    step = lcm(alignment, block) // block
    blocks: set[int] = set()
    for tail_end in range(step + peek, bound // block + 1, step):
        blocks.update(range(max(tail_end - need, 0), tail_end))
    return blocks


@given(group_specs(("sliding_window",)), st.integers(1, 16), st.data())
def test_a_window_finder_asks_each_block_once_and_only_of_tails_that_fit(
    spec: GroupSpec, alignment: int, data: st.DataObject
) -> None:
    block = spec.block_size
    chain = data.draw(st.integers(1, 10))
    cached = frozenset(data.draw(st.sets(st.integers(0, chain - 1))))
    asked: list[int] = []

    def is_cached(index: int) -> bool:
        asked.append(index)
        return index in cached

    finder = GroupLookup(spec, alignment).finder(is_cached)
    for bound, drop in itertools.product(range((chain + 2) * block), (False, True)):
        asked.clear()
        finder(bound, drop)
        where = f"{spec} A={alignment} drop={drop} bound={bound} cached={sorted(cached)}"
        assert len(asked) == len(set(asked)), f"{where}: asked {asked}"
        assert set(asked) <= _fitting_tail_blocks(spec, alignment, bound, drop), (
            f"{where}: asked {asked}"
        )
