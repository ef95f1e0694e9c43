"""The batched paths on CUDA tensors (``make verify-gpu``; skipped without a GPU)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import given

from junction import kernels
from junction.kernels.backend import resolve_backend

from .batches import (
    assert_mask_matches_core,
    batched_mask,
    core_splits,
    mask_batches,
    split_batches,
    split_tensors,
)

pytestmark = pytest.mark.cuda

BACKENDS = ["torch", "triton", "auto"]


def test_auto_picks_triton_on_cuda() -> None:
    assert resolve_backend("auto", torch.device("cuda")) == "triton"


@pytest.mark.parametrize("backend", BACKENDS)
@given(rows=split_batches())
def test_split_matches_core_on_cuda(backend: str, rows: list[dict[str, Any]]) -> None:
    got = kernels.mamba_block_aligned_split(**split_tensors(rows, "cuda"), backend=backend)
    assert got.device.type == "cuda"
    assert got.cpu().tolist() == core_splits(rows)


@pytest.mark.parametrize("backend", BACKENDS)
@given(case=mask_batches())
def test_mask_matches_core_on_cuda(
    backend: str, case: tuple[dict[str, Any], list[tuple[int, int, list[int]]]]
) -> None:
    config, rows = case
    assert_mask_matches_core(batched_mask(config, rows, backend, "cuda"), config, rows)
