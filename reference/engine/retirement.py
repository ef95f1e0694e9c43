"""Retiring decode checkpoints: a budget of finished turns per conversation path.

A policy declaring ``decode_checkpoint_budget = k`` keeps the decode
checkpoints of at most ``k`` turns on one path: when a request publishes
its own, every earlier turn whose deepest checkpoint its tokens ran through
(it resumed from that state or passed it: the prefix hash there is the
same) is on its path, and all but the newest ``k - 1`` of those are
retired. ``k = 1`` is retirement (turn ``t``'s checkpoint goes once turn
``t + 1`` publishes a deeper one), ``k = 2`` RFC #55697's budget of two
snapshots per path (SGLang #31230's cap per path).

Place in eviction order: a retired block no request holds is freed at once
and recycled before any cached block (prompt junctions included), since the
path has moved past it; one a running request holds stays cached until it
is released, then goes by the pool's order like any cached block. A
checkpoint not retired is kept like any cached block. Without the
declaration nothing here runs.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from junction.reference.engine.block_pool import Block, BlockPool
from junction.reference.engine.invariants import InvariantViolation
from junction.reference.engine.request import Request

__all__ = ["DecodeCheckpointLedger"]


@attrs.define
class _Turn:
    """A finished request's published checkpoints: its deepest position's prefix
    hash, the chain it ran through and the blocks it cached (each with its key)."""

    serial: int
    depth: int
    key: int
    hashes: Sequence[int]
    blocks: list[tuple[Block, tuple[int, int]]]


class DecodeCheckpointLedger:
    """The live turns (those whose checkpoints are not retired), by the prefix hash at
    their deepest checkpoint; ``retired``: the blocks freed so far."""

    def __init__(self, pool: BlockPool, budget: int, unit: int) -> None:
        self.pool = pool
        self.budget = budget
        self.unit = unit
        self.turns: dict[int, _Turn] = {}
        self.retired = 0
        self._serial = 0

    def published(self, request: Request, positions: Sequence[int], blocks: list[Block]) -> None:
        """``request`` cached ``blocks`` for its decode checkpoints ``positions``: record
        it, and retire the turns on its path beyond the budget."""
        depth = max(positions) // self.unit
        hashes = request.chain.hashes
        if not blocks or depth > len(hashes) or not depth:
            return
        turns = self.turns
        passed = [turns[h] for h in hashes[: depth - 1] if h in turns]
        passed.sort(key=lambda turn: turn.serial)
        for turn in passed[: max(len(passed) - self.budget + 1, 0)]:
            del turns[turn.key]
            self.retired += self.pool.retire(turn.blocks)
        key = hashes[depth - 1]
        kept = [(block, block.key) for block in blocks if block.key is not None]
        previous = turns.pop(key, None)  # the same prefix published again: the newer stays
        if previous is not None:
            kept += previous.blocks
        self._serial += 1
        turns[key] = _Turn(self._serial, depth, key, hashes, kept)

    def check(self) -> None:
        """No live turn has more than ``budget - 1`` earlier live turns on its path."""
        turns = list(self.turns.values())
        for turn in turns:
            earlier = [
                other.depth * self.unit
                for other in turns
                if other.serial < turn.serial
                and other.depth <= turn.depth
                and turn.hashes[other.depth - 1] == other.key
            ]
            if len(earlier) >= self.budget:
                raise InvariantViolation(
                    "a path keeps at most its budget of turns' decode checkpoints",
                    f"the turn published at {turn.depth * self.unit} passed live turns at "
                    f"{sorted(earlier)} (budget {self.budget})",
                )
