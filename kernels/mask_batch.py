"""The validated rows of a batched mask, shared by the torch and Triton paths.

Its own module so that ``mask.py`` (which dispatches to Triton) and
``triton_kernels.py`` (which reads these rows) both import it and not each other.

Boundaries take only dtypes whose every value int64 holds: a uint64
``2**64 - 1`` would otherwise become the ``-1`` pad and silently vanish.
The row length ``end - start`` of two non-negative int64s always fits.
"""

from __future__ import annotations

import torch

from junction.core import InvalidArgument

from .batch import BatchShape, int_rows, require_integer_dtype, require_rows

__all__ = ["MaskBatch"]


class MaskBatch:
    """Validated rows of a batched mask: starts, lengths, boundaries, final
    segment ends (``-1``: none; ``None`` when no row has one), width."""

    def __init__(
        self,
        start_block: object,
        end_block: object,
        reachable_boundaries: object,
        final_segment_end_block: object = None,
    ) -> None:
        arguments = {"start_block": start_block, "end_block": end_block}
        if final_segment_end_block is not None:
            arguments["final_segment_end_block"] = final_segment_end_block
        shape = BatchShape(arguments)
        self.shape = shape
        start = int_rows("start_block", start_block, shape)
        end = int_rows("end_block", end_block, shape)
        require_rows("start_block", start, start < 0, "must be >= 0")
        require_rows("end_block", end, end < start, "must be >= start_block")
        final = None
        if final_segment_end_block is not None:
            final = int_rows("final_segment_end_block", final_segment_end_block, shape)
            require_rows(
                "final_segment_end_block", final, final < -1, "must be >= 0, or -1 for none"
            )
        self.end = end
        self.final = final
        if reachable_boundaries is None:
            boundaries = torch.empty((shape.rows, 0), dtype=torch.int64, device=shape.device)
        elif not isinstance(reachable_boundaries, torch.Tensor):
            raise InvalidArgument(
                "reachable_boundaries",
                type(reachable_boundaries).__name__,
                "must be None or a rows x K integer tensor padded with -1",
            )
        else:
            if reachable_boundaries.dim() != 2 or reachable_boundaries.shape[0] != shape.rows:
                raise InvalidArgument(
                    "reachable_boundaries",
                    tuple(reachable_boundaries.shape),
                    f"must have shape ({shape.rows}, K)",
                )
            if reachable_boundaries.device != shape.device:
                raise InvalidArgument(
                    "reachable_boundaries",
                    str(reachable_boundaries.device),
                    f"must be on {shape.device}",
                )
            boundaries = require_integer_dtype("reachable_boundaries", reachable_boundaries).to(
                torch.int64
            )
            bad = (boundaries < -1).any(dim=1)
            require_rows(
                "reachable_boundaries",
                boundaries.min(dim=1).values if boundaries.shape[1] else start,
                bad,
                "a boundary must be >= 0, or -1 for none",
            )
        self.start = start
        self.length = end - start
        self.boundaries = boundaries.contiguous()
        self.width = int(self.length.max()) if shape.rows else 0
