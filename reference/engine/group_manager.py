"""The manager of one KV-cache group's blocks, per request: what every kind does.

Lookups through ``core.GroupLookup``, bound once per group; the cached blocks
a hit reuses; slots for each chunk; caching through the retention policy (its
reachable boundaries, asked once per request when declared
``fixed_boundaries``, then its block mask). This is the whole of a
full-attention group; :mod:`.group_managers` has the kinds that release
blocks (a sliding window) or hold one state (Mamba), and picks one per group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from junction.core import Finder, GroupKind, GroupLookup, GroupSpec, HybridGeometry
from junction.reference.engine.block_pool import Block, BlockPool
from junction.reference.engine.invariants import InvariantViolation
from junction.reference.engine.policy import CheckedPolicy
from junction.reference.engine.request import Request

__all__ = ["BlockIndex", "GroupManager"]


class BlockIndex(Protocol):
    """Something a lookup can also find blocks in (the external tier, ``tier.py``)."""

    def lookup_predicate(
        self, group_id: int, hashes: Sequence[int], *, inner: bool = False
    ) -> Callable[[int], bool]: ...


class GroupManager:
    """Blocks of one group, per request (index = block index in the request's chain).

    Each says through :meth:`quiet_until` how far a request can run before
    it has any work for it and, if ``moves_state``, through
    :meth:`quiet_state` which block's state position such quiet chunks move
    (Mamba's).
    """

    moves_state = False

    def __init__(
        self,
        group_id: int,
        spec: GroupSpec,
        geometry: HybridGeometry,
        pool: BlockPool,
        policy: CheckedPolicy,
    ):
        self.group_id = group_id
        self.policy = policy
        self.spec = spec
        self.block_size = spec.block_size
        self.geometry = geometry
        self.pool = pool
        self.blocks: dict[int, list[Block]] = {}
        self.num_cached: dict[int, int] = {}
        # A policy declaring fixed boundaries is asked once per request and
        # junction: per request, the prompt length and junction it was asked
        # with and its answer (Engine.check asks again).
        self._fixed_boundaries = policy.fixed_boundaries
        self.known_boundaries: dict[int, tuple[int, int, tuple[int, ...]]] = {}
        sub_block_sizes = geometry.sub_block_full_attention_sizes
        self._full = spec.kind is GroupKind.FULL
        self._sub_block_hits = spec.kind is GroupKind.FULL and spec.block_size in sub_block_sizes
        # core's lookup bound once (validated here, not per admission). With
        # sub-block hits it matches hash units: a full-attention group of them.
        lookup_spec = GroupSpec.full(geometry.hash_block_size) if self._sub_block_hits else spec
        self._lookup = GroupLookup(lookup_spec, geometry.alignment_tokens)

    # -- lookup ---------------------------------------------------------------
    def finder(self, request: Request, also: BlockIndex | None = None) -> Finder:
        """The group's finder over the local cache, and over ``also`` too when given."""
        chain = request.chain
        # Full attention with partial hits matches hash units, inside blocks too.
        inner = self._sub_block_hits
        hashes = chain.hashes if inner else chain.block_hashes(self.block_size)
        is_cached = self.pool.lookup_predicate(self.group_id, hashes, inner=inner)
        if also is None:
            # Full attention's leading run, counted in C (the other kinds ask a few blocks).
            run = self.pool.lookup_run(self.group_id, hashes, inner=inner) if self._full else None
            return self._lookup.finder(is_cached, run)
        local, elsewhere = is_cached, also.lookup_predicate(self.group_id, hashes, inner=inner)

        def either(index: int) -> bool:
            return local(index) or elsewhere(index)

        return self._lookup.finder(either)

    @property
    def sub_block_hits(self) -> bool:
        """Whether hits may end inside this group's blocks (full attention, partial hits)."""
        return self._sub_block_hits

    def cached_blocks(self, request: Request, first: int, end: int) -> list[Block]:
        """The cached blocks ``[first, end)`` of the request's chain a hit reuses."""
        hashes = request.chain.block_hashes(self.block_size)[first:end]
        found = self.pool.lookup_many(self.group_id, hashes)
        if len(hashes) < end - first or None in found:
            index = first + (found.index(None) if None in found else len(hashes))
            raise InvariantViolation(
                "a hit reuses only cached blocks",
                f"group {self.group_id}: block {index} of {request} is not cached",
                self.pool.dump(),
            )
        return found  # type: ignore[return-value]  # no None: checked above

    def attach_hit(self, request: Request, hit_length: int) -> None:
        """Take references to the cached blocks a hit of ``hit_length`` tokens reuses."""
        full = hit_length // self.block_size
        hit = self.cached_blocks(request, 0, full)
        self.pool.touch(hit)
        self.blocks[request.request_id] = hit
        self.num_cached[request.request_id] = full

    # -- slots ----------------------------------------------------------------
    def blocks_needed(self, request: Request, num_tokens: int) -> int:
        """New blocks needed so tokens ``[0, num_tokens)`` have slots."""
        held = len(self.blocks[request.request_id])
        return max(-(-num_tokens // self.block_size) - held, 0)  # cdiv, inlined

    def allocate(self, request: Request, num_tokens: int, blocks: list[Block]) -> None:
        """Take ``blocks``, the :meth:`blocks_needed` new blocks the pool gave for this chunk."""
        self.blocks[request.request_id] += blocks

    # -- after a step ---------------------------------------------------------
    def cache_full_blocks(self, request: Request) -> None:
        """Offer the newly full blocks to the cache, through the mask."""
        rid, size = request.request_id, self.block_size
        first = self.num_cached[rid]
        computed = request.num_computed_tokens
        if computed < (first + 1) * size:  # no block became full (most decode steps)
            return
        blocks, chain = self.blocks[rid], request.chain
        full = min(computed, chain.num_hashed_tokens) // size
        full = min(full, len(blocks))
        if full <= first:
            return
        mask = self.mask(request, first, full)
        run = chain.block_run(first, full, size)  # parent, then each block's hash
        null, tokens = self.pool.null_block, request.tokens
        entries = [
            (
                blocks[index],
                run[k + 1],
                run[k],
                tokens[index * size : (index + 1) * size],
                (index + 1) * size,
            )
            for k, index in enumerate(range(first, full))
            if blocks[index] is not null and (mask is None or mask[k])
        ]
        self.pool.cache_many(self.group_id, entries, chain.unit, self._sub_block_hits)
        self.num_cached[rid] = full

    def after_step(self, request: Request) -> None:
        """Full attention does nothing else after a step."""
        self.cache_full_blocks(request)

    def track_decode(self, request: Request, lowest: int, recent: int) -> None:
        """Hear the lowest position (on the hit grid) the request's next turn may still
        resume at, after a step at or past the prefill's end (decode checkpoints on),
        and ``recent``, the lowest a later answer may lie at (the lag below the
        computed tokens; ``lowest`` lies below it only under speculative steps).
        Full attention holds every block to the end anyway: nothing to do."""

    def publish(self, request: Request, positions: Sequence[int]) -> list[Block]:
        """The request finished: cache what its next turn reads at ``positions`` (the
        policy's decode checkpoints) through the mask; the blocks it cached. Full
        attention cached every full block already."""
        return []

    def quiet_until(self, request: Request) -> int:
        """The furthest chunk end that needs no new block here and makes no block full.

        Up to it :meth:`blocks_needed` is 0 and :meth:`after_step` does
        nothing; both depend only on this request's own blocks, which only
        this manager's calls for it change.
        """
        rid, size = request.request_id, self.block_size
        return min(len(self.blocks[rid]) * size, (self.num_cached[rid] + 1) * size - 1)

    def quiet_state(self, request: Request) -> Block | None:
        """The block whose state position a quiet chunk sets to its end (None: none)."""
        return None

    def mask(self, request: Request, start_block: int, end_block: int) -> Sequence[bool] | None:
        """The policy's mask for blocks ``[start_block, end_block)`` of this group."""
        geometry, spec, policy = self.geometry, self.spec, self.policy
        if not self._fixed_boundaries:
            boundaries = policy.reachable_boundaries(geometry, spec, request)
        else:
            rid = request.request_id
            prompt, junction = request.num_prompt_tokens, request.shared_prefix_boundary
            known = self.known_boundaries.get(rid)
            if known is not None and known[0] == prompt and known[1] == junction:
                boundaries = known[2]
            else:
                boundaries = policy.reachable_boundaries(geometry, spec, request)
                self.known_boundaries[rid] = (prompt, junction, boundaries)
        return policy.block_mask(geometry, spec, request, start_block, end_block, boundaries)

    def cache_block(self, request: Request, block: Block, index: int) -> None:
        size, chain = self.block_size, request.chain
        block_hash = chain.block_hash(index, size)
        if block_hash is None:
            raise InvariantViolation(
                "only full blocks are cached",
                f"group {self.group_id}: block {index} of {request} is not full "
                f"({chain.num_hashed_tokens} tokens hashed)",
            )
        tokens = request.tokens[index * size : (index + 1) * size]
        self.pool.cache(
            block,
            self.group_id,
            block_hash,
            chain.parent_of_block(index, size),
            tokens,
            chain.unit,
            index_inner_units=self._sub_block_hits,
            end=(index + 1) * size,
        )

    def check_boundaries(self, request: Request) -> None:
        """The policy's fixed boundaries for this request, if reused, asked again
        (``CheckedPolicy.check_fixed_boundaries``: :class:`PolicyError` if they changed)."""
        known = self.known_boundaries.get(request.request_id)
        if (
            known is not None
            and known[0] == request.num_prompt_tokens
            and known[1] == request.shared_prefix_boundary
        ):
            self.policy.check_fixed_boundaries(self.geometry, self.spec, request, known[2])

    def free(self, request: Request) -> None:
        blocks = self.blocks.pop(request.request_id, [])
        self.num_cached.pop(request.request_id, None)
        self.known_boundaries.pop(request.request_id, None)
        self.pool.free(reversed(blocks))  # tail first: evicted first

    def held(self, request_id: int) -> list[Block]:
        return [b for b in self.blocks.get(request_id, ()) if b is not self.pool.null_block]

    def slot_tokens(self, request_id: int) -> int:
        """Tokens the request's blocks have slots for (released window blocks count)."""
        return len(self.blocks.get(request_id, ())) * self.block_size
