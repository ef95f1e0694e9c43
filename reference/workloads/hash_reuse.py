"""The reuse a hash-id trace allows, computed from its ids alone: the figure a replay must reach.

A replay with an unbounded pool, one request at a time and every block
retained (dense) can hit, for each request, exactly the longest prefix its
prompt shares with some earlier prompt, in whole blocks, and at most ``P - 1``
tokens (a lookup keeps the last prompt token to compute). From the ids that
prefix is known without building a token: two prompts built by
``hash_prompts`` agree on their leading equal ids and differ at the first
token of the first unequal id, so the tokens they share are ``min(512 m,
P_a, P_b)`` for ``m`` leading equal ids (the shorter prompt ends inside its
last, partial, block). :func:`reusable_tokens` keeps, for every id prefix
seen so far (a trie), the most tokens an earlier prompt covered under it,
and sums ``floor_B(min(shared, P - 1))`` over the requests in order.

This is an upper bound of what any policy hits on the trace, and exactly
what dense retention hits when nothing competes for the pool; the trace's
README states a coarser version (``512 k`` for a leading run of ``k`` ids seen
anywhere earlier), equal to this one on the conversation trace where no
partial block is reused across prompts of different lengths. Rejected:
computing it by hashing the built prompts (145 million tokens, and it would
share the engine's hashing, which is what this figure checks).
"""

from __future__ import annotations

from collections.abc import Iterable

from .mooncake import HASH_BLOCK_TOKENS, HashTraceRequest

__all__ = ["reusable_tokens"]


def reusable_tokens(requests: Iterable[HashTraceRequest], block_size: int) -> tuple[int, int]:
    """``(tokens hit, tokens looked up)`` of a sequential dense replay with an unbounded pool.

    Requests are taken in the order given (a replay's order); each looks up
    its ``P`` prompt tokens, the engine's count. Raises ``ValueError`` naming
    ``block_size`` unless it is an int >= 1.
    """
    if type(block_size) is not int or block_size < 1:
        raise ValueError(f"block_size: expected an int >= 1, got {block_size!r}")
    children: dict[tuple[int, int], int] = {}  # (node, id) -> node; node 0 is the empty prefix
    covered: list[int] = [0]  # node -> most tokens an earlier prompt covered under it
    hit = looked_up = 0
    for request in requests:
        length = request.input_length
        node = shared = 0
        for hash_id in request.hash_ids:  # the deepest id prefix seen before
            child = children.get((node, hash_id))
            if child is None:
                break
            node, shared = child, covered[child]
        hit += min(shared, length - 1) // block_size * block_size
        looked_up += length
        node = 0
        for depth, hash_id in enumerate(request.hash_ids, start=1):
            child = children.get((node, hash_id))
            if child is None:
                child = children[node, hash_id] = len(covered)
                covered.append(0)
            covered[child] = max(covered[child], min(depth * HASH_BLOCK_TOKENS, length))
            node = child
    return hit, looked_up
