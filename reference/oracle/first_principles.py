"""The exhaustive oracle: each decision restated from first principles.

This module never imports ``core``: it restates the decisions of
docs/domain.md the slow, obvious way, position by position, so "core ==
oracle" compares two independent derivations, not one formula with itself.
The mask marks the union of the blocks a request resuming at each promised
position reads; the stop point walks the chunk token by token to the first
mandatory stop; reconciliation tries every length from ``M`` down; the next
turn and declared checkpoints look the follow-up up in the cache a
keep-everything request leaves. Inputs are plain ints and strings
(``"full"``, ``"sliding_window"``, ``"mamba"``). Slow on purpose; readable
first.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

__all__ = [
    "CheckpointBackend",
    "OracleGroup",
    "oracle_blocks_needed",
    "oracle_declared_positions",
    "oracle_decode_checkpoint",
    "oracle_in_prefill",
    "oracle_last_cacheable_position",
    "oracle_reachable_block_mask",
    "oracle_reconcile",
    "oracle_split",
]

FULL = "full"
SLIDING_WINDOW = "sliding_window"
MAMBA = "mamba"


def _largest_multiple_at_most(value: int, unit: int) -> int:
    """Walk down from ``value`` to the first multiple of ``unit`` (0 for negative values)."""
    position = max(value, 0)
    while position % unit:
        position -= 1
    return position


# ---------------------------------------------------------------------------
# Decision 3: the reachable-block mask


def _window(window: int | None) -> int:
    if window is None:
        raise ValueError("a sliding-window group needs a window, got None")
    return window


def _window_blocks(position: int, block_size: int, window: int, use_eagle: bool) -> set[int]:
    """Blocks a sliding-window group reads to resume at ``position``."""
    blocks = {token // block_size for token in range(max(position - window + 1, 0), position)}
    if use_eagle:
        # The lookup matches the block just past the position, then drops it.
        blocks.add(position // block_size)
    return blocks


def _state_block(position: int, block_size: int) -> set[int]:
    """The block holding the deepest Mamba state a lookup bounded by ``position`` uses."""
    state = _largest_multiple_at_most(position, block_size)
    return {state // block_size - 1} if state > 0 else set()


def oracle_blocks_needed(
    kind: str, position: int, block_size: int, window: int | None, use_eagle: bool
) -> set[int]:
    """Blocks a group of ``kind`` reads to resume a request at ``position``.

    Full attention: every block before it. Sliding window: the blocks the next
    token's window sees (plus the EAGLE peek block). Mamba: the deepest state
    block at or below the position. Nothing at 0: a hit of 0 reuses nothing.
    """
    if position == 0:
        return set()
    if kind == SLIDING_WINDOW:
        return _window_blocks(position, block_size, _window(window), use_eagle)
    if kind == MAMBA:
        return _state_block(position, block_size)
    return set(range(position // block_size))


def oracle_reachable_block_mask(
    start_block: int,
    end_block: int,
    alignment_tokens: int,
    kind: str,
    block_size: int,
    window: int | None,
    use_eagle: bool,
    retention_interval: int | None,
    reachable_boundaries: Sequence[int],
    final_segment_end_block: int | None = None,
    eagle_group: bool = True,
) -> list[bool] | None:
    """Which of blocks ``[start_block, end_block)`` some promised position needs.

    ``None`` means "keep every block": full attention, dense Mamba, a sliding
    window whose alignment is not a whole number of blocks, or periodic
    promises that already need every block after the first.

    Promised positions: each segment boundary (every ``A`` when dense, every
    ``R`` when ``R > 0``) and each reachable boundary (when ``R`` is not
    ``None``), each at the deepest position at or below it that a lookup can
    land at (a multiple of ``A``); and, for a sliding window without EAGLE
    when there are segments (``R != 0``), the end of the final, partial
    segment, ``final_segment_end_block * B``, where a lookup of what is
    cached may stop. (Under EAGLE that stop would need the block past it; a
    Mamba state there exists only if a chunk ended there, which the mask
    cannot know: the engine names such a position as a boundary.)

    ``eagle_group``: whether the group holds draft-model layers; only those
    read the block past a position under EAGLE (a target-model group's
    lookup stops at it, so for it the mask is the mask without EAGLE).
    """
    use_eagle = use_eagle and eagle_group
    if kind == FULL:
        return None
    if kind == MAMBA and retention_interval is None:
        return None
    if kind == SLIDING_WINDOW and alignment_tokens % block_size:
        return None

    def needed(position: int) -> set[int]:
        return oracle_blocks_needed(kind, position, block_size, window, use_eagle)

    # Periodic promises: every A (dense SWA) or every R (R > 0), never 0,
    # each landing on A.
    segment = alignment_tokens if retention_interval is None else retention_interval
    periodic: set[int] = set()
    if segment:
        # The landing points repeat every lcm(segment, A, B) tokens: look a few
        # whole repeats past the range too, to decide whether the periodic
        # promises alone need every block (then keep them all).
        repeat = math.lcm(segment, alignment_tokens, block_size) // block_size
        horizon = max(end_block, 3 * repeat + 2 + (window or 0))
        # A position past this needs only blocks at or after the horizon: it
        # lands up to A - 1 tokens lower (an off-grid R), reads its window below
        # that, and its own block's end is a block past it.
        last_position = (horizon + 1) * block_size + (window or 0) + alignment_tokens - 1
        for position in range(segment, last_position + 1, segment):
            periodic |= needed(_largest_multiple_at_most(position, alignment_tokens))
        first = 1 if use_eagle and kind == SLIDING_WINDOW else 0
        if all(block in periodic for block in range(first, horizon)):
            return None

    kept = set(periodic)
    has_final = kind == SLIDING_WINDOW and not use_eagle and segment
    if final_segment_end_block is not None and has_final:
        kept |= needed(final_segment_end_block * block_size)
    if retention_interval is not None:
        for boundary in reachable_boundaries:
            position = _largest_multiple_at_most(boundary, alignment_tokens)
            kept |= needed(position)
            if position == 0 and kind == SLIDING_WINDOW and use_eagle:
                # vLLM's mask keeps the run a lookup landing here matches, which
                # at 0 is the EAGLE peek block alone, though no hit reads it.
                # Kept for compatibility (the mask is vLLM's by its arguments);
                # core.reachable_boundaries never hands a boundary that floors to 0.
                kept.add(0)
    return [block in kept for block in range(start_block, end_block)]


# ---------------------------------------------------------------------------
# Decision 2: the chunk stop point


def _lookup_lands_at(
    position: int, num_tokens: int, unit: int, use_eagle: bool, lookahead: int
) -> bool:
    """Whether a later lookup of these ``num_tokens`` tokens can resume at ``position``.

    A lookup resumes only on the ``unit`` grid and never at the last token,
    which is always recomputed to produce logits. Under EAGLE it must also
    have matched the whole unit just past ``position`` among the tokens
    before dropping it. A matched unit is proven by its hash, which with
    ``lookahead`` hash lookahead tokens also covers that many tokens after
    the unit: they must exist too.
    """
    on_grid = position % unit == 0
    before_last_token = position < num_tokens
    matched_end = position + unit if use_eagle else position
    hash_proven = matched_end + lookahead <= num_tokens
    return on_grid and before_last_token and hash_proven


def oracle_last_cacheable_position(
    num_tokens: int, unit: int, use_eagle: bool, lookahead: int = 0
) -> int:
    """The deepest position a later lookup of ``num_tokens`` tokens can land at (0 if none)."""
    for position in range(num_tokens - 1, -1, -1):
        if _lookup_lands_at(position, num_tokens, unit, use_eagle, lookahead):
            return position
    return 0


class CheckpointBackend(Protocol):
    """A backend that writes the prefill's checkpoint state inside a chunk.

    ``unit``: the grid lookups land on, where the checkpoint lies;
    ``alignment``: the backend's tiles, which the checkpoint's offset from
    the chunk's start must be a whole number of. The backend places the
    checkpoint where a lookup of the chunk's tokens lands deepest;
    ``keyed_on_prefill_end``: the split assumes it at the prefill's end's
    instead (vLLM's scheduler).
    """

    @property
    def alignment(self) -> int: ...

    @property
    def unit(self) -> int: ...

    @property
    def keyed_on_prefill_end(self) -> bool: ...


def _backend_writes(
    backend: CheckpointBackend,
    start: int,
    chunk_end: int,
    position: int,
    hash_unit: int,
    block_size: int,
) -> bool:
    """Whether the backend writes the state at ``position`` inside ``[start, chunk_end)``.

    It writes into the state slot of the Mamba block before the chunk's last
    token's block, which must come after the block of the state the chunk
    starts from (the block of token ``start - 1``; none before token 0); the
    chunk must start on the hash grid with at least one hash unit before the
    checkpoint, which lies inside the chunk on the backend's tiles.
    """
    last_token_block = (chunk_end - 1) // block_size
    initial_state_block = (start - 1) // block_size if start else -1
    return (
        start % hash_unit == 0
        and last_token_block - 1 > initial_state_block
        and position - start >= hash_unit
        and position < chunk_end
        and (position - start) % backend.alignment == 0
    )


def oracle_in_prefill(position: int, num_prompt_tokens: int, num_tokens: int) -> bool:
    """Whether a request with ``position`` tokens computed is still prefilling.

    Prompt tokens are prefilled, and so are accepted output tokens not yet
    computed (a resumed request), all but the last: a decode step computes it.
    """
    return position < num_prompt_tokens or position < num_tokens - 1


def oracle_split(
    *,
    num_computed_tokens: int,
    num_new_tokens: int,
    num_prompt_tokens: int,
    num_tokens: int,
    block_size: int,
    shared_prefix_boundary: int = 0,
    use_eagle: bool = False,
    hash_block_size: int | None = None,
    partial_hits: bool = False,
    max_prefill_tokens: int | None = None,
    num_new_local_computed_tokens: int = 0,
    num_external_computed_tokens: int = 0,
    hash_lookahead_tokens: int = 0,
    exact_junction_stop: bool = False,
    prefill_checkpoints: CheckpointBackend | None = None,
) -> int:
    """Tokens to schedule: walk the chunk and stop at the first mandatory stop."""
    start = num_computed_tokens + num_new_local_computed_tokens + num_external_computed_tokens
    if not oracle_in_prefill(start, num_prompt_tokens, num_tokens):
        return num_new_tokens
    hash_unit = block_size if hash_block_size is None else hash_block_size
    lookahead = hash_lookahead_tokens
    chunk_end = start + num_new_tokens
    last_prefill_token = max(num_prompt_tokens, num_tokens - 1)
    backend_writes_checkpoint = False
    if prefill_checkpoints is not None and chunk_end >= last_prefill_token:
        tokens = last_prefill_token if prefill_checkpoints.keyed_on_prefill_end else chunk_end
        checkpoint = oracle_last_cacheable_position(
            tokens, prefill_checkpoints.unit, use_eagle, lookahead
        )
        backend_writes_checkpoint = _backend_writes(
            prefill_checkpoints, start, chunk_end, checkpoint, hash_unit, block_size
        )
    if oracle_in_prefill(chunk_end, num_prompt_tokens, num_tokens):
        grid_end = _largest_multiple_at_most(chunk_end, block_size)
        fits = max_prefill_tokens is None or block_size <= max_prefill_tokens
        if grid_end > start or fits:
            chunk_end = grid_end

    replay = tail = -1
    if not backend_writes_checkpoint:
        replay = oracle_last_cacheable_position(num_tokens, block_size, use_eagle, lookahead)
        if partial_hits:
            tail = oracle_last_cacheable_position(
                num_prompt_tokens, hash_unit, use_eagle, lookahead
            )
            if not replay < tail < num_prompt_tokens:
                tail = -1
    junction = -1
    if start < shared_prefix_boundary < chunk_end:
        # A state can be saved inside a block only for prompt positions.
        if exact_junction_stop and shared_prefix_boundary <= num_prompt_tokens:
            junction = shared_prefix_boundary
        else:
            junction = start + _largest_multiple_at_most(shared_prefix_boundary - start, block_size)

    realign = start % block_size and not backend_writes_checkpoint
    for position in range(start + 1, chunk_end):
        first_grid_point_after_mid_block_start = realign and position % block_size == 0
        if first_grid_point_after_mid_block_start or position in (replay, tail, junction):
            return position - start
    return max(chunk_end - start, 0)


# ---------------------------------------------------------------------------
# Decision 1: reconciliation


@dataclass(frozen=True)
class OracleGroup:
    """One group and the block indices of the request's chain it has cached."""

    kind: str
    block_size: int
    window: int | None
    cached: frozenset[int]
    # Holds draft-model layers: under EAGLE its lookup matches past a hit and
    # drops (a target-model group's does not).
    eagle: bool = True


def _serves(group: OracleGroup, length: int, alignment: int, use_eagle: bool, limit: int) -> bool:
    """Whether ``group`` can resume a request at ``length`` tokens."""
    use_eagle = use_eagle and group.eagle
    if length == 0:
        return True
    if length % alignment:
        return False
    block = group.block_size
    if group.kind == FULL:
        # EAGLE: the lookup must also match one unit past the hit, within its limit.
        extra = min(alignment, block) if use_eagle else 0
        if use_eagle and length + extra > limit:
            return False
        return all(token // block in group.cached for token in range(length + extra))
    if group.kind == SLIDING_WINDOW:
        if length % block:
            return False
        if use_eagle and length + block > limit:
            return False
        return _window_blocks(length, block, _window(group.window), use_eagle) <= group.cached
    return length % block == 0 and length // block - 1 in group.cached


def oracle_reconcile(
    groups: Sequence[OracleGroup],
    alignment_tokens: int,
    use_eagle: bool,
    max_hit_length: int,
    lookup_limit: int | None = None,
) -> tuple[int, int, int]:
    """``(h, ℓ, J)`` by trying every length.

    ``h`` is the largest length ``<= M`` every group serves (an EAGLE group's
    lookup matching past it no further than ``lookup_limit``, default ``M``); ``ℓ`` the
    largest the first full-attention group (or the first group) serves alone;
    the junction ``J`` is ``ℓ`` when ``ℓ > h``, else 0.
    """
    limit = max_hit_length if lookup_limit is None else lookup_limit
    lengths = range(max_hit_length, -1, -1)
    hit = next(
        n for n in lengths if all(_serves(g, n, alignment_tokens, use_eagle, limit) for g in groups)
    )
    fulls = [g for g in groups if g.kind == FULL]
    leader = fulls[0] if fulls else groups[0]
    longest = next(n for n in lengths if _serves(leader, n, alignment_tokens, use_eagle, limit))
    return hit, longest, longest if longest > hit else 0


# ---------------------------------------------------------------------------
# The next turn: the decode checkpoint, and declared checkpoints


def _everything_up_to(
    groups: Sequence[tuple[str, int, int | None, bool]],
    alignment_tokens: int,
    tokens: int,
    filled_past: bool,
) -> list[OracleGroup]:
    """Each group holding every block (state) that lies whole in the first ``tokens``
    tokens. A full-attention group with blocks wider than the alignment (partial
    hits) matches alignment units inside blocks cached whole: every unit of the
    prefix when the request computed past it (``filled_past``), else only the
    units of its whole blocks."""
    held = []
    for kind, block, window, eagle in groups:
        unit = alignment_tokens if kind == FULL and block > alignment_tokens else block
        whole = tokens if filled_past and unit < block else tokens // block * block
        cached = frozenset(range(whole // unit))
        held.append(OracleGroup(kind, unit, window, cached, eagle))
    return held


def _decoded_states(block: int, steps: Sequence[int], crossed: str) -> frozenset[int]:
    """The state blocks a Mamba group of ``block`` holds after decoding in ``steps``:
    every block end up to ``steps[0]`` (where decode began), then what each step
    ``(start, end]`` wrote: its deepest block end when crossed ones are
    ``"captured"``, its end alone (on a block end) when ``"uncached"``."""
    ends = set(range(block, steps[0] + 1, block))
    for start, end in itertools.pairwise(steps):
        deepest = end // block * block
        if crossed == "captured" and deepest > start:
            ends.add(deepest)
        elif crossed == "uncached" and end % block == 0:
            ends.add(end)
    return frozenset(end // block - 1 for end in ends)


def oracle_decode_checkpoint(
    groups: Sequence[tuple[str, int, int | None, bool]],
    hash_block_size: int,
    alignment_tokens: int,
    use_eagle: bool,
    finished_tokens: int,
    steps: Sequence[int] | None = None,
    crossed: str = "captured",
) -> int:
    """Where the next turn of a request that finished with ``finished_tokens`` tokens
    resumes, when every group kept everything the request computed (0: nowhere).

    ``groups``: ``(kind, block_size, window, eagle_group)`` each. The request
    computed every token but the last (sampled, never fed back), so each group
    holds the blocks (Mamba: the states at block ends) that lie whole in the
    first ``finished_tokens - 1`` tokens. With ``steps`` (the computed tokens
    where decode began, then at the end of each decode step, the last
    ``finished_tokens - 1``) a Mamba group holds only the states those steps
    wrote (:func:`_decoded_states`; ``crossed``: ``"captured"`` or
    ``"uncached"``); without, one token a step. Two follow-ups are looked
    up, by trying every length: the exact resend (``M = N - 1``, its hashed
    tokens ``floor_H(N)`` the EAGLE limit) and one with new text after it
    (hashed further, but resuming no further than the tokens computed:
    nothing past them was ever computed, even for a group that reads
    nothing); the deepest hit of the two.
    """
    computed = finished_tokens - 1
    held = _everything_up_to(groups, alignment_tokens, computed, filled_past=False)
    if steps is not None:
        held = [
            replace(g, cached=_decoded_states(g.block_size, steps, crossed))
            if g.kind == MAMBA
            else g
            for g in held
        ]
    exact_limit = _largest_multiple_at_most(finished_tokens, hash_block_size)
    exact = oracle_reconcile(held, alignment_tokens, use_eagle, computed, exact_limit)[0]
    longer = finished_tokens + 4 * max(alignment_tokens, *(g[1] for g in groups))
    extended = oracle_reconcile(held, alignment_tokens, use_eagle, computed, longer)[0]
    return max(exact, extended)


def oracle_declared_positions(
    groups: Sequence[tuple[str, int, int | None, bool]],
    alignment_tokens: int,
    use_eagle: bool,
    declared: int,
) -> set[int]:
    """Where a sibling that shares exactly the first ``declared`` tokens resumes,
    when every group kept everything of that prefix (the request that declared
    it went on past it; the sibling resumes within the prefix): its lookup
    without the EAGLE drop and, under EAGLE, with it (0 left out: no
    resumption)."""
    held = _everything_up_to(groups, alignment_tokens, declared, filled_past=True)
    longer = declared + 4 * max(alignment_tokens, *(g[1] for g in groups))
    landings = {oracle_reconcile(held, alignment_tokens, False, declared, longer)[0]}
    if use_eagle:
        landings.add(oracle_reconcile(held, alignment_tokens, True, declared, longer)[0])
    return landings - {0}
