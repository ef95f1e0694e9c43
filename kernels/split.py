"""Decision 2, batched: the chunk stop point for many requests at once.

Same arguments and rules as ``core.mamba_block_aligned_split``, each either a
Python scalar (every row) or a 1-D tensor (one entry per request). The torch
path is a straight-line vectorisation of core's formula: every candidate stop
is computed for every row and the earliest one strictly inside the chunk wins,
through a chain of ``where``s in the same order as core's ``_earlier`` calls.
Candidate stops that do not apply become the largest int64 and fold in with
``minimum``; a flag passed as one Python bool computes only its own branch.
"""

from __future__ import annotations

import torch

from .backend import resolve_backend
from .split_batch import LARGEST, Grid, SplitBatch

__all__ = ["mamba_block_aligned_split", "split_torch"]


def _last_cacheable(
    tokens: torch.Tensor, unit: Grid, eagle: torch.Tensor, uniform: bool | None
) -> torch.Tensor:
    """``core.last_cacheable_position`` per row, computing only the branch in use."""
    if uniform is not True:
        without = unit.floor(tokens - 1)
        if uniform is False:
            return without
    with_eagle = (unit.floor(tokens) - unit.rows).clamp_(min=0)
    return with_eagle if uniform else torch.where(eagle, with_eagle, without)


def split_torch(batch: SplitBatch) -> torch.Tensor:
    """Tokens to schedule per row (int64), vectorised with torch.

    Each candidate stop that is not strictly after the start is replaced by
    the largest int64 and folded in with ``minimum``: the earliest candidate
    inside the chunk wins, as in core.
    """
    start, new, block = batch.start, batch.num_new_tokens, batch.block_size
    prompt, total = batch.num_prompt_tokens, batch.num_tokens
    prefill_end = torch.maximum(prompt, total - 1)
    end = start + new
    aligned = block.floor(end)
    take = end < prefill_end
    if batch.max_prefill_tokens is not None:
        take &= (aligned > start) | (block.rows <= batch.max_prefill_tokens)
    end = torch.where(take, aligned, end)

    never = torch.full((1,), LARGEST, dtype=torch.int64, device=start.device)
    offset = block.remainder(start)
    stop = torch.minimum(end, torch.where(offset != 0, start - offset + block.rows, never))
    last_cacheable = _last_cacheable(total, block, batch.use_eagle, batch.eagle)
    stop = torch.minimum(stop, torch.where(last_cacheable > start, last_cacheable, never))
    if batch.partial is not False:
        unit = batch.hash_block_size
        tail = _last_cacheable(prompt, unit, batch.use_eagle, batch.eagle)
        usable = batch.partial_hits & (last_cacheable < tail) & (tail < prompt) & (tail > start)
        stop = torch.minimum(stop, torch.where(usable, tail, never))
    junction = batch.shared_prefix_boundary
    inside = (start < junction) & (junction < end)
    junction_stop = junction - block.remainder(junction - start)
    usable = inside & (junction_stop > start)
    stop = torch.minimum(stop, torch.where(usable, junction_stop, never))
    return torch.where(start >= prefill_end, new, (stop - start).clamp_(min=0))


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
    backend: str = "auto",
) -> torch.Tensor:
    """``core.mamba_block_aligned_split`` for a batch: one int64 result per row.

    Every argument is a Python scalar or a 1-D tensor with one entry per
    request (at least one must be a tensor; all tensors share length and
    device). Guarantees ``result[r]`` equals core's answer for row ``r``.
    Raises :class:`core.InvalidArgument` naming the argument and row that
    breaks one of core's rules, or a bad ``backend``.
    """
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
    )
    if resolve_backend(backend, batch.shape.device) == "triton":
        from .triton_kernels import split_triton

        return split_triton(batch)
    return split_torch(batch)
