"""The replay's pool: the engine pool's books, kept on integer prefix keys.

Of ``engine.block_pool``'s state the replay keeps only what a decision
reads: which prefix keys are cached, which of them are free (in the
engine's free order), and how many blocks the running request holds; the
unhashed free blocks are the rest (recycled first, and which one is taken
changes nothing). A key is ``prefix_key * groups + group``
(``keys.PrefixKeys``). The eviction order picks the cached block an
allocation evicts: ``lru`` (the engine's default), ``fifo``, ``belady`` or
``flop-aware`` (the engine's own ``FlopAwareOrder``). ``belady`` evicts the
block whose next use lies furthest ahead, known offline (:class:`FutureUses`);
among equal next uses the one ending deepest, since a block is of no use to a
lookup once the block before it is gone. It is a reference, not a bound
(``tests/replay/test_belady.py``): a request holds blocks of its own and
recomputes some already cached, and a sliding window or Mamba state serves a
lookup only where the hit lands, which no next use tells. A request's block
is a cached key, ``PRIVATE`` (-1) or ``NULL`` (-2, a slot a window
released). Other engines' layouts (``layouts``): :class:`ReplayPool`'s
``state_slots`` and ``caching``.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat, takewhile
from operator import countOf

import attrs

from junction.core import (
    Finder,
    GroupKind,
    GroupLookup,
    HitReconciler,
    HitReconciliation,
    HybridGeometry,
    InvalidArgument,
)
from junction.reference.engine.eviction import FlopAware, FlopAwareOrder, FlopModel

from .plan import RELEASE, STATE, RequestPlan

__all__ = ["EVICTIONS", "NULL", "PRIVATE", "FutureUses", "ReplayPool", "Usage"]

EVICTIONS = ("lru", "fifo", "flop-aware", "belady")
PRIVATE, NULL = -1, -2
_NEVER = 1 << 62


class _States:
    """A pool of state slots apart from the blocks: how many are held, and its free
    cached states, least recently freed first (the next evicted)."""

    __slots__ = ("free", "held", "usable")

    def __init__(self, slots: int) -> None:
        self.usable, self.held = slots, 0
        self.free: OrderedDict[int, None] = OrderedDict()


class _Block:
    """What ``FlopAwareOrder`` reads of a cached block (``engine.block_pool.Block``'s names)."""

    __slots__ = ("block_id", "end", "key", "parent")

    def __init__(self, block_id: int, key: tuple[int, int], end: int, parent: int) -> None:
        self.block_id, self.key, self.end, self.parent = block_id, key, end, parent


@attrs.frozen
class FutureUses:
    """What ``belady`` knows ahead: per key, the requests whose lookups can reach it
    (their indexes, ascending); per request, its last computed token (``P + outputs
    - 1``), by which a pool knows the requests it will refuse: they use nothing."""

    keys: Mapping[int, Sequence[int]]
    last_tokens: Sequence[int]


@attrs.frozen
class Usage:
    """The pool after a request: evictions so far, cached blocks per group, their peaks."""

    evictions: int
    cached: tuple[int, ...]
    peak: tuple[int, ...]


class ReplayPool:
    """One point's pool: ``num_blocks`` blocks (one the null block), evicting by ``eviction``.

    ``uses`` (``belady`` only): the requests' future uses; ``longest``: the
    last token of the longest request the pool serves (``None``: every one).
    ``flops`` (``flop-aware`` only): the geometry's FLOP model.
    ``track_ends``: keep ``ends``, the prefix length each cached key ends
    (what a test compares with the engine's blocks; ``belady`` keeps it too,
    to break ties of next use by depth). ``state_slots`` (``lru`` only): the
    Mamba groups' states in a pool of that many slots apart from the
    ``num_blocks``, with an LRU of its own, a block evicted taking the free
    state ending where it ends (SGLang's cascade from a node's full
    attention to its state); ``caching``: whether anything is cached at all.
    """

    def __init__(
        self,
        geometry: HybridGeometry,
        num_blocks: int,
        eviction: str = "lru",
        *,
        uses: FutureUses | None = None,
        longest: int | None = None,
        flops: FlopModel | None = None,
        track_ends: bool = False,
        state_slots: int | None = None,
        caching: bool = True,
    ) -> None:
        if eviction not in EVICTIONS:
            raise InvalidArgument("eviction", eviction, f"expected one of {', '.join(EVICTIONS)}")
        if num_blocks < 2:
            raise InvalidArgument("num_blocks", num_blocks, "a pool needs the null block and one")
        if eviction == "belady" and uses is None:
            raise InvalidArgument("uses", uses, "belady needs every key's uses")
        if eviction == "flop-aware" and flops is None:
            raise InvalidArgument("flops", flops, "flop-aware needs the geometry's FLOP model")
        if state_slots is not None and state_slots < 2:
            raise InvalidArgument("state_slots", state_slots, "a request moves its state: two")
        if state_slots is not None and eviction != "lru":
            raise InvalidArgument("eviction", eviction, "a state pool apart evicts by lru only")
        self.geometry = geometry
        self.groups = geometry.groups
        self.usable = num_blocks - 1
        self.eviction = eviction
        self.cached: set[int] = set()
        # Free cached keys, least recently freed first (with flop-aware: their blocks).
        self.free: OrderedDict[int, _Block | None] = OrderedDict()
        self.held = 0
        self.evictions = 0
        self.count = [0] * len(self.groups)
        self.peak = [0] * len(self.groups)
        self.now = 0  # the request being replayed
        self._stamp = 0
        # fifo: (born, 0, 0, key); belady: (-next use, -end, stamp, key).
        self._heap: list[tuple[int, int, int, int]] = []
        self._born: dict[int, int] = {}
        self._uses = uses.keys if uses else {}
        self._last_tokens = uses.last_tokens if uses else ()
        self._longest = longest
        self._blocks: dict[int, _Block] = {}
        self.ends: dict[int, int] | None = {} if track_ends or eviction == "belady" else None
        self._flop_order = (
            FlopAwareOrder(FlopAware(flops), self.groups)
            if eviction == "flop-aware" and flops
            else None
        )
        alignment = geometry.alignment_tokens
        self._reconciler = HitReconciler(geometry)
        # The prompt being looked up, per group (its hashed blocks' keys): the finders,
        # built once, read it.
        self._probe: list[Sequence[int]] = [() for _ in self.groups]
        self._finders = [
            self._finder(group, GroupLookup(spec, alignment))
            for group, spec in enumerate(self.groups)
        ]
        self._sizes = tuple(g.block_size for g in self.groups)
        self._mamba = tuple(i for i, g in enumerate(self.groups) if g.kind is GroupKind.MAMBA)
        self._states = None if state_slots is None else _States(state_slots)
        self.caching = caching

    # -- lookup ---------------------------------------------------------------
    def lookup(self, keys: Sequence[Sequence[int]], prompt: int) -> HitReconciliation:
        """``core``'s reconciled hit of a prompt of ``prompt`` tokens whose blocks
        have ``keys[g]`` (its hashed blocks only, per group)."""
        if len(keys) != len(self.groups):
            raise InvalidArgument("keys", len(keys), f"one list per group ({len(self.groups)})")
        self._probe[:] = keys
        unit = self.geometry.hash_block_size
        return self._reconciler.reconcile(self._finders, prompt - 1, prompt - prompt % unit)

    def _finder(self, group: int, lookup: GroupLookup) -> Finder:
        """``core``'s finder of ``group`` over the cached keys of the prompt in ``_probe``."""
        cached, probe = self.cached, self._probe

        def is_cached(index: int) -> bool:
            blocks = probe[group]
            return index < len(blocks) and blocks[index] in cached

        if lookup.spec.kind is not GroupKind.FULL:
            return lookup.finder(is_cached)

        def run(limit: int) -> int:
            found = map(cached.__contains__, probe[group][:limit])
            return countOf(takewhile(bool, found), True)

        return lookup.finder(is_cached, run)

    # -- the books ------------------------------------------------------------
    def _take(self, key: int) -> None:
        """A hit takes a cached key: a free one leaves the free queue."""
        if key in self.free:
            block = self.free.pop(key)
            if self._flop_order is not None and block is not None:
                self._flop_order.revived(block)  # type: ignore[arg-type]
        self.held += 1

    def _take_state(self, key: int) -> None:
        """A hit takes a cached state from the state pool."""
        states = self._states
        assert states is not None
        states.free.pop(key, None)
        states.held += 1

    def _give_states(self, slots: Iterable[int]) -> None:
        """Held state slots freed: a cached state joins the back of the state pool's queue."""
        states = self._states
        assert states is not None
        for slot in slots:
            states.held -= 1
            if slot >= 0:
                states.free[slot] = None

    def _new_states(self, count: int) -> None:
        """``count`` fresh state slots, the least recently freed cached states evicted first."""
        states = self._states
        assert states is not None
        spare = states.usable - states.held - len(states.free)
        if count > spare:
            if count > spare + len(states.free):
                raise InvalidArgument(
                    "state_slots", states.usable, f"{count} asked, {spare + len(states.free)} free"
                )
            for _ in range(count - spare):
                self._drop(states.free.popitem(last=False)[0])
        states.held += count

    def _evict_with_states(self, count: int) -> None:
        """``lru`` with a state pool apart: the front of the free queue, each block
        taking the free state ending where it ends."""
        free, width, states = self.free, len(self.groups), self._states
        assert states is not None
        for _ in range(count):
            key = free.popitem(last=False)[0]
            self._drop(key)
            for group in self._mamba:
                state = key - key % width + group
                if state in states.free:
                    del states.free[state]
                    self._drop(state)

    def _drop(self, key: int) -> None:
        """A cached key leaves the books (``lru``: no order keeps more of it)."""
        self.cached.discard(key)
        self.count[key % len(self.groups)] -= 1
        if self.ends is not None:
            del self.ends[key]
        self.evictions += 1

    def _give(self, slots: Iterable[int]) -> None:
        """Held blocks freed in this order (``NULL`` slots skipped): a cached one joins
        the back of the free queue."""
        free, blocks = self.free, self._blocks
        kept = [slot for slot in slots if slot != NULL]
        self.held -= len(kept)
        if self.eviction == "lru":  # nothing remembered beside the queue
            free.update(zip(filter((0).__le__, kept), repeat(None)))
            return
        remember = self.eviction in ("fifo", "belady")
        for slot in kept:
            if slot >= 0:
                free[slot] = blocks.get(slot) if blocks else None
                if remember:
                    self._remember_free(slot)

    def _remember_free(self, key: int) -> None:
        """``fifo``, ``belady``: a freed key's place in the heap."""
        if self.eviction == "fifo":
            heapq.heappush(self._heap, (self._born[key], 0, 0, key))
        else:
            self._push_next_use(key)

    def _next_use(self, key: int) -> int:
        """The first request after the current one, served, whose lookup can reach ``key``."""
        uses = self._uses.get(key, ())
        at = bisect_right(uses, self.now)
        if self._longest is not None:
            last, longest = self._last_tokens, self._longest
            while at < len(uses) and last[uses[at]] > longest:
                at += 1
        return uses[at] if at < len(uses) else _NEVER

    def _push_next_use(self, key: int) -> None:
        self._stamp += 1
        end = self.ends[key] if self.ends is not None else 0  # belady keeps ends
        heapq.heappush(self._heap, (-self._next_use(key), -end, self._stamp, key))

    def _victim(self) -> int:
        free = self.free
        if self._flop_order is not None:
            chosen = self._flop_order.victim(free)  # type: ignore[arg-type]
            return chosen.block_id
        heap = self._heap
        while True:
            first, _, _, key = heapq.heappop(heap)
            if key not in free:
                continue
            if self.eviction == "fifo":
                if self._born.get(key) == first:
                    return key
                continue
            if -first == self._next_use(key):
                return key
            self._push_next_use(key)  # its use passed unseen: again, as it stands now

    def _evict(self, key: int) -> None:
        block = self.free.pop(key)
        if self._flop_order is not None and block is not None:
            self._flop_order.evicted(block)  # type: ignore[arg-type]
            del self._blocks[key]
        self._born.pop(key, None)
        self._drop(key)

    def _cached(self, key: int, group: int, index: int, parent: int) -> None:
        """What an order or a test keeps of a newly cached key."""
        size = self.groups[group].block_size
        if self.ends is not None:
            self.ends[key] = (index + 1) * size
        if self.eviction == "fifo":
            self._stamp += 1
            self._born[key] = self._stamp
        elif self._flop_order is not None:
            block = _Block(key, (group, key // len(self.groups)), (index + 1) * size, parent)
            self._blocks[key] = block
            self._flop_order.cached(block)  # type: ignore[arg-type]

    # -- one request ----------------------------------------------------------
    def admit(self, keys: Sequence[Sequence[int]], hit: int) -> list[list[int]]:
        """Take the blocks a hit of ``hit`` tokens reuses; the request's slots per group."""
        slots: list[list[int]] = []
        for spec, blocks in zip(self.groups, keys, strict=True):
            size = spec.block_size
            full = hit // size
            take = self._take
            if spec.kind is GroupKind.MAMBA:
                taken = [blocks[full - 1]] if full else []
                if self._states is not None:
                    take = self._take_state
            elif spec.kind is GroupKind.SLIDING_WINDOW:
                first = spec.first_window_block(hit)
                taken = [NULL] * first + list(blocks[first:full])
            else:
                taken = list(blocks[:full])
            for key in taken:
                if key != NULL:
                    take(key)
            slots.append(taken)
        return slots

    def run(
        self,
        plan: RequestPlan,
        slots: list[list[int]],
        keys: Sequence[Sequence[int]],
        parents: Sequence[Sequence[int]] = (),
    ) -> None:
        """Replay a request's plan from its admission (``admit``) to its finish.

        ``keys[g][i]``: the key block ``i`` of group ``g`` is cached under
        (every block up to the request's last token); ``parents[g][i]`` the
        key before it, which only ``flop-aware`` reads. The hot loop of every
        sweep, so allocating (unhashed blocks first, then evicting), ``lru``'s
        evictions (the front of the free queue), caching and a state's move are
        written out here rather than called.
        """
        mamba, give = self._mamba, self._give
        free, cached, counts, peaks, ends = self.free, self.cached, self.count, self.peak, self.ends
        lru, blocks = self.eviction == "lru", self._blocks
        # What _cache and _give do beyond the books: another order's or a test's records.
        extra = (ends is not None and not lru) or self.eviction in ("fifo", "flop-aware")
        remember = self.eviction in ("fifo", "belady")
        sizes, width = self._sizes, len(self._sizes)
        pop, add, discard = free.popitem, cached.add, cached.discard
        states, caching = self._states, self.caching
        inline = lru and states is None  # lru's evictions written out below
        running = [False] * width  # a Mamba group's state block taken afresh this step
        for count, grow, after in plan.steps:
            fresh = 0
            for index in mamba:  # a state continues in place only in a private block
                owned = slots[index]
                if len(owned) != 1 or owned[0] != PRIVATE:
                    running[index] = True
                    fresh += 1
            if states is None:
                count += fresh
            elif fresh:
                self._new_states(fresh)
            if count:
                spare = self.usable - self.held - len(free)  # unhashed blocks
                if count > spare:
                    if count > spare + len(free):
                        raise InvalidArgument(
                            "num_blocks",
                            self.usable + 1,
                            f"{count} blocks asked, {spare + len(free)} free",
                        )
                    if inline:  # the front of the free queue
                        for _ in range(count - spare):
                            key = pop(last=False)[0]
                            discard(key)
                            counts[key % width] -= 1
                            if ends is not None:
                                del ends[key]
                        self.evictions += count - spare
                    elif lru:
                        self._evict_with_states(count - spare)
                    else:
                        for _ in range(count - spare):
                            self._evict(self._victim())
                self.held += count
                for index, more in grow:
                    slots[index].extend(repeat(PRIVATE, more))
            for kind, index, work in after:
                owned = slots[index]
                if kind == RELEASE:
                    first, end = work[0]
                    gone = owned[first:end]
                    owned[first:end] = repeat(NULL, end - first)
                    give(reversed(gone))
                    continue
                if kind == STATE and running[index]:  # the state moves on from its block
                    running[index] = False
                    if states is not None:
                        self._give_states(owned)
                    elif owned:
                        self.held -= 1
                        key = owned[0]
                        if key >= 0:
                            free[key] = blocks.get(key) if blocks else None
                            if remember:
                                self._remember_free(key)
                    owned[:] = [PRIVATE]
                if not work or not caching:
                    continue
                # Offer blocks (slot, block index): a private one is cached under its key
                # unless another block holds that key already.
                group_keys, count, size = keys[index], counts[index], sizes[index]
                for slot, block in work:
                    if owned[slot] != PRIVATE:
                        continue
                    key = group_keys[block]
                    if key in cached:
                        continue
                    add(key)
                    owned[slot] = key
                    count += 1
                    if extra:
                        self._cached(key, index, block, parents[index][block] if parents else -1)
                    elif ends is not None:
                        ends[key] = (block + 1) * size
                counts[index] = count
                if count > peaks[index]:
                    peaks[index] = count
        if states is None:
            for owned in slots:
                give(reversed(owned))
            return
        for index, owned in enumerate(slots):
            (self._give_states if index in mamba else give)(reversed(owned))

    def belady_refresh(self, keys: Sequence[Sequence[int]]) -> None:
        """``belady``: the free keys this request's prompt contains get their next use anew."""
        if self.eviction != "belady":
            return
        free = self.free
        for blocks in keys:
            for key in blocks:
                if key in free:
                    self._push_next_use(key)

    def usage(self) -> Usage:
        return Usage(self.evictions, tuple(self.count), tuple(self.peak))
