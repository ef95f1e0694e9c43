"""Decision 2, batched: the chunk stop point for many requests at once.

Same arguments and rules as ``core.mamba_block_aligned_split``, each a
Python scalar (every row) or a 1-D tensor (one entry per request). The torch
path is a straight-line vectorisation of core's formula: every candidate
stop for every row, the earliest strictly inside the chunk winning through a
chain of ``where``s in core's order; a flag given as one Python bool computes
only its own branch. Positions are held as offsets from the row's start, so
every difference fits in int64 and every row core answers is answered
exactly (docs/design/int64-offsets.md).
"""

from __future__ import annotations

import torch

from .backend import resolve_backend
from .binding import errors_of, resolve_core
from .split_batch import Grid, SplitBatch

__all__ = ["mamba_block_aligned_split", "split_torch"]


def _last_cacheable(
    tokens: torch.Tensor,
    unit: Grid,
    eagle: torch.Tensor,
    uniform: bool | None,
    lookahead: torch.Tensor,
) -> torch.Tensor:
    """``core.last_cacheable_position`` per row, computing only the branch in use.

    The proof limits ``N - max(1, k)`` and ``N - k`` are clamped at 0 before
    flooring: a negative one answers 0 either way, and the clamp keeps a huge
    ``k`` from leaving int64 when the unit is subtracted.
    """
    if uniform is not True:
        without = unit.floor((tokens - lookahead.clamp(min=1)).clamp_(min=0))
        if uniform is False:
            return without
    with_eagle = (unit.floor((tokens - lookahead).clamp_(min=0)) - unit.rows).clamp_(min=0)
    return with_eagle if uniform else torch.where(eagle, with_eagle, without)


def _checkpoint_written(batch: SplitBatch, prefill_left: torch.Tensor) -> torch.Tensor | None:
    """Rows whose chunk reaches the prefill's end and in which the backend writes
    the prefill's checkpoint (``core.PrefillCheckpoints.writes``), on offsets."""
    if batch.checkpoints is None:
        return None
    alignment, unit, keyed_on_prefill_end = batch.checkpoints
    start, new, block = batch.start, batch.num_new_tokens, batch.block_size
    # lcp of the chunk's end t (or, vLLM's form, of the prefill's end), as an
    # offset from s, without forming s + new: floor_u(s + w) - s = w - (s + w) mod u.
    tokens_left = prefill_left if keyed_on_prefill_end else new
    lookahead = batch.hash_lookahead_tokens

    def floored(w: torch.Tensor) -> torch.Tensor:
        return w - (start % unit + w % unit) % unit

    # Below -s the position is 0 either way; the clamp keeps a huge k from underflowing.
    without = torch.maximum(
        floored((tokens_left - lookahead.clamp(min=1)).clamp(min=-start - 1)), -start
    )
    with_eagle = torch.maximum(
        floored((tokens_left - lookahead).clamp(min=-start - 1)) - unit, -start
    )
    position = torch.where(batch.use_eagle, with_eagle, without)
    hash_unit = batch.hash_block_size
    # The written slot, the block of token t - 1 less one, lies past the block of
    # token s - 1: t - 1 reaches one block past the grid point at or after s,
    # s + gap (gap = -s mod b): new - gap - 1 >= b, with no product to overflow.
    gap = block.remainder(-start)
    past_initial = new - gap - 1 >= block.rows
    return (
        (new >= prefill_left)
        & (hash_unit.remainder(start) == 0)
        & past_initial
        & (position >= hash_unit.rows)
        & (position < new)
        & (position.clamp(min=0) % alignment == 0)
    )


def _earlier(
    stop: torch.Tensor, candidate: torch.Tensor, applies: torch.Tensor | None = None
) -> torch.Tensor:
    """``core._earlier`` on offsets: ``candidate`` where it applies and lies in ``(0, stop)``."""
    inside = (candidate > 0) & (candidate < stop)
    return torch.where(inside if applies is None else inside & applies, candidate, stop)


