"""The block pool: a fixed set of KV-cache blocks shared by every group.

Blocks carry a reference count and, once cached, the hash of the prefix they
end. Free blocks wait in two queues: blocks with no hash are recycled first
(nobody can hit them); cached blocks wait least recently freed first, and
recycling one evicts it, the pool's eviction order choosing which
(``eviction.py``). Block 0 is the null block, standing in for blocks a
request skips; it is never allocated, freed or counted. ``check`` verifies
every invariant from scratch, raising :class:`InvariantViolation` listing
every broken one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat, takewhile
from operator import countOf, or_

from junction.core import InvalidArgument, JunctionError
from junction.reference.engine.eviction import EvictionOrder, LruOrder
from junction.reference.engine.hash_chain import unit_hashes
from junction.reference.engine.invariants import InvariantViolation

__all__ = ["Block", "BlockPool", "NoFreeBlocks"]


class NoFreeBlocks(JunctionError):
    """Raised by ``allocate`` when the pool cannot supply the blocks asked for."""


class Block:
    """One KV-cache block. ``key`` is ``(group_id, hash)`` while it is cached."""

    __slots__ = (
        "block_id",
        "end",
        "indexes_inner",
        "key",
        "parent",
        "ref_count",
        "state_position",
        "tokens",
        "unit",
    )

    def __init__(self, block_id: int) -> None:
        self.block_id = block_id
        self.ref_count = 0
        self.key: tuple[int, int] | None = None
        # What the hash was computed from, so check() can recompute it.
        self.parent = 0
        self.tokens: tuple[int, ...] = ()
        self.unit = 1
        # The prefix length it ends once cached (its managers set it): what eviction may read.
        self.end = 0
        # Whether its inner hash units are in the pool's ``inner`` map (eviction removes them).
        self.indexes_inner = False
        # Mamba: the position whose state this block holds (None: no state).
        self.state_position: int | None = None

    def __repr__(self) -> str:
        return f"Block({self.block_id}, ref={self.ref_count}, key={self.key})"


class BlockPool:
    """``num_blocks`` blocks (block 0 is the null block), evicting in ``order``."""

    def __init__(self, num_blocks: int, order: EvictionOrder | None = None) -> None:
        if num_blocks < 2:
            raise InvalidArgument(
                "num_blocks", num_blocks, "a pool needs the null block and one more"
            )
        self.blocks = [Block(i) for i in range(num_blocks)]
        self.null_block = self.blocks[0]
        self.free_unhashed: OrderedDict[int, Block] = OrderedDict(
            (b.block_id, b) for b in self.blocks[1:]
        )
        self.free_hashed: OrderedDict[int, Block] = OrderedDict()
        self.cached: dict[tuple[int, int], Block] = {}
        self.cached_per_group: dict[int, int] = {}
        # Hash units strictly inside cached blocks, for sub-block (partial) lookups.
        self.inner: dict[tuple[int, int], Block] = {}
        self.order: EvictionOrder = LruOrder() if order is None else order
        self.evictions = 0
        self.operations = 0  # allocations, frees, touches, cachings, lookups

    @property
    def num_usable(self) -> int:
        return len(self.blocks) - 1

    @property
    def num_free(self) -> int:
        return len(self.free_unhashed) + len(self.free_hashed)

    def allocate(self, count: int) -> list[Block]:
        """``count`` blocks with reference count 1; evicts cached blocks if it must."""
        unhashed, hashed = self.free_unhashed, self.free_hashed
        if count > len(unhashed) + len(hashed):
            raise NoFreeBlocks(f"asked for {count} blocks, {self.num_free} free")
        taken, victim = [], self.order.victim
        for _ in range(count):
            if unhashed:
                block = unhashed.popitem(last=False)[1]
            else:
                block = victim(hashed)
                del hashed[block.block_id]
                self._evict(block)
            block.ref_count = 1
            taken.append(block)
        self.operations += count
        return taken

    def retire(self, blocks: Iterable[tuple[Block, tuple[int, int]]]) -> int:
        """Uncache each block still cached under its key that no request holds, to the
        front of the free queue (recycled before any cached block); the count."""
        retired, unhashed = 0, self.free_unhashed
        for block, key in blocks:
            if block.key != key or block.ref_count:
                continue
            del self.free_hashed[block.block_id]
            self._evict(block, counted=False)
            unhashed[block.block_id] = block
            unhashed.move_to_end(block.block_id, last=False)
            retired += 1
        self.operations += retired
        return retired

    def _evict(self, block: Block, counted: bool = True) -> None:
        if block.key is None:
            raise InvariantViolation(
                "a block in the hashed free queue has a hash", f"{block} has none", self.dump()
            )
        if self.order.observes:
            self.order.evicted(block)
        del self.cached[block.key]
        self.cached_per_group[block.key[0]] -= 1
        group_id = block.key[0]
        if block.indexes_inner:
            for inner_hash in unit_hashes(block.parent, block.tokens, block.unit)[:-1]:
                if self.inner.get((group_id, inner_hash)) is block:
                    del self.inner[(group_id, inner_hash)]
            block.indexes_inner = False
        block.key = None
        block.state_position = None
        self.evictions += counted

    def touch(self, blocks: Sequence[Block]) -> None:
        """Take a reference to cached blocks (a hit); a free one leaves the queue."""
        null, hashed, skipped = self.null_block, self.free_hashed, 0
        observes = self.order.observes
        for block in blocks:
            if block.ref_count:  # held already (never the null block: it is never held)
                block.ref_count += 1
            elif block is null:
                skipped += 1
            else:
                del hashed[block.block_id]
                if observes:
                    self.order.revived(block)
                block.ref_count = 1
        self.operations += len(blocks) - skipped

    def free(self, blocks: Iterable[Block]) -> None:
        """Drop one reference each; a block reaching 0 joins the back of its free queue."""
        null, freed = self.null_block, 0
        for block in blocks:
            if block is null:
                continue
            block.ref_count -= 1
            freed += 1
            if not block.ref_count:
                queue = self.free_unhashed if block.key is None else self.free_hashed
                queue[block.block_id] = block
        self.operations += freed

    def cache(
        self,
        block: Block,
        group_id: int,
        block_hash: int,
        parent: int,
        tokens: Sequence[int],
        unit: int,
        index_inner_units: bool = False,
        end: int = 0,
    ) -> None:
        """Make ``block`` findable under ``(group_id, block_hash)``; it ends the prefix ``end``.

        If another block already holds that prefix, the first one stays the
        cached copy and this one stays unhashed (it is recycled first). With
        ``index_inner_units`` the prefixes ending at its inner hash units are
        findable too (:meth:`lookup_unit`), the first block to offer one wins.
        """
        entry = (block, block_hash, parent, tokens, end)
        self.cache_many(group_id, [entry], unit, index_inner_units)

    def cache_many(
        self,
        group_id: int,
        entries: Sequence[tuple[Block, int, int, Sequence[int], int]],
        unit: int,
        index_inner_units: bool = False,
    ) -> None:
        """:meth:`cache` of each ``(block, block_hash, parent, tokens, end)``, in order.

        One call per chunk and group instead of one per block; one operation
        per block offered, cached or not.
        """
        self.operations += len(entries)
        cached, inner = self.cached, self.inner
        added, observes = 0, self.order.observes
        for block, block_hash, parent, tokens, end in entries:
            key = (group_id, block_hash)
            if block.key is not None or key in cached:
                continue
            block.key, block.end = key, end
            block.parent, block.tokens, block.unit = parent, tuple(tokens), unit
            cached[key] = block
            added += 1
            if observes:
                self.order.cached(block)
            if index_inner_units:
                block.indexes_inner = True
                for inner_hash in unit_hashes(parent, block.tokens, unit)[:-1]:
                    inner.setdefault((group_id, inner_hash), block)
        if added:
            self.cached_per_group[group_id] = self.cached_per_group.get(group_id, 0) + added

    def lookup(self, group_id: int, block_hash: int) -> Block | None:
        self.operations += 1
        return self.cached.get((group_id, block_hash))

    def lookup_many(self, group_id: int, hashes: Sequence[int]) -> list[Block | None]:
        """:meth:`lookup` of each hash, in one call (one operation each), run in C."""
        self.operations += len(hashes)
        return list(map(self.cached.get, zip(repeat(group_id), hashes)))

    def lookup_predicate(
        self, group_id: int, hashes: Sequence[int], *, inner: bool = False
    ) -> Callable[[int], bool]:
        """``is_cached(index)``: whether ``hashes[index]`` is cached, for a finder.

        Each call inside ``hashes`` is one lookup (:meth:`lookup`, or with
        ``inner`` :meth:`lookup_unit`); an index past the end is not cached
        and looks nothing up. One closure per request and group, so a finder
        walking a prompt pays one call per block, not three.
        """
        cached, inner_units, count = self.cached, self.inner, len(hashes)

        def is_cached(index: int) -> bool:
            if index >= count:
                return False
            self.operations += 1
            key = (group_id, hashes[index])
            return key in cached or (inner and key in inner_units)

        return is_cached

    def lookup_run(
        self, group_id: int, hashes: Sequence[int], *, inner: bool = False
    ) -> Callable[[int], int]:
        """``cached_run(limit)``: how many of ``hashes`` from the first on are cached,
        at most ``limit`` (``core.finders.CachedRun``), for a full-attention finder.

        The lookups :meth:`lookup_predicate`'s scan asks from index 0 until the
        first uncached one or ``limit``, run in C (a finder asks one call, not
        one per block): one operation per index asked inside ``hashes`` (the
        first uncached one too), none past the end, as there.
        """
        cached, inner_units = self.cached, self.inner

        def cached_run(limit: int) -> int:
            asked = hashes[:limit]
            found: Iterable[bool] = map(cached.__contains__, zip(repeat(group_id), asked))
            if inner:
                units = map(inner_units.__contains__, zip(repeat(group_id), asked))
                found = map(or_, found, units)
            run = countOf(takewhile(bool, found), True)
            self.operations += min(run + 1, len(asked))
            return run

        return cached_run

    def lookup_unit(self, group_id: int, unit_hash: int) -> Block | None:
        """The cached block holding the prefix that ends at this hash unit, if any."""
        self.operations += 1
        key = (group_id, unit_hash)
        return self.cached.get(key) or self.inner.get(key)

    def cached_blocks_per_group(self) -> dict[int, int]:
        """Cached blocks per group id (kept up to date on every caching and eviction)."""
        return dict(self.cached_per_group)

    def check(self, holders: Mapping[int, int]) -> None:
        """Every pool invariant; ``holders[block_id]`` is how many (request, group) hold it."""
        problems = []
        free_ids = self.free_unhashed.keys() | self.free_hashed.keys()
        if len(free_ids) != self.num_free:
            problems.append("a block is in both free queues")
        if 0 in free_ids or 0 in holders:
            problems.append("the null block is free or held")
        held = 0
        for block in self.blocks[1:]:
            expected = holders.get(block.block_id, 0)
            if block.ref_count != expected:
                problems.append(f"{block}: ref_count != {expected} holders")
            is_free = block.block_id in free_ids
            if is_free and expected:
                problems.append(f"{block} is both free and held")
            if not is_free and not expected:
                problems.append(f"{block} is neither free nor held (leaked)")
            held += bool(expected)
            if is_free and (block.block_id in self.free_hashed) != (block.key is not None):
                problems.append(f"{block} sits in the wrong free queue")
            if block.key is not None:
                if self.cached.get(block.key) is not block:
                    problems.append(f"{block}: hashed but not the cached copy of its key")
                if unit_hashes(block.parent, block.tokens, block.unit)[-1:] != [block.key[1]]:
                    problems.append(f"{block}: hash does not match its tokens")
        if held + self.num_free != self.num_usable:
            problems.append(f"held {held} + free {self.num_free} != {self.num_usable} blocks")
        per_group: dict[int, int] = {}
        for key, block in self.cached.items():
            if block.key != key:
                problems.append(f"cache map {key} -> {block} disagrees")
            per_group[key[0]] = per_group.get(key[0], 0) + 1
        if {g: n for g, n in self.cached_per_group.items() if n} != per_group:
            problems.append(f"cached counts {self.cached_per_group} != {per_group}")
        for (group_id, inner_hash), block in self.inner.items():
            inside = unit_hashes(block.parent, block.tokens, block.unit)[:-1]
            if block.key is None or block.key[0] != group_id or inner_hash not in inside:
                problems.append(f"inner unit {inner_hash} -> {block} is not inside that block")
        problems += self.order.problems(self.cached)
        if problems:
            raise InvariantViolation(
                "block pool invariants", "\n  " + "\n  ".join(problems), self.dump()
            )

    def dump(self) -> str:
        """The pool's counts and every block that is held or cached."""
        lines = [
            f"pool: {self.num_free}/{self.num_usable} free "
            f"({len(self.free_unhashed)} unhashed, {len(self.free_hashed)} hashed), "
            f"{len(self.cached)} cached, {self.evictions} evictions"
        ]
        lines += [f"  {b}" for b in self.blocks[1:] if b.ref_count or b.key is not None]
        return "\n".join(lines)
