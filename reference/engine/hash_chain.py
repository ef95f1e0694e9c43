"""The request's block-hash chain.

Every ``H`` tokens (the hash unit) get one hash that also covers everything
before them: ``h_i = hash((h_{i-1}, tokens of unit i))``. A group block of
``B_g = k * H`` tokens is identified by the hash of its last unit, so equal
hashes mean equal prefixes, whatever the group's block size. Python's tuple
hash of ints is deterministic across runs (``PYTHONHASHSEED`` only salts
strings and bytes), which keeps the engine reproducible from a seed.
Rejected: cryptographic hashes (several times slower, and a simulator has no
adversary).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ROOT_HASH", "HashChain", "unit_hash"]

ROOT_HASH = 0x6A756E6374696F6E  # the parent of unit 0 ("junction")


def unit_hash(parent: int, tokens: Sequence[int]) -> int:
    """The chained hash of one unit of tokens after ``parent``."""
    return hash((parent, tuple(tokens)))


class HashChain:
    """The hashes of a growing token sequence, one per complete hash unit."""

    __slots__ = ("hashes", "unit")

    def __init__(self, unit: int) -> None:
        self.unit = unit
        self.hashes: list[int] = []

    def extend(self, tokens: Sequence[int]) -> None:
        """Hash every complete unit of ``tokens`` not hashed yet."""
        unit = self.unit
        parent = self.hashes[-1] if self.hashes else ROOT_HASH
        for start in range(len(self.hashes) * unit, len(tokens) - unit + 1, unit):
            parent = unit_hash(parent, tokens[start : start + unit])
            self.hashes.append(parent)

    @property
    def num_hashed_tokens(self) -> int:
        return len(self.hashes) * self.unit

    def block_hash(self, block_index: int, block_size: int) -> int | None:
        """Hash of block ``block_index`` of a ``block_size`` group, or None if not full yet."""
        last_unit = (block_index + 1) * block_size // self.unit - 1
        return self.hashes[last_unit] if last_unit < len(self.hashes) else None

    def parent_of_block(self, block_index: int, block_size: int) -> int:
        """The chain hash just before block ``block_index`` (the root for block 0)."""
        first_unit = block_index * block_size // self.unit
        return self.hashes[first_unit - 1] if first_unit else ROOT_HASH