def split_torch(batch: SplitBatch) -> torch.Tensor:
    """Tokens to schedule per row (int64), vectorised with torch on offsets from the start."""
    start, new, block = batch.start, batch.num_new_tokens, batch.block_size
    prompt, total = batch.num_prompt_tokens, batch.num_tokens
    prefill_left = torch.maximum(prompt, total - 1) - start  # <= 0: decode
    inside = new < prefill_left  # t < prefill_end
    # floor_b(t) - s, with t formed only where it is inside the prefill (so fits).
    aligned = block.floor(start + torch.where(inside, new, 0)) - start
    take = inside
    if batch.max_prefill_tokens is not None:
        take &= (aligned > 0) | (block.rows <= batch.max_prefill_tokens)
    end = torch.where(take, aligned, new)

    lookahead = batch.hash_lookahead_tokens
    written = _checkpoint_written(batch, prefill_left)
    kept = None if written is None else ~written  # the stops a written checkpoint replaces
    offset = block.remainder(start)
    stop = _earlier(end, block.rows - offset, _both(offset != 0, kept))
    last_cacheable = _last_cacheable(total, block, batch.use_eagle, batch.eagle, lookahead)
    stop = _earlier(stop, last_cacheable - start, kept)
    if batch.partial is not False:
        tail = _last_cacheable(
            prompt, batch.hash_block_size, batch.use_eagle, batch.eagle, lookahead
        )
        usable = batch.partial_hits & (last_cacheable < tail) & (tail < prompt)
        stop = _earlier(stop, tail - start, _both(usable, kept))
    junction = batch.shared_prefix_boundary - start
    # s + floor_b(J - s), as an offset; the clamp keeps rows with J < s from underflowing.
    junction_stop = block.floor(junction.clamp(min=0))
    if batch.exact is not False:
        # The junction itself where the engine saves a state inside a block: prompt positions.
        exact = batch.exact_junction_stop & (batch.shared_prefix_boundary <= prompt)
        junction_stop = torch.where(exact, junction, junction_stop)
    stop = _earlier(stop, junction_stop, (junction > 0) & (junction < end))
    return torch.where(prefill_left <= 0, new, stop.clamp_(min=0))


def _both(applies: torch.Tensor, kept: torch.Tensor | None) -> torch.Tensor:
    return applies if kept is None else applies & kept


def mamba_block_aligned_split(
    *,
    num_computed_tokens: object,
    num_new_tokens: object,
    num_prompt_tokens: object,
    num_tokens: object,
    block_size: object,
    shared_prefix_boundary: object = 0,
    use_eagle: object = False,
    hash_block_size: object = None,
    partial_hits: object = False,
    max_prefill_tokens: object = None,
    num_new_local_computed_tokens: object = 0,
    num_external_computed_tokens: object = 0,
    hash_lookahead_tokens: object = 0,
    exact_junction_stop: object = False,
    prefill_checkpoints: object = None,
    backend: str = "auto",
    core: object = None,
) -> torch.Tensor:
    """``core.mamba_block_aligned_split`` for a batch: one int64 result per row.

    Every argument is a Python scalar or a 1-D tensor with one entry per
    request (at least one must be a tensor; all tensors share length and
    device), except ``prefill_checkpoints``: one engine's setting, ``None``
    or a ``PrefillCheckpoints`` (of ``core``'s copy). Guarantees
    ``result[r]`` equals core's answer for row ``r`` for every row core
    accepts whose arguments fit in int64; the whole call computes in int64,
    exactly, with no sum left to overflow.

    Raises :class:`core.InvalidArgument` naming the argument, the first
    offending row (``num_tokens[3]``), its value and the rule, for a row that
    breaks one of core's rules (core raises for that row too), for a Python
    scalar outside int64 or a tensor of a dtype int64 cannot hold (uint16,
    uint32, uint64), and for a bad ``backend``. ``core``: the core module the
    answer is for (``binding``; default ``junction.core``).
    """
    with errors_of(resolve_core(core)):
        batch = SplitBatch(
            num_computed_tokens=num_computed_tokens,
            num_new_tokens=num_new_tokens,
            num_prompt_tokens=num_prompt_tokens,
            num_tokens=num_tokens,
            block_size=block_size,
            shared_prefix_boundary=shared_prefix_boundary,
            use_eagle=use_eagle,
            hash_block_size=hash_block_size,
            partial_hits=partial_hits,
            max_prefill_tokens=max_prefill_tokens,
            num_new_local_computed_tokens=num_new_local_computed_tokens,
            num_external_computed_tokens=num_external_computed_tokens,
            hash_lookahead_tokens=hash_lookahead_tokens,
            exact_junction_stop=exact_junction_stop,
            prefill_checkpoints=prefill_checkpoints,
        )
        if resolve_backend(backend, batch.shape.device) == "triton":
            from .triton_kernels import split_triton

            return split_triton(batch)
        return split_torch(batch)
