"""Batched decision paths (torch on CPU/CUDA, Triton), proven equal to ``core``.

One dispatch entry per decision, each taking ``backend="auto" | "torch" |
"triton"`` (auto: Triton for CUDA tensors, torch elsewhere):

* :func:`mamba_block_aligned_split`: the stop point, one row per request;
* :func:`reachable_block_mask`: requests x blocks masks of one group;
* :func:`shared_prefix_boundary`: the junction from hit lengths.

Guarantee: row ``r`` of the answer is core's answer for row ``r``, exactly,
or the call raises :class:`core.InvalidArgument` naming the argument, the
first offending row (``num_tokens[3]``), its value and the rule. A row is
rejected when it breaks one of core's rules (core rejects it too) or holds a
value int64 cannot (a Python scalar outside int64, a uint16/32/64 tensor, a
sparse group's size); no sum or product these paths form leaves int64 for
any row they accept (``split.py`` and ``mask.py`` say how), so there is no
third outcome. ``core`` never imports this package.

An engine that vendored the core passes its copy as ``core=`` (``binding``):
specs are then the copy's, and errors the copy's ``InvalidArgument``.
"""

from .junction import shared_prefix_boundary
from .mask import reachable_block_mask
from .split import mamba_block_aligned_split

__all__ = ["mamba_block_aligned_split", "reachable_block_mask", "shared_prefix_boundary"]
