"""Per-group managers: which blocks a request holds in each KV-cache group.

Full attention holds a block per ``B`` tokens and can reuse any cached
prefix; a sliding window holds only the blocks its window still sees,
releasing the rest after the caching decision; a Mamba group in align mode
holds one recurrent state, which exists only at a chunk end, and the next
chunk continues in a fresh block. Caching goes through the retention policy
(its reachable boundaries, asked once per request when declared
``fixed_boundaries``, then its block mask); lookups through
``core.GroupLookup``, bound once per group. The managers hold no decision
arithmetic of their own. What every kind does, and the whole of full
attention, is :class:`.group_manager.GroupManager`; here are the two kinds
that differ from it and :func:`make_manager`, which picks one per group.
"""

from __future__ import annotations

from collections.abc import Sequence

from junction.core import CrossedGridPoints, GroupKind, GroupSpec, HybridGeometry, InvalidArgument
from junction.reference.engine.block_pool import Block, BlockPool
from junction.reference.engine.group_manager import BlockIndex, GroupManager
from junction.reference.engine.invariants import InvariantViolation, MambaStateMissing
from junction.reference.engine.policy import CheckedPolicy
from junction.reference.engine.request import Request

__all__ = ["BlockIndex", "GroupManager", "MambaStateMissing", "make_manager"]


