"""Integer prefix keys: one int per hash unit, equal exactly when the prefixes are.

Two requests share a cached block exactly when their hash chains agree up
to its end, and the replay needs only that equality, so it numbers prefixes
instead: a unit's key is the same int for every request whose first
``(u + 1) * H`` tokens agree. Token prompts (:meth:`PrefixKeys.tokens`) go
through a trie of units; hash-id traces (:meth:`PrefixKeys.hash_ids`) name
the prefix ending at ``x`` by the ids it reaches into and ``x``
(``node(ids[:j + 1]) * 513 + (x - 512 j)``), no token built. Output tokens
are the engine's own, repeated by no prompt: every unit past the prompt's
last whole unit gets a fresh key (from :data:`FRESH_BASE` up), unless the
answer is known (:meth:`PrefixKeys.answered`: a later prompt carries it).
Distinct ids are taken to carry distinct tokens wherever they differ
(``workloads.hash_prompts``: the id, then 511 random draws).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from junction.reference.workloads.mooncake import HASH_BLOCK_TOKENS

__all__ = ["FRESH_BASE", "PrefixKeys"]

# Token-trie nodes start here, above every hash-id key (a trace's ids number far
# fewer than 2**44 / 513 prefixes); the replay's fresh keys start at FRESH_BASE.
_TOKEN_BASE = 1 << 44
FRESH_BASE = 1 << 45


class PrefixKeys:
    """The numbering of one replay: tries of token units and of hash-id blocks."""

    def __init__(self, unit: int) -> None:
        self.unit = unit
        self._token_nodes: dict[tuple[int, tuple[int, ...]], int] = {}
        self._id_nodes: dict[tuple[int, Hashable], int] = {}

    def tokens(self, prompt: Sequence[int]) -> list[int]:
        """The key of every whole unit of ``prompt`` (``len(prompt) // H`` of them)."""
        nodes, unit, parent = self._token_nodes, self.unit, -1
        keys = []
        for start in range(0, len(prompt) - unit + 1, unit):
            edge = (parent, tuple(prompt[start : start + unit]))
            parent = nodes.get(edge, -1)
            if parent < 0:
                parent = nodes[edge] = _TOKEN_BASE + len(nodes)
            keys.append(parent)
        return keys

    def hash_ids(self, hash_ids: Sequence[Hashable], input_length: int) -> list[int]:
        """The key of every whole unit of a hash-id prompt of ``input_length`` tokens."""
        nodes, parent, path = self._id_nodes, -1, []
        for hash_id in hash_ids:
            edge = (parent, hash_id)
            parent = nodes.get(edge, -1)
            if parent < 0:
                parent = nodes[edge] = len(nodes)
            path.append(parent)
        span = HASH_BLOCK_TOKENS + 1
        keys = []
        for end in range(self.unit, input_length + 1, self.unit):
            block = (end - 1) // HASH_BLOCK_TOKENS
            keys.append(path[block] * span + end - block * HASH_BLOCK_TOKENS)
        return keys

    def answered(
        self, hash_ids: Sequence[int], input_length: int, following: Sequence[int], end: int
    ) -> list[int]:
        """The key of every whole unit of a hash-id prompt of ``input_length`` tokens
        followed by tokens ``[input_length, end)`` of the prompt ``following`` (which
        agrees on its whole blocks). Where the prompt's partial last block carries an id
        other than ``following``'s there, that block holds the prompt's tokens, then
        ``following``'s: it is named by both ids and where they meet."""
        whole, split = divmod(input_length, HASH_BLOCK_TOKENS)
        if not split or hash_ids[whole] == following[whole]:
            return self.hash_ids(following, end)
        mixed: list[Hashable] = list(following)
        mixed[whole] = (hash_ids[whole], split, following[whole])
        prompt = self.hash_ids(hash_ids, input_length)
        return prompt + self.hash_ids(mixed, end)[len(prompt) :]
