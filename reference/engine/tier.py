"""An external KV store tier several engine instances share (Mooncake, LMCache-style offload).

:class:`ExternalTier` holds blocks keyed like the pool's cache, evicting the
least recently saved or loaded (a store sees puts and gets, no reference
counts). Each instance reaches it through a :class:`TierConnector` with two
paths, as vLLM's KV connectors: **save** after each prefill chunk, the newly
full blocks the retention policy's mask keeps (what the mask is handed is the
:class:`TierSaving`); **load** at admission, where a lookup over "local or
stored" reaches further than the local cache, the missing blocks are copied
in as cached blocks (vLLM's ``num_external_computed_tokens``). A Mamba state
is saved only at a chunk end on its grid, with its position, so a load never
resumes a state that does not exist. Decode blocks stay local unless the
tier takes **decode checkpoints** (``ExternalTier(decode_checkpoints=True)``,
off by default; every instance sharing it then saves them): at a request's
finish (vLLM's ``request_finished``, before its blocks are freed), its
answer's blocks (vLLM's ``offload_prompt_only: false``) and then what a next
turn landing at each published checkpoint reads are stored from the local
cache, the Mamba state with its position, so a next turn on another instance
resumes there (docs/design/decode-checkpoints-in-tier.md). Loads land before
the first chunk: all a simulator of the cache's decisions needs.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Callable, Sequence

import attrs

from junction.core import GroupKind, HybridGeometry, InvalidArgument
from junction.reference.engine.block_pool import Block, BlockPool
from junction.reference.engine.coordinator import Coordinator
from junction.reference.engine.group_managers import GroupManager, MambaManager
from junction.reference.engine.hash_chain import unit_hashes
from junction.reference.engine.invariants import InvariantViolation
from junction.reference.engine.policy import CheckedPolicy
from junction.reference.engine.request import Request

__all__ = ["ExternalTier", "StoredBlock", "TierConnector", "TierSaving"]


class TierSaving(enum.Enum):
    """Which reachable boundaries the save path hands the retention policy's mask.

    * ``policy``: the policy's own, as for the local cache; the ``junction``
      policy's include the junction, so its state (and sliding-window tail)
      reaches the store and another instance can resume there.
    * ``vllm-0.33``: what vLLM 0.33.0's Mooncake store connector does. Its
      ``store_mask`` hands ``reachable_block_mask`` the replay boundaries only
      (``replay_boundaries(P, ...)``, no junction); Mamba groups are left out
      of that mask and save, through the boundary-state hand-off, every state
      the local cache retained (the junction's included). Modelled as the
      policy's boundaries of the same request with no junction, for every
      group but Mamba.
    """

    POLICY = "policy"
    VLLM_0_33 = "vllm-0.33"


@attrs.frozen
class StoredBlock:
    """What the store holds for one block: what its hash was computed from, and for a
    Mamba group the position whose state it is."""

    parent: int
    tokens: tuple[int, ...]
    unit: int
    state_position: int | None
    index_inner: bool
    end: int  # the prefix length the block ends (what eviction may read once loaded)


class ExternalTier:
    """The shared store: ``capacity`` blocks, least recently used evicted first.

    ``decode_checkpoints``: every connector to it also saves the decode checkpoints
    a finished request publishes (:meth:`TierConnector.request_finished`); the
    store's option, so the instances sharing it save alike (off: decode blocks stay
    local)."""

    def __init__(self, capacity: int, *, decode_checkpoints: bool = False) -> None:
        if type(capacity) is not int or capacity < 1:
            raise InvalidArgument("capacity", capacity, "a tier holds at least one block")
        if type(decode_checkpoints) is not bool:
            rule = "must be True or False"
            raise InvalidArgument("decode_checkpoints", decode_checkpoints, rule)
        self.capacity = capacity
        self.decode_checkpoints = decode_checkpoints
        self.blocks: OrderedDict[tuple[int, int], StoredBlock] = OrderedDict()
        # Hash units strictly inside stored blocks (sub-block hits), to the block's key.
        self.inner: dict[tuple[int, int], tuple[int, int]] = {}
        self.saves = 0  # blocks written (a block already stored is only refreshed)
        self.loads = 0  # blocks copied into a local pool
        self.evictions = 0
        self.peak = 0

    @property
    def occupancy(self) -> float:
        """Stored blocks over capacity."""
        return len(self.blocks) / self.capacity

    def blocks_per_group(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for group_id, _ in self.blocks:
            counts[group_id] = counts.get(group_id, 0) + 1
        return counts

    def put(self, key: tuple[int, int], block: StoredBlock) -> None:
        """Store (or refresh) one block; evicts the least recently used when full."""
        blocks = self.blocks
        if key in blocks:
            blocks.move_to_end(key)
            return
        if len(blocks) >= self.capacity:
            self._evict(*blocks.popitem(last=False))
        blocks[key] = block
        self.saves += 1
        if block.index_inner:
            for inner_hash in _inner_units(block):
                self.inner.setdefault((key[0], inner_hash), key)
        self.peak = max(self.peak, len(blocks))

    def _evict(self, key: tuple[int, int], block: StoredBlock) -> None:
        if block.index_inner:
            for inner_hash in _inner_units(block):
                if self.inner.get((key[0], inner_hash)) == key:
                    del self.inner[(key[0], inner_hash)]
        self.evictions += 1

    def get(self, key: tuple[int, int]) -> StoredBlock | None:
        """The stored block, made most recently used; ``None`` if not stored."""
        block = self.blocks.get(key)
        if block is not None:
            self.blocks.move_to_end(key)
        return block

    def lookup_predicate(
        self, group_id: int, hashes: Sequence[int], *, inner: bool = False
    ) -> Callable[[int], bool]:
        """``is_stored(index)``: whether ``hashes[index]`` ends a stored block (or, with
        ``inner``, a hash unit inside one), for a finder."""
        blocks, inner_units, count = self.blocks, self.inner, len(hashes)

        def is_stored(index: int) -> bool:
            if index >= count:
                return False
            key = (group_id, hashes[index])
            return key in blocks or (inner and key in inner_units)

        return is_stored

    def check(self) -> None:
        """The store's invariants: within capacity, inner units point at stored blocks."""
        if len(self.blocks) > self.capacity:
            raise InvariantViolation(
                "the tier holds at most its capacity",
                f"{len(self.blocks)} blocks stored, capacity {self.capacity}",
            )
        for (group_id, inner_hash), key in self.inner.items():
            block = self.blocks.get(key)
            if key[0] != group_id or block is None or inner_hash not in _inner_units(block):
                raise InvariantViolation(
                    "an inner hash unit of the tier lies inside a stored block",
                    f"unit {inner_hash} of group {group_id} -> {key}",
                )


