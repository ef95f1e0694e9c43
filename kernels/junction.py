"""Decision 1, batched: the junction from each request's reconciled hit lengths.

Reconciliation itself walks hash chains and stays in ``core`` (a finder is a
lookup, not arithmetic); what a device-side engine needs batched is the last
step, ``core.shared_prefix_boundary``: the longest single-group hit becomes
the junction exactly where it exceeds the reconciled hit.
"""

from __future__ import annotations

import torch

from .backend import resolve_backend
from .batch import BatchShape, int_rows, require_rows
from .binding import errors_of, resolve_core

__all__ = ["shared_prefix_boundary"]


def shared_prefix_boundary(
    hit_length: object,
    longest_hit_length: object,
    *,
    backend: str = "auto",
    core: object = None,
) -> torch.Tensor:
    """Per row, ``longest_hit_length`` where it exceeds ``hit_length``, else 0 (int64).

    Guarantees core's answer for every row (only comparisons: no value is
    formed, so none can leave int64). Raises :class:`core.InvalidArgument`
    naming the argument and first offending row for a negative hit or a hit
    exceeding its longest single-group hit (core raises too), and for a Python
    scalar outside int64 or a uint16/32/64 tensor. Every backend runs this one
    torch expression: it is a single elementwise ``where``, which no kernel beats.
    ``core``: the core module the answer is for (``binding``; default ``junction.core``).
    """
    with errors_of(resolve_core(core)):
        shape = BatchShape({"hit_length": hit_length, "longest_hit_length": longest_hit_length})
        hit = int_rows("hit_length", hit_length, shape)
        longest = int_rows("longest_hit_length", longest_hit_length, shape)
        resolve_backend(backend, shape.device)
        require_rows("hit_length", hit, hit < 0, "must be >= 0")
        require_rows("longest_hit_length", longest, longest < hit, "must be >= hit_length")
        return torch.where(longest > hit, longest, torch.zeros_like(longest))
