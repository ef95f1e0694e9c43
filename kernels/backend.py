"""Choosing the implementation behind a batched decision.

``"auto"`` picks Triton for CUDA tensors and torch elsewhere; ``"torch"``
and ``"triton"`` force one. Triton on CPU tensors runs only through its
interpreter (``TRITON_INTERPRET=1``, set before the kernels are defined), which
the tests use; otherwise asking for it on CPU is an error, not a fallback, so
a benchmark never measures something other than what it names.
"""

from __future__ import annotations

import importlib.util
import os

import torch

from junction.core import InvalidArgument

__all__ = ["BACKENDS", "resolve_backend"]

BACKENDS = ("auto", "torch", "triton")


def triton_available() -> bool:
    return importlib.util.find_spec("triton") is not None


def resolve_backend(backend: str, device: torch.device) -> str:
    """``"torch"`` or ``"triton"`` for tensors on ``device``."""
    if backend not in BACKENDS:
        raise InvalidArgument("backend", backend, f"must be one of {BACKENDS}")
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if backend == "auto":
        return "triton" if device.type == "cuda" and triton_available() else "torch"
    if backend == "triton":
        if not triton_available():
            raise InvalidArgument("backend", backend, "triton is not installed")
        if device.type != "cuda" and not interpreted:
            raise InvalidArgument(
                "backend",
                backend,
                f"Triton runs on CUDA tensors (these are on {device}) or under TRITON_INTERPRET=1",
            )
    return backend
