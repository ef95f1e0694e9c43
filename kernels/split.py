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

from core import InvalidArgument

from .backend import resolve_backend
from .batch import BatchShape, flag_rows, int_rows, require_at_least, require_rows

__all__ = ["SplitBatch", "mamba_block_aligned_split", "split_torch"]

LARGEST = torch.iinfo(torch.int64).max


class SplitBatch:
    """Validated int64 rows of a batched split.

    Scalars arrive as stride-0 views; a flag passed as one Python bool is also
    kept as ``eagle`` / ``partial`` so the formulas can skip the other branch.
    ``max_prefill_tokens`` is ``None`` for "no limit" (the Triton launcher
    turns it into the largest int64).
    """

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
            require_at_least(name, rows[name], 0, "must be >= 0")
        prompt, total, block = rows["num_prompt_tokens"], rows["num_tokens"], rows["block_size"]
        require_at_least("num_prompt_tokens", prompt, 1, "must be >= 1")
        require_rows("num_tokens", total, total < prompt, "must be >= num_prompt_tokens")
        require_at_least("block_size", block, 1, "must be >= 1")
        self.use_eagle, self.eagle = flag_rows("use_eagle", arguments["use_eagle"], shape)
        self.partial_hits, self.partial = flag_rows(
            "partial_hits", arguments["partial_hits"], shape
        )
        unit = arguments["hash_block_size"]
        hash_unit = block if unit is None else int_rows("hash_block_size", unit, shape)
        if unit is not None:
            require_at_least("hash_block_size", hash_unit, 1, "must be >= 1")
            require_rows(
                "hash_block_size", hash_unit, block % hash_unit != 0, "must divide block_size"
            )
        limit = arguments["max_prefill_tokens"]
        self.max_prefill_tokens: torch.Tensor | None = None
        if limit is not None:
            if isinstance(limit, bool):
                raise InvalidArgument("max_prefill_tokens", limit, "must be None or an int >= 1")
            self.max_prefill_tokens = int_rows("max_prefill_tokens", limit, shape)
            require_at_least("max_prefill_tokens", self.max_prefill_tokens, 1, "must be >= 1")
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
        self.block_size = Grid(block, arguments["block_size"])
        self.shared_prefix_boundary = rows["shared_prefix_boundary"]
        self.hash_block_size = Grid(hash_unit, arguments["block_size"] if unit is None else unit)


class Grid:
    """A per-row grid size; a shared power of two takes remainders with a bit mask."""

    def __init__(self, rows: torch.Tensor, shared: object) -> None:
        self.rows = rows
        self.low_bits: int | None = None
        if isinstance(shared, int) and shared > 0 and shared & (shared - 1) == 0:
            self.low_bits = shared - 1  # shared was validated by int_rows: never a bool

    def remainder(self, values: torch.Tensor) -> torch.Tensor:
        if self.low_bits is not None:
            return values & self.low_bits  # floor-mod, negatives included (two's complement)
        return values % self.rows

    def floor(self, values: torch.Tensor) -> torch.Tensor:
        return values - self.remainder(values)


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
