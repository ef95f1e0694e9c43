"""Batched decision paths (torch on CPU/CUDA, Triton), proven equal to ``core``.

One dispatch entry per decision, each taking ``backend="auto" | "torch" |
"triton"`` (auto: Triton for CUDA tensors, torch elsewhere):

* :func:`mamba_block_aligned_split`: the stop point, one row per request;
* :func:`reachable_block_mask`: requests x blocks masks of one group;
* :func:`shared_prefix_boundary`: the junction from hit lengths.

Inputs are validated with core's rules and errors (:class:`core.InvalidArgument`,
naming the argument and the offending row). ``core`` never imports this package.
"""

from .junction import shared_prefix_boundary
from .mask import reachable_block_mask
from .split import mamba_block_aligned_split

__all__ = ["mamba_block_aligned_split", "reachable_block_mask", "shared_prefix_boundary"]
