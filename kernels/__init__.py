"""Batched decision paths (torch on CPU/CUDA, Triton), proven equal to ``core``.

One dispatch entry per decision, each taking ``backend="auto" | "torch" |
"triton"`` (auto: Triton for CUDA tensors, torch elsewhere):
:func:`mamba_block_aligned_split`, :func:`reachable_block_mask` (one group)
and :func:`shared_prefix_boundary`. Row ``r`` of the answer is core's answer
for row ``r``, exactly, or the call raises :class:`core.InvalidArgument`
naming the argument, the first offending row, its value and the rule: a row
breaking one of core's rules, or holding a value int64 cannot. No sum these
paths form leaves int64 for a row they accept (docs/design/int64-offsets.md).
An engine that vendored the core passes its copy as ``core=`` (``binding``).
"""

from .junction import shared_prefix_boundary
from .mask import reachable_block_mask
from .split import mamba_block_aligned_split

__all__ = ["mamba_block_aligned_split", "reachable_block_mask", "shared_prefix_boundary"]