def _stored(block: Block) -> StoredBlock:
    """What the store keeps of a locally cached block."""
    return StoredBlock(
        block.parent, block.tokens, block.unit, block.state_position, block.indexes_inner, block.end
    )


def _inner_units(block: StoredBlock) -> list[int]:
    """The chain hashes of the hash units strictly inside a stored block."""
    return unit_hashes(block.parent, block.tokens, block.unit)[:-1]


@attrs.frozen
class _WithoutJunction:
    """A request as the ``vllm-0.33`` save path shows it to the policy: no junction."""

    num_prompt_tokens: int
    num_tokens: int
    num_computed_tokens: int
    shared_prefix_boundary: int = 0


class TierConnector:
    """One engine instance's save and load paths to a shared :class:`ExternalTier`."""

    def __init__(
        self,
        tier: ExternalTier,
        saving: TierSaving,
        geometry: HybridGeometry,
        pool: BlockPool,
        coordinator: Coordinator,
        policy: CheckedPolicy,
    ) -> None:
        self.tier = tier
        self.saving = saving
        self.geometry = geometry
        self.pool = pool
        self.coordinator = coordinator
        self.policy = policy
        # Per request in prefill: per group, the blocks already offered to the store.
        self.offered: dict[int, list[int]] = {}

    # -- load -------------------------------------------------------------------
    def load(self, request: Request) -> int:
        """Copy into the local pool what the store adds to ``request``'s hit; the tokens gained.

        Also restarts the request's save progress (at its admission hit). Loads nothing
        when the pool cannot take the missing blocks without evicting the
        ones the hit reads (the hit is then the local one).
        """
        coordinator = self.coordinator
        local = coordinator.lookup(request).hit_length
        hit = coordinator.lookup(request, self.tier).hit_length
        self.offered.pop(request.request_id, None)
        if hit > local and not self._materialize(request, hit):
            hit = local
        return hit - local

    def _materialize(self, request: Request, hit: int) -> bool:
        """Put every block a hit at ``hit`` reads into the local pool, as cached blocks."""
        pool, tier = self.pool, self.tier
        present: list[Block] = []
        missing: list[tuple[int, int, StoredBlock]] = []  # (group, block hash, stored)
        for manager in self.coordinator.managers:
            for key, inner in self._read_by_hit(manager, request, hit):
                local = pool.cached.get(key) or (pool.inner.get(key) if inner else None)
                if local is not None:
                    present.append(local)
                    continue
                stored_key = tier.inner.get(key, key) if inner else key
                stored = tier.get(stored_key)
                if stored is not None:
                    missing.append((manager.group_id, stored_key[1], stored))
        pool.touch(present)  # out of the free queue: loading must not evict them
        if len(missing) > pool.num_free:
            pool.free(present)
            return False
        loaded = pool.allocate(len(missing))
        for block, (group_id, block_hash, stored) in zip(loaded, missing, strict=True):
            pool.cache(
                block,
                group_id,
                block_hash,
                stored.parent,
                stored.tokens,
                stored.unit,
                index_inner_units=stored.index_inner,
                end=stored.end,
            )
            block.state_position = stored.state_position
        tier.loads += len(missing)
        pool.free([*present, *loaded])
        return True

    def _read_by_hit(
        self, manager: GroupManager, request: Request, hit: int
    ) -> list[tuple[tuple[int, int], bool]]:
        """The keys a lookup landing at ``hit`` reads in ``manager``'s group, each with
        whether it names a hash unit inside a block (sub-block hits) rather than a block.

        Full attention: every block below the hit; a sliding window: its
        window's blocks; under EAGLE one block more, which the lookup matches
        and drops. With sub-block hits full attention reads hash units instead
        past its last whole block: the one the hit ends at and, under EAGLE,
        the next (its drop is one unit). Mamba: the state at the hit.
        """
        spec, size, group_id = manager.spec, manager.block_size, manager.group_id
        chain, eagle = request.chain, self.geometry.use_eagle
        hashes = chain.block_hashes(size)
        if spec.kind is GroupKind.MAMBA:
            return [((group_id, hashes[hit // size - 1]), False)]
        units = manager.sub_block_hits
        end = min(hit // size + (eagle and not units), len(hashes))
        first = spec.first_window_block(hit) if spec.kind is GroupKind.SLIDING_WINDOW else 0
        keys = [((group_id, hashes[index]), False) for index in range(first, end)]
        if units:
            unit = chain.unit
            wanted = [hit // unit - 1] if hit % size else []
            wanted += [hit // unit] if eagle and hit // unit < len(chain.hashes) else []
            keys += [((group_id, chain.hashes[index]), True) for index in wanted]
        return keys

    # -- save -------------------------------------------------------------------
    def save(self, request: Request) -> None:
        """After a prefill chunk: offer the blocks that became full, through the mask."""
        offered = self.offered.get(request.request_id)
        if offered is None:  # the first chunk since admission: blocks below the hit are cached
            hit = request.hit_length
            offered = self.offered[request.request_id] = [
                hit // group.block_size for group in self.geometry.groups
            ]
        computed = request.num_computed_tokens
        chain, tokens = request.chain, request.tokens
        hashed = chain.num_hashed_tokens
        for group_id, group in enumerate(self.geometry.groups):
            size, first = group.block_size, offered[group_id]
            if group.kind is GroupKind.MAMBA:
                # A state exists at this chunk's end, and at an internal prefill
                # checkpoint the chunk wrote (the manager's last, when not yet offered).
                manager = self.coordinator.managers[group_id]
                rid = request.request_id
                written = manager.written.get(rid, 0) if isinstance(manager, MambaManager) else 0
                if written and written // size > first:
                    mask = self._mask(group_id, request, first, written // size)
                    if mask is None or mask[-1]:
                        self._put(group_id, request, written // size - 1, written)
                    first = offered[group_id] = written // size
                if computed % size or computed > hashed or computed // size <= first:
                    continue
                end = computed // size
                mask = self._mask(group_id, request, first, end)
                if mask is None or mask[-1]:
                    self._put(group_id, request, end - 1, computed)
                offered[group_id] = end
                continue
            end = min(computed, hashed) // size
            if end <= first:
                continue
            mask = self._mask(group_id, request, first, end)
            run = chain.block_run(first, end, size)
            inner = self.coordinator.managers[group_id].sub_block_hits
            for k, index in enumerate(range(first, end)):
                if mask is None or mask[k]:
                    block = tokens[index * size : (index + 1) * size]
                    stored = StoredBlock(
                        run[k], tuple(block), chain.unit, None, inner, (index + 1) * size
                    )
                    self.tier.put((group_id, run[k + 1]), stored)
            offered[group_id] = end
        if computed >= request.prefill_end:
            del self.offered[request.request_id]

    def _put(self, group_id: int, request: Request, index: int, position: int) -> None:
        size, chain = self.geometry.groups[group_id].block_size, request.chain
        block_hash = chain.block_hash(index, size)
        if block_hash is None:  # a state at or below the hashed tokens: always hashed
            raise InvariantViolation(
                "only full blocks are saved", f"block {index} of {request} is not hashed"
            )
        tokens = tuple(request.tokens[index * size : (index + 1) * size])
        parent = chain.parent_of_block(index, size)
        stored = StoredBlock(parent, tokens, chain.unit, position, False, (index + 1) * size)
        self.tier.put((group_id, block_hash), stored)

    def _mask(
        self, group_id: int, request: Request, start_block: int, end_block: int
    ) -> Sequence[bool] | None:
        """The policy's mask for the blocks ``[start_block, end_block)`` the store may take."""
        geometry, policy = self.geometry, self.policy
        group = geometry.groups[group_id]
        seen: Request | _WithoutJunction = request
        if self.saving is TierSaving.VLLM_0_33 and group.kind is not GroupKind.MAMBA:
            seen = _WithoutJunction(
                request.num_prompt_tokens, request.num_tokens, request.num_computed_tokens
            )
        boundaries = policy.reachable_boundaries(geometry, group, seen)
        return policy.block_mask(geometry, group, seen, start_block, end_block, boundaries)

    def request_finished(self, request: Request, positions: Sequence[int]) -> None:
        """The request finished, its blocks still held; ``positions``: its published
        decode checkpoints (none unless its policy publishes on its finish). With the
        tier's ``decode_checkpoints``, store :meth:`answer_blocks`, then every block
        a next turn landing at a checkpoint reads (:meth:`checkpoint_blocks`), as
        the local cache holds them (the local mask chose; a Mamba state with its
        position). The checkpoints' blocks go last, so the most recently saved,
        the last a nearly full tier evicts."""
        if not self.tier.decode_checkpoints:
            return
        put = self.tier.put
        for block in (*self.answer_blocks(request), *self.checkpoint_blocks(request, positions)):
            if block.key is not None:
                put(block.key, _stored(block))

    def checkpoint_blocks(self, request: Request, positions: Sequence[int]) -> list[Block]:
        """Every block the local cache holds that a hit at one of ``positions`` reads,
        in every group (as the load path lists them): those the publication cached
        and those cached before it (a window's or a state's in the prompt, which
        the tier may never have taken or since evicted)."""
        pool, found, seen = self.pool, list[Block](), set[int]()
        for position in positions:
            for manager in self.coordinator.managers:
                for key, inner in self._read_by_hit(manager, request, position):
                    block = pool.cached.get(key) or (pool.inner.get(key) if inner else None)
                    if block is not None and block.block_id not in seen:
                        seen.add(block.block_id)
                        found.append(block)
        return found

    def answer_blocks(self, request: Request) -> list[Block]:
        """Every block of the request's answer the local cache holds, in every group:
        from where the prompt's whole blocks end (below, the prefill's saves chose,
        through the saving's mask) to its computed tokens."""
        chain, cached, found = request.chain, self.pool.cached, []
        for group_id, group in enumerate(self.geometry.groups):
            size = group.block_size
            end = min(request.num_computed_tokens, chain.num_hashed_tokens) // size
            for index in range(request.num_prompt_tokens // size, end):
                block_hash = chain.block_hash(index, size)
                block = None if block_hash is None else cached.get((group_id, block_hash))
                if block is not None:
                    found.append(block)
        return found

    def forget(self, request: Request) -> None:
        """Drop the save progress of a request leaving before its prefill ended."""
        self.offered.pop(request.request_id, None)
