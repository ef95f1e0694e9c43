# @triton.jit bodies are Triton's DSL: their parameters are pointers and
# constexprs, whose Python annotations Triton itself would interpret.
# mypy: disable-error-code="no-untyped-def"
"""Triton kernels for the stop point and the mask.

The arithmetic is the torch path's, element by element: one program handles
``SPLIT_BLOCK`` requests of the split, or a ``MASK_ROWS x MASK_COLUMNS`` tile
of the mask (rows are requests, columns are block offsets from each row's
start). The mask is written as bytes and viewed as bool. Offsets are int64 so
outputs past 2**31 elements stay addressable. On CPU tensors these run only
under ``TRITON_INTERPRET=1`` (the test suite sets it before this module is
imported), which executes the same kernel bodies with numpy.

Like the torch paths, positions are offsets from each row's start, so no
intermediate leaves int64 for any row the batch validation accepted (see
``split.py`` and ``mask.py``). Triton's ``//`` and ``%`` truncate toward zero
where torch's and core's floor, so every operand of one is ``>= 0``; where a
floor-mod of a negative value is needed it is made explicit.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from junction.core import MaskPlan

from .mask_batch import MaskBatch
from .split_batch import SplitBatch

__all__ = ["mask_triton", "split_triton"]

# "No limit" for max_prefill_tokens: every block size (an int64) is <= it.
NO_LIMIT = torch.iinfo(torch.int64).max
SPLIT_BLOCK = 256
MASK_ROWS = 16
MASK_COLUMNS = 64


@triton.jit
def _earlier(stop, candidate, applies):
    """``core._earlier`` on offsets from the start: ``candidate`` if in ``(0, stop)``."""
    return tl.where(applies & (candidate > 0) & (candidate < stop), candidate, stop)


@triton.jit
def _last_cacheable(tokens, unit, eagle, lookahead):
    """``core.last_cacheable_position`` per row; proof limits clamped at 0 (operands >= 0)."""
    without = tl.maximum(tokens - tl.maximum(lookahead, 1), 0) // unit * unit
    with_eagle = tl.maximum(tl.maximum(tokens - lookahead, 0) // unit * unit - unit, 0)
    return tl.where(eagle, with_eagle, without)


@triton.jit  # type: ignore[untyped-decorator]
def _split_kernel(
    start_ptr,
    new_ptr,
    prompt_ptr,
    total_ptr,
    block_ptr,
    junction_ptr,
    eagle_ptr,
    unit_ptr,
    partial_ptr,
    limit_ptr,
    lookahead_ptr,
    exact_ptr,
    out_ptr,
    rows,
    checkpoint_alignment,
    checkpoint_unit,
    BLOCK: tl.constexpr,
    CHECKPOINTS: tl.constexpr,
    KEYED_ON_PREFILL_END: tl.constexpr,
):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    live = offsets < rows
    start = tl.load(start_ptr + offsets, mask=live, other=0)
    new = tl.load(new_ptr + offsets, mask=live, other=0)
    prompt = tl.load(prompt_ptr + offsets, mask=live, other=1)
    total = tl.load(total_ptr + offsets, mask=live, other=1)
    block = tl.load(block_ptr + offsets, mask=live, other=1)
    junction = tl.load(junction_ptr + offsets, mask=live, other=0)
    eagle = tl.load(eagle_ptr + offsets, mask=live, other=0) != 0
    unit = tl.load(unit_ptr + offsets, mask=live, other=1)
    partial = tl.load(partial_ptr + offsets, mask=live, other=0) != 0
    limit = tl.load(limit_ptr + offsets, mask=live, other=1)
    lookahead = tl.load(lookahead_ptr + offsets, mask=live, other=0)
    exact = tl.load(exact_ptr + offsets, mask=live, other=0) != 0

    prefill_left = tl.maximum(prompt, total - 1) - start  # <= 0: decode
    inside = new < prefill_left  # t < prefill_end
    end_inside = start + tl.where(inside, new, 0)  # t only where it fits
    aligned = end_inside // block * block - start
    take = inside & ((aligned > 0) | (block <= limit))
    end = tl.where(take, aligned, new)

    kept = new == new  # every row: no checkpoint written inside its chunk
    if CHECKPOINTS:
        # lcp of the chunk's end (vLLM's form: the prefill's end) as an offset from s,
        # without forming s + new: floor_u(s + w) - s = w - (s + w) mod u, floor-mod
        # made explicit; below -s it is 0 (offset -s) either way.
        left = prefill_left if KEYED_ON_PREFILL_END else new
        unit_mod = start % checkpoint_unit
        w = tl.maximum(left - tl.maximum(lookahead, 1), -start - 1)
        w_mod = (w % checkpoint_unit + checkpoint_unit) % checkpoint_unit
        without = tl.maximum(w - (unit_mod + w_mod) % checkpoint_unit, -start)
        w = tl.maximum(left - lookahead, -start - 1)
        w_mod = (w % checkpoint_unit + checkpoint_unit) % checkpoint_unit
        with_eagle = tl.maximum(w - (unit_mod + w_mod) % checkpoint_unit - checkpoint_unit, -start)
        position = tl.where(eagle, with_eagle, without)
        gap = (block - start % block) % block  # -s mod b, operands >= 0
        written = (
            (new >= prefill_left)
            & (start % unit == 0)
            & (new - gap - 1 >= block)
            & (position >= unit)
            & (position < new)
            & (tl.maximum(position, 0) % checkpoint_alignment == 0)
        )
        kept = ~written
    offset = start % block
    stop = _earlier(end, block - offset, (offset != 0) & kept)
    last_cacheable = _last_cacheable(total, block, eagle, lookahead)
    stop = _earlier(stop, last_cacheable - start, kept)
    tail = _last_cacheable(prompt, unit, eagle, lookahead)
    tail_ok = partial & (last_cacheable < tail) & (tail < prompt) & kept
    stop = _earlier(stop, tail - start, tail_ok)
    prompt_junction = exact & (junction <= prompt)
    junction = junction - start
    junction_stop = tl.where(prompt_junction, junction, tl.maximum(junction, 0) // block * block)
    stop = _earlier(stop, junction_stop, (junction > 0) & (junction < end))
    result = tl.where(prefill_left <= 0, new, tl.maximum(stop, 0))
    tl.store(out_ptr + offsets, result, mask=live)


def _limit_rows(batch: SplitBatch) -> torch.Tensor:
    if batch.max_prefill_tokens is None:
        return torch.full_like(batch.start, NO_LIMIT)
    return batch.max_prefill_tokens.contiguous()


def split_triton(batch: SplitBatch) -> torch.Tensor:
    """Tokens to schedule per row, computed by :func:`_split_kernel`."""
    rows = batch.shape.rows
    out = torch.empty(rows, dtype=torch.int64, device=batch.shape.device)
    if rows:
        _split_kernel[(triton.cdiv(rows, SPLIT_BLOCK),)](
            batch.start.contiguous(),
            batch.num_new_tokens.contiguous(),
            batch.num_prompt_tokens.contiguous(),
            batch.num_tokens.contiguous(),
            batch.block_size.rows.contiguous(),
            batch.shared_prefix_boundary.contiguous(),
            batch.use_eagle.to(torch.int8).contiguous(),
            batch.hash_block_size.rows.contiguous(),
            batch.partial_hits.to(torch.int8).contiguous(),
            _limit_rows(batch),
            batch.hash_lookahead_tokens.contiguous(),
            batch.exact_junction_stop.to(torch.int8).contiguous(),
            out,
            rows,
            *(batch.checkpoints or (1, 1, False))[:2],
            BLOCK=SPLIT_BLOCK,
            CHECKPOINTS=batch.checkpoints is not None,
            KEYED_ON_PREFILL_END=bool(batch.checkpoints and batch.checkpoints[2]),
        )
    return out


@triton.jit  # type: ignore[untyped-decorator]
def _mask_kernel(
    start_ptr,
    length_ptr,
    boundary_ptr,
    final_ptr,
    out_ptr,
    rows,
    width,
    num_boundaries,
    period,
    run,
    shift,
    block,
    alignment,
    segment,
    PERIODIC: tl.constexpr,
    SEGMENT_ENDS: tl.constexpr,
    KEEPS_FINAL: tl.constexpr,
    KEEPS_BOUNDARIES: tl.constexpr,
    ROWS: tl.constexpr,
    COLUMNS: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]
    column = tl.program_id(1).to(tl.int64) * COLUMNS + tl.arange(0, COLUMNS)[None, :]
    live_row = row < rows
    start = tl.load(start_ptr + row, mask=live_row, other=0)
    length = tl.load(length_ptr + row, mask=live_row, other=0)
    keep = column < 0
    if PERIODIC:
        # Block start + column, with phase = (start - shift) floor-mod period:
        # kept iff start + column >= shift and (phase + column) mod period >=
        # period - run. phase + column can leave int64 for periods near it, so
        # the residue is taken of column - (period - phase) instead.
        phase = (start - shift) % period
        phase += tl.where(phase < 0, period, 0)
        wrapped = column - (period - phase)
        residue = (wrapped + tl.where(wrapped < 0, period, 0)) % period
        keep = (column >= shift - start) & (residue >= period - run)
    if SEGMENT_ENDS:
        # The first run ending past block i (see mask.py); operands are >= 0,
        # so truncating division is floor division here.
        index = start + column
        floor_position = tl.maximum(index - shift + 1, 0) * block
        target = tl.maximum((floor_position + alignment - 1) // alignment * alignment, alignment)
        position = (target + segment - 1) // segment * segment // alignment * alignment
        keep = position // block + shift - run <= index
    if KEEPS_FINAL:
        final = tl.load(final_ptr + row, mask=live_row, other=-1)
        offset = final - start
        low = tl.maximum(offset, -1) - run
        high = tl.minimum(offset, width)
        keep = keep | ((final >= 0) & (column >= low) & (column < high))
    if KEEPS_BOUNDARIES:
        for k in range(num_boundaries):
            boundary = tl.load(boundary_ptr + row * num_boundaries + k, mask=live_row, other=-1)
            # The run [e - run, e), e = floor_A(x) // B + shift, as offsets (see mask.py).
            offset = tl.maximum(boundary, 0) // alignment * alignment // block - start
            low = tl.maximum(offset, -1) - run + shift
            high = tl.minimum(offset, width) + shift
            keep = keep | ((boundary >= 0) & (column >= low) & (column < high))
    keep = keep & (column < length)
    tl.store(out_ptr + row * width + column, keep.to(tl.int8), mask=live_row & (column < width))


def mask_triton(batch: MaskBatch, plan: MaskPlan) -> torch.Tensor:
    """The ``rows x width`` bool mask of a non-dense plan, computed by :func:`_mask_kernel`."""
    rows, width = batch.shape.rows, batch.width
    out = torch.empty((rows, width), dtype=torch.int8, device=batch.shape.device)
    if rows and width:
        period, run, shift, block, alignment, keeps_boundaries, segment, keeps_final = plan
        final = batch.final if keeps_final else None
        grid = (triton.cdiv(rows, MASK_ROWS), triton.cdiv(width, MASK_COLUMNS))
        _mask_kernel[grid](
            batch.start.contiguous(),
            batch.length.contiguous(),
            batch.boundaries,
            batch.start if final is None else final.contiguous(),
            out,
            rows,
            width,
            batch.boundaries.shape[1],
            max(period, 1),
            run,
            shift,
            block,
            alignment,
            max(segment, 1),
            PERIODIC=period > 0,
            SEGMENT_ENDS=segment > 0,
            KEEPS_FINAL=final is not None,
            KEEPS_BOUNDARIES=keeps_boundaries and batch.boundaries.shape[1] > 0,
            ROWS=MASK_ROWS,
            COLUMNS=MASK_COLUMNS,
        )
    return out.view(torch.bool)
