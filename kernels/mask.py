"""Decision 3, batched: reachable-block masks for many requests of one group.

Rows are requests, each with its own block range and boundaries (a
``rows x K`` tensor padded with ``-1``); the group, alignment, EAGLE and
``R`` are shared, so ``core.mask_plan`` decides once whether the group is
dense (``None``, as in core) and what shape its runs have. The result is a
``rows x width`` bool tensor, row ``r``'s first ``end - start`` entries
core's mask, the rest False. Every sum stays in int64 although block
indices reach ``2**63 - 1``: the paths work on column offsets from each
row's start and never form a block index (an off-grid interval's plan needs
``end_block * B + A + R`` in int64; a row past it is rejected, naming it).
"""

from __future__ import annotations

import torch

from junction.core import MaskPlan

from .backend import resolve_backend
from .batch import require_int64, require_rows
from .binding import errors_of, resolve_core
from .mask_batch import MaskBatch

__all__ = ["mask_torch", "reachable_block_mask"]

# Largest periods x width table of periodic patterns worth building (bools).
PHASE_TABLE_LIMIT = 1 << 22
_INT64_MAX = torch.iinfo(torch.int64).max


def mask_torch(batch: MaskBatch, plan: MaskPlan) -> torch.Tensor:
    """The ``rows x width`` bool mask of a non-dense plan, vectorised with torch."""
    rows, width = batch.shape.rows, batch.width
    columns = torch.arange(width, device=batch.shape.device)
    period, run, shift, block, alignment, keeps_boundaries, segment, keeps_final = plan
    if segment:
        index = batch.start[:, None] + columns  # within int64: checked by the caller
        # The first run ending past block i: floor_A(k R) >= (i - shift + 1) B, > 0.
        floor_position = (index - shift + 1).clamp(min=0) * block
        target = (-(-floor_position // alignment) * alignment).clamp(min=alignment)
        position = -(-target // segment) * segment // alignment * alignment
        keep = position // block + shift - run <= index
    elif period:
        phase = (batch.start - shift).remainder(period)
        if 0 < period * width <= PHASE_TABLE_LIMIT:
            # Every row's periodic part is one of `period` patterns: build them
            # once and gather, instead of rows x width int64 arithmetic. (An
            # empty width must not build them: `period` may be near 2**63.)
            patterns = (columns + torch.arange(period, device=columns.device)[:, None]) % period
            keep = (patterns >= period - run)[phase]
        else:
            residue = (columns - (period - phase)[:, None]).remainder(period)
            keep = residue >= period - run
        if shift and width:
            keep[:, 0] &= batch.start >= shift  # block 0 precedes the first run
    else:
        keep = torch.zeros((rows, width), dtype=torch.bool, device=columns.device)
    if keeps_final and batch.final is not None:
        # The run [e - run, e) of the final segment's end e (shift is 0 here).
        offset = batch.final - batch.start
        low = offset.clamp(min=-1) - run
        high = torch.where(batch.final >= 0, offset.clamp(max=width), 0)  # -1: none
        keep |= (columns >= low[:, None]) & (columns < high[:, None])
    if keeps_boundaries:
        for boundary in batch.boundaries.unbind(dim=1):
            offset = boundary // alignment * alignment // block - batch.start
            low = offset.clamp(min=-1) - run + shift
            high = torch.where(boundary >= 0, offset.clamp(max=width) + shift, 0)  # -1: none
            keep |= (columns >= low[:, None]) & (columns < high[:, None])
    if rows and int(batch.length.min()) < width:
        keep &= columns < batch.length[:, None]
    return keep


def reachable_block_mask(
    start_block: object,
    end_block: object,
    alignment_tokens: int,
    spec: object,
    use_eagle: bool,
    retention_interval: int | None = None,
    reachable_boundaries: torch.Tensor | None = None,
    *,
    final_segment_end_block: object = None,
    off_grid_interval: object = None,
    backend: str = "auto",
    core: object = None,
) -> torch.Tensor | None:
    """``core.reachable_block_mask`` for a batch of requests of one group.

    ``start_block`` and ``end_block`` are 1-D tensors (or a scalar for one of
    them); ``reachable_boundaries`` is ``None`` or a ``rows x K`` tensor padded
    with ``-1``; ``final_segment_end_block`` is ``None`` or a 1-D tensor (or
    scalar) with ``-1`` for a row without one; ``off_grid_interval`` is
    core's ``OffGridInterval`` (``None``: core's default). Returns ``None``
    when the group caches every block, else a
    ``rows x max(end - start)`` bool tensor whose row ``r`` starts with core's
    mask for that row and is False after it, for every row core accepts
    whose arguments fit in int64: block indices and boundaries up to
    ``2**63 - 1`` are answered exactly, with no sum left to overflow.

    Raises :class:`core.InvalidArgument` naming the argument, the first
    offending row, its value and the rule, for a row that breaks one of core's
    rules (core raises for that row too), for a Python scalar outside int64 or
    a tensor of a dtype int64 cannot hold (uint16, uint32, uint64), for the
    group arguments exactly as core does, and, for a sparse group, for an
    ``alignment_tokens``, ``spec.block_size`` or ``retention_interval``
    outside int64 (and, off the group's grid, a row whose
    ``end_block * B + A + R`` is).

    ``core``: the core module the answer is for (``binding``; default
    ``junction.core``): its ``mask_plan`` plans the group, so ``spec`` is a
    ``GroupSpec`` of that module.
    """
    module = resolve_core(core)
    with errors_of(module):
        form = () if off_grid_interval is None else (off_grid_interval,)
        plan: MaskPlan | None = module.mask_plan(
            alignment_tokens, spec, use_eagle, retention_interval, *form
        )
        batch = MaskBatch(start_block, end_block, reachable_boundaries, final_segment_end_block)
        backend = resolve_backend(backend, batch.shape.device)
        if plan is None:
            return None
        # The plan's sizes enter int64 arithmetic; each is at most one of these
        # (the period is the segment, A or R, over B; the run is shorter).
        require_int64("alignment_tokens", alignment_tokens)
        require_int64("spec.block_size", plan.block_size)
        if retention_interval is not None:
            require_int64("retention_interval", retention_interval)
        if plan.segment:
            room = (_INT64_MAX - alignment_tokens - plan.segment) // plan.block_size
            require_rows(
                "end_block",
                batch.end,
                batch.end > room,
                "must keep end_block * block_size + alignment_tokens + retention_interval "
                "within int64 (an off-grid retention interval's runs are found from it)",
            )
        if backend == "triton":
            from .triton_kernels import mask_triton

            return mask_triton(batch, plan)
        return mask_torch(batch, plan)
