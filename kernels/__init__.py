"""Batched decision paths (torch on CPU/CUDA, Triton), proven equal to ``core``.

Not built yet: the batched stop point, masks and junction arrive with the
kernels issue. Nothing here is imported by ``core`` or ``reference``.
"""
