"""Retiring decode checkpoints: a budget of turns per path, and a time to live.

``decode_checkpoint_budget = k``: when a request publishes, the earlier
turns whose deepest checkpoint its tokens ran through strictly below its own
prompt's replay state are on its path, and all but the newest ``k - 1`` are
retired (one at the replay state is the state it resumed from and computed
none of its own at: kept). ``decode_checkpoint_ttl = n``: a turn's
checkpoints no request has resumed from within ``n`` later requests of its
publication are retired (the clock: the highest request id admitted); one
resumed from is left to the budget. ``decode_checkpoint_keep_path``: when a
turn expires, the checkpoint at its prompt's replay state (an earlier
turn's, which it resumed from) is its path's last state: it leaves the
ledger and is kept like any cached block, so no sibling's publication
retires it.

A retired block is freed (at once, or when the last request holding it lets
go) and recycled before any cached block; one not retired is kept like any
cached block. Without either declaration nothing here runs. The why and the
measurements: docs/next-turn.md, "Retirement and two checkpoints".
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import attrs

from junction.core import floor_to
from junction.reference.engine.block_pool import Block, BlockPool
from junction.reference.engine.invariants import InvariantViolation
from junction.reference.engine.request import Request

__all__ = ["DecodeCheckpointLedger"]


@attrs.define
class _Turn:
    """A finished request's published checkpoints: its deepest position's prefix
    hash, the chain it ran through, its prompt's replay state (the hit grid's point
    at or below ``P - 1``), the blocks it cached (each with its key) and its stamp."""

    serial: int
    depth: int
    key: int
    hashes: Sequence[int]
    replay: int
    blocks: list[tuple[Block, tuple[int, int]]]
    stamp: int


class DecodeCheckpointLedger:
    """The live turns (those whose checkpoints are not retired), by the prefix hash at
    their deepest checkpoint; ``unreached``: those no request resumed from, oldest
    first; ``retired``: the blocks freed so far; ``expired``: the turns the time to
    live retired."""

    def __init__(
        self,
        pool: BlockPool,
        budget: int | None,
        ttl: int | None,
        unit: int,
        grid: int,
        keep_path: bool = False,
    ) -> None:
        self.pool = pool
        self.budget = budget
        self.ttl = ttl
        self.keep_path = keep_path
        self.unit = unit
        self.grid = grid
        self.turns: dict[int, _Turn] = {}
        self.unreached: OrderedDict[int, _Turn] = OrderedDict()
        self.retired = 0
        self.expired = 0
        self.left = 0  # turns left to the pool as a path's last state
        self.clock = 0
        self.held: list[tuple[Block, tuple[int, int]]] = []  # retired, but held then
        self._serial = 0

    def published(self, request: Request, positions: Sequence[int], blocks: list[Block]) -> None:
        """``request`` finished on a reason its policy publishes on, caching ``blocks`` for
        its decode checkpoints ``positions`` (maybe none): retire the turns on its path
        beyond the budget, and record its own."""
        turns, unit, hashes = self.turns, self.unit, request.chain.hashes
        replay = floor_to(request.num_prompt_tokens - 1, self.grid)
        if self.budget is not None:
            passed = [turns[h] for h in hashes[: replay // unit] if h in turns]
            passed = [turn for turn in passed if turn.depth * unit < replay]
            passed.sort(key=lambda turn: turn.serial)
            for turn in passed[: max(len(passed) - self.budget + 1, 0)]:
                self._retire(turn)
        depth = max(positions, default=0) // unit
        if not blocks or depth > len(hashes) or not depth:
            return
        key = hashes[depth - 1]
        kept = [(block, block.key) for block in blocks if block.key is not None]
        previous = turns.pop(key, None)  # the same prefix published again: the newer stays
        if previous is not None:
            kept += previous.blocks
            self.unreached.pop(key, None)
        self._serial += 1
        turns[key] = turn = _Turn(self._serial, depth, key, hashes, replay, kept, self.clock)
        if self.ttl is not None:
            self.unreached[key] = turn

    def admitted(self, request: Request, hit: int) -> None:
        """``request`` is admitted with ``hit`` tokens: the clock moves to its id, the
        turn it resumed from is reached, and the unreached past the time to live
        retired."""
        self.released()  # a window's blocks are let go of mid-request too
        if self.ttl is None:
            return
        self.clock = clock = max(self.clock, request.request_id)
        hashes, turns, unreached = request.chain.hashes, self.turns, self.unreached
        for depth in range(min(hit // self.unit, len(hashes)), 0, -1):
            turn = turns.get(hashes[depth - 1])
            if turn is not None:
                unreached.pop(turn.key, None)
                break
        while unreached:
            oldest = next(iter(unreached.values()))
            if clock - oldest.stamp <= self.ttl:
                break
            if self.keep_path:
                self._leave_last_state(oldest)
            self._retire(oldest)
            self.expired += 1

    def _leave_last_state(self, turn: _Turn) -> None:
        """The turn expires: the checkpoint at its prompt's replay state (an earlier
        turn's, kept because this one resumed from it) is now its path's last state,
        and leaves the ledger, cached like any block (no budget retires it)."""
        depth = turn.replay // self.unit
        if 0 < depth < turn.depth:
            below = self.turns.get(turn.hashes[depth - 1])
            if below is not None and below.depth == depth:
                del self.turns[below.key]
                self.unreached.pop(below.key, None)
                self.left += 1

    def _retire(self, turn: _Turn) -> None:
        del self.turns[turn.key]
        self.unreached.pop(turn.key, None)
        self._free(turn.blocks)

    def _free(self, blocks: list[tuple[Block, tuple[int, int]]]) -> None:
        """Retire the blocks still cached under their keys; those a request holds wait
        for :meth:`released`."""
        held = [(block, key) for block, key in blocks if block.key == key and block.ref_count]
        self.retired += self.pool.retire(blocks)
        self.held += held

    def released(self) -> None:
        """A request let go of its blocks: the retired ones no request holds now go."""
        if self.held:
            blocks, self.held = self.held, []
            self._free(blocks)

    def check(self) -> None:
        """No live turn has more than ``budget - 1`` earlier live turns on its path below
        its replay state; none unreached was published more than ``ttl`` requests ago."""
        turns, unit = list(self.turns.values()), self.unit
        for turn in self.unreached.values():
            if self.ttl is not None and self.clock - turn.stamp > self.ttl:
                raise InvariantViolation(
                    "a decode checkpoint no request resumed from lives at most its time to live",
                    f"the turn published at {turn.depth * unit} at request {turn.stamp}, "
                    f"the clock at {self.clock} (ttl {self.ttl})",
                )
            if self.turns.get(turn.key) is not turn:
                raise InvariantViolation(
                    "an unreached decode checkpoint is a live one",
                    f"the turn published at {turn.depth * unit} is not live",
                )
        if self.budget is None:
            return
        for turn in turns:
            earlier = [
                other.depth * unit
                for other in turns
                if other.serial < turn.serial
                and other.depth < turn.depth
                and other.depth * unit < turn.replay
                and turn.hashes[other.depth - 1] == other.key
            ]
            if len(earlier) >= self.budget:
                raise InvariantViolation(
                    "a path keeps at most its budget of turns' decode checkpoints",
                    f"the turn published at {turn.depth * unit} passed live turns at "
                    f"{sorted(earlier)} below its replay state {turn.replay} "
                    f"(budget {self.budget})",
                )
