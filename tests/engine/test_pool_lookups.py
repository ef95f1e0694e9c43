"""The pool's whole-run lookup is its per-block predicate's scan, operation for operation.

A full-attention finder asks ``BlockPool.lookup_run`` once where it would ask
``lookup_predicate`` for block 0, 1, ... until the first uncached block or
its limit. Both must give the same run and count the same operations (one
per index asked inside the hashes, none past their end), or an engine run
with the faster path would not be the same run.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from junction.reference.engine.block_pool import BlockPool

GROUP = 3


def _scan(is_cached: Callable[[int], bool], limit: int) -> int:
    """core's full-attention scan over a predicate (``core.finders``)."""
    blocks = 0
    while blocks < limit and is_cached(blocks):
        blocks += 1
    return blocks


@given(
    st.lists(st.integers(0, 3), max_size=24),
    st.booleans(),
    st.integers(0, 30),
)
def test_the_run_is_the_predicates_scan_with_the_same_operations(
    states: list[int], inner: bool, limit: int
) -> None:
    # Per hash: 0 uncached, 1 cached, 2 only an inner unit of a cached block,
    # 3 cached in another group (a miss here).
    hashes = array("q", range(100, 100 + len(states)))
    pool = BlockPool(2)
    block = pool.blocks[1]
    for block_hash, state in zip(hashes, states, strict=True):
        if state == 1:
            pool.cached[(GROUP, block_hash)] = block
        elif state == 2:
            pool.inner[(GROUP, block_hash)] = block
        elif state == 3:
            pool.cached[(GROUP + 1, block_hash)] = block
    before = pool.operations
    want = _scan(pool.lookup_predicate(GROUP, hashes, inner=inner), limit)
    asked = pool.operations - before
    got = pool.lookup_run(GROUP, hashes, inner=inner)(limit)
    assert got == want
    assert pool.operations - before - asked == asked
