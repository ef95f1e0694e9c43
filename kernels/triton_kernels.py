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
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from junction.core import MaskPlan

from .mask_batch import MaskBatch
from .split_batch import LARGEST, SplitBatch

__all__ = ["mask_triton", "split_triton"]

SPLIT_BLOCK = 256
MASK_ROWS = 16
MASK_COLUMNS = 64


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
    out_ptr,
    rows,
    BLOCK: tl.constexpr,
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

    prefill_end = tl.maximum(prompt, total - 1)
    end = start + new
    aligned = end // block * block
    take = (end < prefill_end) & ((aligned > start) | (block <= limit))
    end = tl.where(take, aligned, end)

    stop = end
    next_grid = (start // block + 1) * block
    stop = tl.where(
        (start % block != 0) & (start < next_grid) & (next_grid < stop), next_grid, stop
    )
    last_cacheable = tl.where(
        eagle, tl.maximum(total // block * block - block, 0), (total - 1) // block * block
    )
    stop = tl.where((start < last_cacheable) & (last_cacheable < stop), last_cacheable, stop)
    tail = tl.where(eagle, tl.maximum(prompt // unit * unit - unit, 0), (prompt - 1) // unit * unit)
    tail_ok = partial & (last_cacheable < tail) & (tail < prompt)
    stop = tl.where(tail_ok & (start < tail) & (tail < stop), tail, stop)
    junction_stop = start + tl.maximum(junction - start, 0) // block * block
    junction_ok = (start < junction) & (junction < end)
    stop = tl.where(
        junction_ok & (start < junction_stop) & (junction_stop < stop), junction_stop, stop
    )
    result = tl.where(start >= prefill_end, new, tl.maximum(stop - start, 0))
    tl.store(out_ptr + offsets, result, mask=live)


def _limit_rows(batch: SplitBatch) -> torch.Tensor:
    if batch.max_prefill_tokens is None:
        return torch.full_like(batch.start, LARGEST)
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
            out,
            rows,
            BLOCK=SPLIT_BLOCK,
        )
    return out


@triton.jit  # type: ignore[untyped-decorator]
def _mask_kernel(
    start_ptr,
    length_ptr,
    boundary_ptr,
    out_ptr,
    rows,
    width,
    num_boundaries,
    period,
    run,
    shift,
    block,
    alignment,
    PERIODIC: tl.constexpr,
    KEEPS_BOUNDARIES: tl.constexpr,
    ROWS: tl.constexpr,
    COLUMNS: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]
    column = tl.program_id(1).to(tl.int64) * COLUMNS + tl.arange(0, COLUMNS)[None, :]
    live_row = row < rows
    start = tl.load(start_ptr + row, mask=live_row, other=0)
    length = tl.load(length_ptr + row, mask=live_row, other=0)
    index = start + column
    keep = column < 0
    if PERIODIC:
        relative = index - shift
        phase = tl.maximum(relative, 0) % period
        keep = (relative >= 0) & (phase >= period - run)
    if KEEPS_BOUNDARIES:
        for k in range(num_boundaries):
            boundary = tl.load(boundary_ptr + row * num_boundaries + k, mask=live_row, other=-1)
            run_end = tl.maximum(boundary, 0) // alignment * alignment // block + shift
            keep = keep | ((boundary >= 0) & (index >= run_end - run) & (index < run_end))
    keep = keep & (column < length)
    tl.store(out_ptr + row * width + column, keep.to(tl.int8), mask=live_row & (column < width))


def mask_triton(batch: MaskBatch, plan: MaskPlan) -> torch.Tensor:
    """The ``rows x width`` bool mask of a non-dense plan, computed by :func:`_mask_kernel`."""
    rows, width = batch.shape.rows, batch.width
    out = torch.empty((rows, width), dtype=torch.int8, device=batch.shape.device)
    if rows and width:
        period, run, shift, block, alignment, keeps_boundaries = plan
        grid = (triton.cdiv(rows, MASK_ROWS), triton.cdiv(width, MASK_COLUMNS))
        _mask_kernel[grid](
            batch.start.contiguous(),
            batch.length.contiguous(),
            batch.boundaries,
            out,
            rows,
            width,
            batch.boundaries.shape[1],
            max(period, 1),
            run,
            shift,
            block,
            alignment,
            PERIODIC=period > 0,
            KEEPS_BOUNDARIES=keeps_boundaries and batch.boundaries.shape[1] > 0,
            ROWS=MASK_ROWS,
            COLUMNS=MASK_COLUMNS,
        )
    return out.view(torch.bool)
