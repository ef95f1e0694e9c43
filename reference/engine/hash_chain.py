"""The request's block-hash chain.

Every ``H`` tokens get one hash that also covers everything before them:
``h_i = hash((h_{i-1}, tokens of unit i))``. A group block of ``k * H``
tokens is identified by its last unit's hash, so equal hashes mean equal
prefixes whatever the block size. Python's tuple hash of ints is
deterministic across runs, so the engine is reproducible from a seed (no
cryptographic hash: a simulator has no adversary). The hashes live in an
``array('q')``, 8 bytes a unit, since a finished request keeps its chain;
:meth:`block_hashes` slices one group's block hashes out in C.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

__all__ = ["ROOT_HASH", "HashChain", "unit_hash", "unit_hashes"]

ROOT_HASH = 0x6A756E6374696F6E  # the parent of unit 0 ("junction")


def unit_hash(parent: int, tokens: Sequence[int]) -> int:
    """The chained hash of one unit of tokens after ``parent``."""
    return hash((parent, tuple(tokens)))


def unit_hashes(parent: int, tokens: Sequence[int], unit: int) -> list[int]:
    """The chain through a block's ``tokens`` after ``parent``, one hash per unit.

    What checks and evictions recompute from a stored block (its last hash
    is the block's own, the others its inner units).
    """
    hashes = []
    for start in range(0, len(tokens), unit):
        parent = unit_hash(parent, tokens[start : start + unit])
        hashes.append(parent)
    return hashes


class HashChain:
    """The hashes of a growing token sequence, one per complete hash unit."""

    __slots__ = ("hashes", "unit")

    def __init__(self, unit: int) -> None:
        self.unit = unit
        self.hashes = array("q")

    def extend(self, tokens: Sequence[int]) -> None:
        """Hash every complete unit of ``tokens`` not hashed yet."""
        unit, hashes = self.unit, self.hashes
        parent = hashes[-1] if hashes else ROOT_HASH
        done = len(hashes) * unit
        rest = iter(tokens[done:] if done else tokens)
        # unit_hash of each unit, inlined: zip cuts the units in C (each one the
        # tuple unit_hash would build), and this loop runs once per unit of a trace.
        # Collected in a list and stored at once: array.append costs more per
        # hash than a list's append and one fromlist (13% of a prompt's hashing).
        found: list[int] = []
        add = found.append
        for unit_tokens in zip(*[rest] * unit, strict=False):
            parent = hash((parent, unit_tokens))
            add(parent)
        hashes.fromlist(found)

    @property
    def num_hashed_tokens(self) -> int:
        return len(self.hashes) * self.unit

    def block_hash(self, block_index: int, block_size: int) -> int | None:
        """Hash of block ``block_index`` of a ``block_size`` group, or None if not full yet."""
        last_unit = (block_index + 1) * block_size // self.unit - 1
        return self.hashes[last_unit] if last_unit < len(self.hashes) else None

    def block_hashes(self, block_size: int) -> array[int]:
        """The hash of every full block of a ``block_size`` group, in order."""
        per_block = block_size // self.unit
        return self.hashes[per_block - 1 :: per_block]

    def block_run(self, first: int, end: int, block_size: int) -> list[int]:
        """The chain hash before block ``first``, then the hashes of blocks ``[first, end)``.

        ``run[i]`` is the parent of block ``first + i`` and ``run[i + 1]`` its
        hash: what caching a chunk's newly full blocks needs, in one slice.
        Shorter when blocks past the hashed tokens are asked for.
        """
        per_block = block_size // self.unit
        if first:
            return self.hashes[first * per_block - 1 : end * per_block : per_block].tolist()
        return [ROOT_HASH, *self.hashes[per_block - 1 : end * per_block : per_block]]

    def parent_of_block(self, block_index: int, block_size: int) -> int:
        """The chain hash just before block ``block_index`` (the root for block 0)."""
        first_unit = block_index * block_size // self.unit
        return self.hashes[first_unit - 1] if first_unit else ROOT_HASH
