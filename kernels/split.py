"""Decision 2, batched: the chunk stop point for many requests at once.

Same arguments and rules as ``core.mamba_block_aligned_split``, each either a
Python scalar (every row) or a 1-D tensor (one entry per request). The torch
path is a straight-line vectorisation of core's formula: every candidate stop
is computed for every row and the earliest one strictly inside the chunk wins,
through a chain of ``where``s in the same order as core's ``_earlier`` calls.
``max_prefill_tokens=None`` (no limit) becomes the largest int64, which makes
"the block fits the budget" true for every row without a branch.
"""

from __future__ import annotations

import torch

from core import InvalidArgument

from .backend import resolve_backend
from .batch import BatchShape, flag_rows, int_rows, require_rows

__all__ = ["SplitBatch", "mamba_block_aligned_split", "split_torch"]

NO_LIMIT = torch.iinfo(torch.int64).max


class SplitBatch:
    """Validated int64 rows of a batched split (flags as bool tensors)."""

    def __init__(self, **arguments: object) -> None:
        shape = BatchShape(arguments)
        self.shape = shape
        rows = {
            name: int_rows(name, value, shape)
            for name, value in arguments.items()
            if name not in ("use_eagle", "partial_hits", "hash_block_size", "max_prefill_tokens")
        }
        for name in (
            "num_computed_tokens",
            "num_new_tokens",
            "shared_prefix_boundary",
            "num_new_local_computed_tokens",
            "num_external_computed_tokens",
        ):
            require_rows(name, rows[name], rows[name] < 0, "must be >= 0")
        prompt, total, block = rows["num_prompt_tokens"], rows["num_tokens"], rows["block_size"]
        require_rows("num_prompt_tokens", prompt, prompt < 1, "must be >= 1")
        require_rows("num_tokens", total, total < prompt, "must be >= num_prompt_tokens")
        require_rows("block_size", block, block < 1, "must be >= 1")
        self.use_eagle = flag_rows("use_eagle", arguments["use_eagle"], shape)
        self.partial_hits = flag_rows("partial_hits", arguments["partial_hits"], shape)
        unit = arguments["hash_block_size"]
        hash_unit = block if unit is None else int_rows("hash_block_size", unit, shape)
        require_rows("hash_block_size", hash_unit, hash_unit < 1, "must be >= 1")
        require_rows("hash_block_size", hash_unit, block % hash_unit != 0, "must divide block_size")
        limit = arguments["max_prefill_tokens"]
        if limit is None:
            limit_rows = torch.full_like(block, NO_LIMIT)
        else:
            if isinstance(limit, bool):
                raise InvalidArgument("max_prefill_tokens", limit, "must be None or an int >= 1")
            limit_rows = int_rows("max_prefill_tokens", limit, shape)
            require_rows("max_prefill_tokens", limit_rows, limit_rows < 1, "must be >= 1")
        computed = rows["num_computed_tokens"]
        start = computed + rows["num_new_local_computed_tokens"]
        start = start + rows["num_external_computed_tokens"]
        require_rows(
            "num_computed_tokens",
            computed,
            start > total,
            "the chunk start (computed + local + external) must be <= num_tokens",
        )
        self.start = start
        self.num_new_tokens = rows["num_new_tokens"]
        self.num_prompt_tokens = prompt
        self.num_tokens = total
        self.block_size = block
        self.shared_prefix_boundary = rows["shared_prefix_boundary"]
        self.hash_block_size = hash_unit
        self.max_prefill_tokens = limit_rows


def split_torch(batch: SplitBatch) -> torch.Tensor:
    """Tokens to schedule per row (int64), vectorised with torch."""
    start, new, block = batch.start, batch.num_new_tokens, batch.block_size
    prompt, total, eagle = batch.num_prompt_tokens, batch.num_tokens, batch.use_eagle
    prefill_end = torch.maximum(prompt, total - 1)
    end = start + new
    aligned = end // block * block
    take = (end < prefill_end) & ((aligned > start) | (block <= batch.max_prefill_tokens))
    end = torch.where(take, aligned, end)

    def earlier(
        stop: torch.Tensor, candidate: torch.Tensor, allowed: torch.Tensor | None = None
    ) -> torch.Tensor:
        inside = (start < candidate) & (candidate < stop)
        return torch.where(inside if allowed is None else allowed & inside, candidate, stop)

    stop = end
    stop = earlier(stop, (start // block + 1) * block, start % block != 0)
    last_cacheable = torch.where(
        eagle, (total // block * block - block).clamp(min=0), (total - 1) // block * block
    )
    stop = earlier(stop, last_cacheable)
    unit = batch.hash_block_size
    tail = torch.where(
        eagle, (prompt // unit * unit - unit).clamp(min=0), (prompt - 1) // unit * unit
    )
    stop = earlier(stop, tail, batch.partial_hits & (last_cacheable < tail) & (tail < prompt))
    junction = batch.shared_prefix_boundary
    junction_stop = start + (junction - start).clamp(min=0) // block * block
    stop = earlier(stop, junction_stop, (start < junction) & (junction < end))
    return torch.where(start >= prefill_end, new, (stop - start).clamp(min=0))


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
