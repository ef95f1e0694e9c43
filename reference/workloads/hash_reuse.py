"""What a hash-id trace allows, computed from its ids alone: its reuse and its working set.

Two prompts built by ``hash_prompts`` share ``min(512 m, P_a, P_b)`` tokens
for ``m`` leading equal ids, so an :class:`IdTrie` of id prefixes gives,
without building a token: :func:`reusable_tokens`, what dense hits with an
unbounded pool and one request at a time (an upper bound of any policy's
hits), and :func:`distinct_blocks`, the distinct full prompt blocks of ``B``
tokens (a group's working set). Computed from the ids, not by hashing built
prompts, so the reuse figure does not share the engine's hashing, which is
what it checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from junction.core import InvalidArgument

from .mooncake import HASH_BLOCK_TOKENS, HashTraceRequest

__all__ = ["IdTrie", "distinct_blocks", "reusable_tokens"]


def _block_size(value: object) -> int:
    if type(value) is not int or value < 1:
        raise InvalidArgument("block_size", value, "must be an int >= 1")
    return value


class IdTrie:
    """Every id prefix seen, with its depth and the most tokens a prompt covered under it."""

    def __init__(self) -> None:
        self._children: dict[tuple[int, int], int] = {}  # (node, id) -> node; 0 is the root
        self.depth: list[int] = [0]
        self.covered: list[int] = [0]

    def shared(self, request: HashTraceRequest) -> int:
        """The most tokens ``request``'s prompt shares with a prompt added before."""
        node = shared = 0
        for hash_id in request.hash_ids:
            child = self._children.get((node, hash_id))
            if child is None:
                break
            node, shared = child, self.covered[child]
        return min(shared, request.input_length)

    def add(self, request: HashTraceRequest) -> None:
        node = 0
        for depth, hash_id in enumerate(request.hash_ids, start=1):
            child = self._children.get((node, hash_id))
            if child is None:
                child = self._children[node, hash_id] = len(self.covered)
                self.depth.append(depth)
                self.covered.append(0)
            tokens = min(depth * HASH_BLOCK_TOKENS, request.input_length)
            self.covered[child] = max(self.covered[child], tokens)
            node = child


def reusable_tokens(requests: Iterable[HashTraceRequest], block_size: int) -> tuple[int, int]:
    """``(tokens hit, tokens looked up)`` of a sequential dense replay with an unbounded pool.

    Requests are taken in the order given (a replay's order); each looks up
    its ``P`` prompt tokens, the engine's count. Raises ``ValueError`` naming
    ``block_size`` unless it is an int >= 1.
    """
    size = _block_size(block_size)
    trie = IdTrie()
    hit = looked_up = 0
    for request in requests:
        hit += min(trie.shared(request), request.input_length - 1) // size * size
        looked_up += request.input_length
        trie.add(request)
    return hit, looked_up


def distinct_blocks(requests: Sequence[HashTraceRequest], block_size: int) -> int:
    """The distinct full prompt blocks of ``block_size`` tokens over every request."""
    size = _block_size(block_size)
    trie = IdTrie()
    for request in requests:
        trie.add(request)
    return sum(
        covered // size - (depth - 1) * HASH_BLOCK_TOKENS // size
        for depth, covered in zip(trie.depth[1:], trie.covered[1:], strict=True)
    )
