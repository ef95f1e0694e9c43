"""The validated int64 rows of a batched split, shared by the torch and Triton paths.

Its own module so that ``split.py`` (which dispatches to Triton) and
``triton_kernels.py`` (which reads these rows) both import it and not each other.

The one sum validation needs, the chunk start ``computed + local + external``,
is checked against ``num_tokens`` without being formed (it may leave int64),
so a row core rejects is rejected here too; once it passes, the start fits.
Everything the formulas derive from these rows is an offset from the start
(see ``split.py``), so no other row needs rejecting for int64's sake.
"""

from __future__ import annotations

import torch

from junction.core import InvalidArgument

from .batch import (
    BatchShape,
    flag_rows,
    int_rows,
    require_at_least,
    require_int64,
    require_rows,
    require_sum_at_most,
)

__all__ = ["Grid", "SplitBatch"]

_NOT_INT_ROWS = (
    "use_eagle",
    "partial_hits",
    "hash_block_size",
    "max_prefill_tokens",
    "exact_junction_stop",
    "prefill_checkpoints",
)


class SplitBatch:
    """Validated int64 rows of a batched split.

    Scalars arrive as stride-0 views; a flag passed as one Python bool is also
    kept as ``eagle`` / ``partial`` / ``exact`` so the formulas can skip the
    other branch. ``checkpoints`` is the engine's one internal checkpoint
    setting, ``(alignment, unit, keyed_on_prefill_end)``, or ``None``.
    ``max_prefill_tokens`` is ``None`` for "no limit" (the Triton launcher
    turns it into the largest int64).
    """

    def __init__(self, **arguments: object) -> None:
        shape = BatchShape(arguments)
        self.shape = shape
        rows = {
            name: int_rows(name, value, shape)
            for name, value in arguments.items()
            if name not in _NOT_INT_ROWS
        }
        for name in (
            "num_computed_tokens",
            "num_new_tokens",
            "shared_prefix_boundary",
            "num_new_local_computed_tokens",
            "num_external_computed_tokens",
            "hash_lookahead_tokens",
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
        local = rows["num_new_local_computed_tokens"]
        external = rows["num_external_computed_tokens"]
        require_sum_at_most(
            "num_computed_tokens",
            computed,
            (local, external),
            total,
            "the chunk start (computed + local + external) must be <= num_tokens",
        )
        self.start = computed + local + external  # <= num_tokens: fits in int64
        self.num_new_tokens = rows["num_new_tokens"]
        self.num_prompt_tokens = prompt
        self.num_tokens = total
        self.block_size = Grid(block, arguments["block_size"])
        self.shared_prefix_boundary = rows["shared_prefix_boundary"]
        self.hash_block_size = Grid(hash_unit, arguments["block_size"] if unit is None else unit)
        self.hash_lookahead_tokens = rows["hash_lookahead_tokens"]
        self.exact_junction_stop, self.exact = flag_rows(
            "exact_junction_stop", arguments["exact_junction_stop"], shape
        )
        self.checkpoints = _checkpoints(arguments["prefill_checkpoints"], hash_unit)


def _checkpoints(value: object, hash_unit: torch.Tensor) -> tuple[int, int, bool] | None:
    """``(alignment, unit, keyed_on_prefill_end)`` of one engine's internal checkpoints
    (any core copy's ``PrefillCheckpoints``: read by its fields), or ``None``."""
    if value is None:
        return None
    alignment, unit = getattr(value, "alignment", None), getattr(value, "unit", None)
    keyed = getattr(value, "keyed_on_prefill_end", None)
    if (
        type(alignment) is not int
        or type(unit) is not int
        or type(keyed) is not bool
        or alignment < 1
        or unit < 1
    ):
        raise InvalidArgument("prefill_checkpoints", value, "must be None or a PrefillCheckpoints")
    require_int64("prefill_checkpoints", alignment)
    require_int64("prefill_checkpoints", unit)
    if hash_unit.numel() and bool((unit % hash_unit != 0).any()):
        raise InvalidArgument(
            "prefill_checkpoints",
            value,
            "its unit must be a multiple of every row's hash_block_size",
        )
    return alignment, unit, keyed


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