class SlidingWindowManager(GroupManager):
    """``released[rid]``: the leading blocks already given back (null in ``blocks``)."""

    def __init__(
        self,
        group_id: int,
        spec: GroupSpec,
        geometry: HybridGeometry,
        pool: BlockPool,
        policy: CheckedPolicy,
    ):
        super().__init__(group_id, spec, geometry, pool, policy)
        if spec.window is None:
            raise InvalidArgument("spec", spec, "a sliding-window manager needs a window")
        self.window = spec.window
        self.released: dict[int, int] = {}
        # Decode checkpoints: the first block the next turn may still read (held), and,
        # when its position lies below the held run (speculative steps), the blocks the
        # window reads there, held one reference more (index -> block).
        self.hold: dict[int, int] = {}
        self.kept: dict[int, dict[int, Block]] = {}
        self._peek = 1 if spec.eagle_lookup(geometry.use_eagle) else 0

    def attach_hit(self, request: Request, hit_length: int) -> None:
        full = hit_length // self.block_size
        first = self.spec.first_window_block(hit_length)
        hit = self.cached_blocks(request, first, full)
        self.pool.touch(hit)
        self.blocks[request.request_id] = [self.pool.null_block] * first + hit
        self.num_cached[request.request_id] = full
        self.released[request.request_id] = first

    def after_step(self, request: Request) -> None:
        self.cache_full_blocks(request)
        rid = request.request_id
        blocks = self.blocks[rid]
        done = self.released.get(rid, 0)
        first = min(self.spec.first_window_block(request.num_computed_tokens), len(blocks))
        hold = self.hold.get(rid)
        if hold is not None and hold < first:
            first = hold
        if first > done:
            null = self.pool.null_block
            gone = [b for b in blocks[done:first] if b is not null]
            blocks[done:first] = [null] * (first - done)
            self.released[rid] = first
            self.pool.free(reversed(gone))

    def quiet_until(self, request: Request) -> int:
        # And no block leaves the window: GroupSpec.first_window_block(p) stays
        # at or below the released count while p - W + 1 < (released + 1) * B.
        released = self.released.get(request.request_id, 0)
        leaves = (released + 1) * self.block_size + self.window - 2
        return min(super().quiet_until(request), leaves)

    def track_decode(self, request: Request, lowest: int, recent: int) -> None:
        """Hold the window blocks a next turn resuming at ``lowest`` or above reads: the
        run from there, or, when ``lowest`` lies below ``recent``, the run from
        ``recent`` and the blocks the window reads at ``lowest`` (kept apart).

        A ``lowest`` below where the decode began (``floor_G`` of it, no step having
        left a state since) is the prompt's side, kept as with one token a step: the
        blocks the prefill released there stay released (its caching decision
        serves), so none is kept; every position the decode reached is kept."""
        rid = request.request_id
        first = self.spec.first_window_block
        self.hold[rid] = first(max(lowest, recent))
        kept = self.kept.get(rid, {})
        blocks, null = self.blocks[rid], self.pool.null_block
        wanted = range(first(lowest), lowest // self.block_size + self._peek)
        begun = request.decode_states_from
        released = begun is not None and lowest < begun
        released = released and any(blocks[i] is null for i in wanted if i not in kept)
        if lowest >= recent or not lowest or released:
            wanted = range(0)
        if not kept and not wanted:
            return
        kept = self.kept.setdefault(rid, kept)
        stale = [index for index in kept if index not in wanted]
        if stale:
            self.pool.free([kept.pop(index) for index in stale])
        for index in wanted:
            if index not in kept:
                block = blocks[index]
                if block is null:
                    raise InvariantViolation(
                        "a decode checkpoint's window blocks are held until it is kept",
                        f"group {self.group_id}: {request}: block {index} for {lowest} "
                        "was released",
                        self.pool.dump(),
                    )
                self.pool.touch([block])
                kept[index] = block

    def publish(self, request: Request, positions: Sequence[int]) -> list[Block]:
        """Cache the held full blocks the mask marks for the decode checkpoints."""
        rid, size = request.request_id, self.block_size
        blocks = self.blocks[rid]
        full = min(request.num_computed_tokens, request.chain.num_hashed_tokens) // size
        full = min(full, len(blocks))
        start = self.released.get(rid, 0)
        if full <= start or not positions:
            return []
        policy, geometry, spec = self.policy, self.geometry, self.spec
        offered: list[Block] = []
        for index, block in sorted(self.kept.get(rid, {}).items()):
            if index < start and block.key is None:  # below the held run
                mask = policy.block_mask(geometry, spec, request, index, index + 1, positions)
                if mask is None or mask[0]:
                    self.cache_block(request, block, index)
                    offered.append(block)
        mask = policy.block_mask(geometry, spec, request, start, full, positions)
        null = self.pool.null_block
        for k, index in enumerate(range(start, full)):
            block = blocks[index]
            if block is not null and block.key is None and (mask is None or mask[k]):
                self.cache_block(request, block, index)
                offered.append(block)
        return [block for block in offered if block.key is not None]

    def free(self, request: Request) -> None:
        self.released.pop(request.request_id, None)
        self.hold.pop(request.request_id, None)
        kept = self.kept.pop(request.request_id, None)
        if kept:
            self.pool.free(kept.values())
        super().free(request)

    def held(self, request_id: int) -> list[Block]:
        return super().held(request_id) + list(self.kept.get(request_id, {}).values())


class MambaManager(GroupManager):
    """Align mode: per request, the latest state and, during a step, the running one.

    A chunk continues in the latest state's block when that block is private
    and uncached (overwriting it loses nothing); otherwise it starts in a
    fresh block (``running``), into which the latest state is copied, and the
    old block is released after the step (staying in the cache if it was
    cached).

    Internal prefill checkpoints (a policy with ``writes_prefill_checkpoints``):
    the chunk that ends the prefill may also write the state at a position
    inside it (``CheckedPolicy.prefill_checkpoint``). When that position is on
    this group's block grid (a state elsewhere serves no Mamba hit) the chunk
    takes one more block (``checkpoint``), the state is written there and
    offered to the mask like a chunk end's, and the block is released after
    the step (staying in the cache if it was cached). Nothing of this runs,
    not even the question, for a policy without it.

    Decode checkpoints (a policy with ``keeps_decode_checkpoints``): once the
    request reaches its prefill's end, the state at each hit-grid point it
    reaches is kept as a private copy (``pins``; uncached, so no other request
    can find it) while its next turn may still resume there, and those the
    mask marks for the policy's decode checkpoints are cached when it
    finishes (:meth:`publish`). A preempted or aborted request gives its
    copies back uncached: it publishes nothing.

    Speculative decode steps with crossed block ends captured (``crossed``):
    a decode step that may pass a block end without ending there takes one
    more block (``spare``, vLLM's speculative slot), into which the state at
    the deepest block end it passed is written once the accepted count is
    known (vLLM's ``postprocess_mamba``); it is offered to the mask and pinned
    like a step end's, then released. Left uncached, a passed block end gets
    nothing: only a step's end holds a state.
    """

    moves_state = True

    def __init__(
        self,
        group_id: int,
        spec: GroupSpec,
        geometry: HybridGeometry,
        pool: BlockPool,
        policy: CheckedPolicy,
        crossed: CrossedGridPoints | None = None,
    ):
        super().__init__(group_id, spec, geometry, pool, policy)
        self.crossed = crossed
        self._captures = crossed is CrossedGridPoints.CAPTURED
        self.spare: dict[int, Block] = {}  # during a decode step that may pass a block end
        self.latest: dict[int, Block] = {}
        self.running: dict[int, Block] = {}
        self.checkpoint: dict[int, tuple[Block, int]] = {}  # during a step
        # Per request, the last such state written (what an observer, the harness, reads).
        self.written: dict[int, int] = {}
        self._writes_checkpoints = policy.writes_prefill_checkpoints
        # Decode checkpoints (vLLM PR #50551's model): per request, private copies of
        # the states at grid points reached since the prefill's end that its next
        # turn may still resume at (position -> block), and the lowest such position.
        self._keeps_decode = policy.keeps_decode_checkpoints
        self.pins: dict[int, dict[int, Block]] = {}
        self.lowest: dict[int, int] = {}

    def _checkpoint_in(self, request: Request, num_tokens: int) -> int:
        """The position on this group's grid where the chunk ``[c, num_tokens)``
        writes the prefill's checkpoint state (0: none)."""
        start = request.num_computed_tokens
        if not start < request.prefill_end <= num_tokens:
            return 0
        position = self.policy.prefill_checkpoint(self.geometry, request, num_tokens - start)
        return 0 if position % self.block_size else position

    def attach_hit(self, request: Request, hit_length: int) -> None:
        rid = request.request_id
        self.num_cached[rid] = hit_length // self.block_size
        if self._writes_checkpoints:  # an earlier admission's state is not this prefill's
            self.written.pop(rid, None)
        if hit_length == 0:
            return
        full = hit_length // self.block_size
        (state,) = self.cached_blocks(request, full - 1, full)
        if state.state_position != hit_length:
            raise MambaStateMissing(
                "a Mamba hit resumes from the state saved exactly at the hit",
                f"group {self.group_id}: {request} would resume at {hit_length} from a state "
                f"saved at {state.state_position}",
                self.pool.dump(),
            )
        self.pool.touch([state])
        self.latest[rid] = state

    def blocks_needed(self, request: Request, num_tokens: int) -> int:
        rid = request.request_id
        if rid in self.running:
            return 0
        # The chunk continues in place when the latest block is private and uncached.
        latest = self.latest.get(rid)
        fresh = 0 if latest is not None and latest.key is None and latest.ref_count == 1 else 1
        if self._writes_checkpoints and self._checkpoint_in(request, num_tokens):
            return fresh + 1
        if self._captures and self._passes_block_end(request, num_tokens):
            return fresh + 1
        return fresh

    def _passes_block_end(self, request: Request, num_tokens: int) -> bool:
        """Whether a decode step scheduling ``[c, num_tokens)`` may end past a block end
        it does not end on (the drafts it accepts decide; the spare is taken before)."""
        start = request.num_computed_tokens
        return (
            start >= request.prefill_end
            and num_tokens - 1 - (num_tokens - 1) % self.block_size > start
        )

    def quiet_until(self, request: Request) -> int:
        # A chunk continues in place (blocks_needed is 0) and its after_step
        # only sets the state position until it ends on the block grid, where
        # the state may be cached. Otherwise nothing is quiet: every chunk
        # ends past the computed tokens.
        rid, computed = request.request_id, request.num_computed_tokens
        latest = self.latest.get(rid)  # blocks_needed's test, inlined
        if rid in self.running or latest is None or latest.key is not None or latest.ref_count != 1:
            return computed
        return computed - computed % self.block_size + self.block_size - 1

    def quiet_state(self, request: Request) -> Block | None:
        return self.latest.get(request.request_id)

    def allocate(self, request: Request, num_tokens: int, blocks: list[Block]) -> None:
        # Not asked for a chunk continuing in place (no block): it runs in the
        # latest block, left where it is, with no bookkeeping.
        if self._writes_checkpoints and (position := self._checkpoint_in(request, num_tokens)):
            self.checkpoint[request.request_id] = (blocks.pop(), position)
        if self._captures and self._passes_block_end(request, num_tokens):
            self.spare[request.request_id] = blocks.pop()
        if blocks:
            self.running[request.request_id] = blocks[0]

    def after_step(self, request: Request) -> None:
        self._step_state(request)
        if self._keeps_decode and request.request_id in self.lowest:
            self._pin(request)

    def _step_state(self, request: Request) -> None:
        """The state moves to the chunk's end; a state on the grid is offered to the mask."""
        rid, size = request.request_id, self.block_size
        end = request.num_computed_tokens
        if self._writes_checkpoints and rid in self.checkpoint:
            self._write_checkpoint(request)
        if self._captures and rid in self.spare:
            self._capture(request)
        running = self.running.pop(rid, None)
        if running is None:  # continued in place: the latest block holds the new state
            running = self.latest[rid]
        else:
            previous = self.latest.get(rid)
            self.latest[rid] = running
            if previous is not None:
                self.pool.free([previous])  # its state was copied into the running block
        running.state_position = end
        first = self.num_cached[rid]
        if end % size or end > request.chain.num_hashed_tokens or end // size <= first:
            return
        mask = self.mask(request, first, end // size)
        if mask is None or mask[-1]:
            self.cache_block(request, running, end // size - 1)
        self.num_cached[rid] = end // size

    def track_decode(self, request: Request, lowest: int, recent: int) -> None:
        self.lowest[request.request_id] = lowest

    def _capture(self, request: Request) -> None:
        """The state at the deepest block end the step passed without ending there,
        written into the spare block: cached through the mask, pinned as a decode
        state, then released (staying cached or pinned if it is)."""
        rid, size = request.request_id, self.block_size
        block = self.spare.pop(rid)
        start, end = request.step_start, request.num_computed_tokens
        position = end - end % size
        if start < position < end:
            block.state_position = self.written[rid] = position
            first, index = self.num_cached[rid], position // size
            if first < index and position <= request.chain.num_hashed_tokens:
                mask = self.mask(request, first, index)
                if mask is None or mask[-1]:
                    self.cache_block(request, block, index - 1)
                self.num_cached[rid] = index
            if self._keeps_decode and rid in self.lowest:
                self._pin_state(request, position, block)
        self.pool.free([block])

    def _pin(self, request: Request) -> None:
        """Keep a private copy of the state at a grid point (the latest block, held one
        reference more, so the next step copies it on instead of overwriting it); give
        back the copies below the lowest position the next turn may still need."""
        rid, end = request.request_id, request.num_computed_tokens
        if end:
            self._pin_state(request, end, self.latest[rid])
        pins = self.pins.get(rid, {})
        low = self.lowest[rid]
        stale = [position for position in pins if position < low]
        if stale:
            self.pool.free([pins.pop(position) for position in stale])

    def _pin_state(self, request: Request, position: int, block: Block) -> None:
        """Pin ``block``, the state at ``position``, if that is a grid point the next turn
        may still resume at."""
        pins = self.pins.setdefault(request.request_id, {})
        grid = self.geometry.hit_grid_tokens
        low = self.lowest[request.request_id]
        if position % grid == 0 and position >= low and position not in pins:
            self.pool.touch([block])
            pins[position] = block

    def publish(self, request: Request, positions: Sequence[int]) -> list[Block]:
        """Cache the pinned states the mask marks for the decode checkpoints."""
        rid, size = request.request_id, self.block_size
        cached: list[Block] = []
        for position, block in sorted(self.pins.get(rid, {}).items()):
            index = position // size - 1
            if block.key is not None or not positions:
                continue
            if block.state_position != position:
                raise InvariantViolation(
                    "a pinned decode state holds the state at its position",
                    f"group {self.group_id}: {request}: pin at {position} holds the state "
                    f"at {block.state_position}",
                    self.pool.dump(),
                )
            mask = self.policy.block_mask(
                self.geometry, self.spec, request, index, index + 1, positions
            )
            if mask is None or mask[0]:
                self.cache_block(request, block, index)
                if block.key is not None:
                    cached.append(block)
        return cached

    def check_pins(self, request: Request, most: int) -> None:
        """Every pin holds the state at its position, on the hit grid, within the
        computed tokens; at most ``most`` of them."""
        pins = self.pins.get(request.request_id, {})
        grid, computed = self.geometry.hit_grid_tokens, request.num_computed_tokens
        if len(pins) > most:
            raise InvariantViolation(
                "a decoding request pins at most its bound of Mamba states",
                f"group {self.group_id}: {request} pins {sorted(pins)}, more than {most}",
            )
        for position, block in pins.items():
            if position % grid or position > computed or block.state_position != position:
                raise InvariantViolation(
                    "a pinned decode state sits at its grid point, within the computed tokens",
                    f"group {self.group_id}: {request}: pin at {position} holds the state "
                    f"at {block.state_position} (grid {grid})",
                )

    def _write_checkpoint(self, request: Request) -> None:
        """The state the chunk wrote inside it: cached through the mask, then released."""
        rid, size = request.request_id, self.block_size
        block, position = self.checkpoint.pop(rid)
        block.state_position = self.written[rid] = position
        first, index = self.num_cached[rid], position // size
        if index > first:
            mask = self.mask(request, first, index)
            if mask is None or mask[-1]:
                self.cache_block(request, block, index - 1)
            self.num_cached[rid] = index
        self.pool.free([block])  # a cached state stays findable

    def free(self, request: Request) -> None:
        rid = request.request_id
        self.num_cached.pop(rid, None)
        self.known_boundaries.pop(rid, None)
        blocks = [b for b in (self.running.pop(rid, None), self.latest.pop(rid, None)) if b]
        if self._keeps_decode:  # unpublished copies are given back, never cached
            self.lowest.pop(rid, None)
            blocks += self.pins.pop(rid, {}).values()
        if self._writes_checkpoints and (checkpoint := self.checkpoint.pop(rid, None)):
            blocks.append(checkpoint[0])  # preempted between allocation and the step
        if self._captures and (spare := self.spare.pop(rid, None)):
            blocks.append(spare)  # likewise
        self.pool.free(blocks)

    def held(self, request_id: int) -> list[Block]:
        checkpoint = self.checkpoint.get(request_id)
        blocks = (
            self.running.get(request_id),
            self.latest.get(request_id),
            self.spare.get(request_id),
        )
        pins = list(self.pins.get(request_id, {}).values())
        return [b for b in blocks if b] + ([checkpoint[0]] if checkpoint else []) + pins

    def state(self, request_id: int) -> int | None:
        latest = self.latest.get(request_id)
        return None if latest is None else latest.state_position


def make_manager(
    group_id: int,
    spec: GroupSpec,
    geometry: HybridGeometry,
    pool: BlockPool,
    policy: CheckedPolicy,
    crossed: CrossedGridPoints | None = None,
) -> GroupManager:
    """The manager of ``spec``'s kind; ``crossed``: the speculative steps' rule for a
    Mamba block end passed inside a step (``None``: one token a step)."""
    if spec.kind is GroupKind.SLIDING_WINDOW:
        return SlidingWindowManager(group_id, spec, geometry, pool, policy)
    if spec.kind is GroupKind.MAMBA:
        return MambaManager(group_id, spec, geometry, pool, policy, crossed)
    return GroupManager(group_id, spec, geometry, pool, policy)
