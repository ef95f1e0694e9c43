"""Kernel tests run the Triton kernels through the interpreter when no GPU is present.

``TRITON_INTERPRET`` must be set before the kernels are defined, so it is set
here, before any test module imports ``kernels.triton_kernels``. Tests marked
``cuda`` need a GPU and are skipped elsewhere, with the reason in the summary.
"""

from __future__ import annotations

import os

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run `make verify-gpu` on a GPU machine)")
    for item in items:
        if "cuda" in item.keywords and not HAS_CUDA:
            item.add_marker(skip)
