"""Decision 3, batched: reachable-block masks for many requests of one group.

Rows are requests; each has its own block range ``[start_block, end_block)``
and reachable boundaries, while the group, alignment, EAGLE and retention
interval are shared, so ``core.mask_plan`` decides once for the whole batch
whether the group is dense (the result is then ``None``, as in core) and
what shape its runs have. The result is a ``rows x width`` bool tensor with
``width = max(end_block - start_block)``: row ``r``'s first
``end_block[r] - start_block[r]`` entries are core's mask, the rest False.

Boundaries come as a ``rows x K`` integer tensor padded with ``-1`` (no
boundary). The torch path works on column offsets ``j`` relative to each
row's start, so no ``rows x width`` int64 block-index tensor is built: each
row's periodic part is gathered from a small table of the ``period`` possible
patterns (indexed by the row's phase), and each boundary run is a per-row
column interval.

Why no sum leaves int64: core computes in Python integers, these paths in
int64, and block indices reach ``2**63 - 1``. A column ``j`` stands for block
``start + j``, which is never formed. The periodic residue ``(phase + j) mod
period`` is taken of ``j - (period - phase)``, since ``phase + j`` passes
int64 for periods near it (a live block, not only a padding column). A
boundary's run ``[e - run, e)`` with ``e = floor_A(x) // B + shift`` is held
as offsets from the start, ``e - start`` clamped to ``[-1, width]`` on the
side each end is compared from: ``e`` itself passes int64 for ``x = 2**63 -
1``, and ``e - run - start`` underflows for a start far past ``x``.
Rejected: rejecting such rows (core answers them, and the offsets are exact).
What is rejected is a sparse group whose ``A``, ``B`` or ``R`` int64 cannot
hold: the plan's sizes enter the same int64 arithmetic.
"""

from __future__ import annotations

import torch

from junction.core import MaskPlan

from .backend import resolve_backend
from .batch import require_int64
from .binding import errors_of, resolve_core
from .mask_batch import MaskBatch

__all__ = ["mask_torch", "reachable_block_mask"]

# Largest periods x width table of periodic patterns worth building (bools).
PHASE_TABLE_LIMIT = 1 << 22


def mask_torch(batch: MaskBatch, plan: MaskPlan) -> torch.Tensor:
    """The ``rows x width`` bool mask of a non-dense plan, vectorised with torch."""
    rows, width = batch.shape.rows, batch.width
    columns = torch.arange(width, device=batch.shape.device)
    period, run, shift, block, alignment, keeps_boundaries = plan
    if period:
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
    backend: str = "auto",
    core: object = None,
) -> torch.Tensor | None:
    """``core.reachable_block_mask`` for a batch of requests of one group.

    ``start_block`` and ``end_block`` are 1-D tensors (or a scalar for one of
    them); ``reachable_boundaries`` is ``None`` or a ``rows x K`` tensor padded
    with ``-1``. Returns ``None`` when the group caches every block, else a
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
    outside int64.

    ``core``: the core module the answer is for (``binding``; default
    ``junction.core``): its ``mask_plan`` plans the group, so ``spec`` is a
    ``GroupSpec`` of that module.
    """
    module = resolve_core(core)
    with errors_of(module):
        plan: MaskPlan | None = module.mask_plan(
            alignment_tokens, spec, use_eagle, retention_interval
        )
        batch = MaskBatch(start_block, end_block, reachable_boundaries)
        backend = resolve_backend(backend, batch.shape.device)
        if plan is None:
            return None
        # The plan's sizes enter int64 arithmetic; each is at most one of these
        # (the period is the segment, A or R, over B; the run is shorter).
        require_int64("alignment_tokens", alignment_tokens)
        require_int64("spec.block_size", plan.block_size)
        if retention_interval is not None:
            require_int64("retention_interval", retention_interval)
        if backend == "triton":
            from .triton_kernels import mask_triton

            return mask_triton(batch, plan)
        return mask_torch(batch, plan)
