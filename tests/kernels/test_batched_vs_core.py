"""Every backend equals core element by element (CPU: torch, and Triton interpreted).

Batches are ragged and may be empty; rows cover the whole space of the core
properties. The same properties run on CUDA tensors in ``test_cuda.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from junction import kernels
from junction.core import GroupSpec, OffGridInterval, reachable_block_mask, shared_prefix_boundary

from .batches import (
    assert_mask_matches_core,
    batched_mask,
    core_splits,
    mask_batches,
    split_batches,
    split_tensors,
)

BACKENDS = ["torch", "triton"]


@pytest.mark.parametrize("backend", BACKENDS)
@given(rows=split_batches(), shared_as_scalars=st.booleans())
def test_split_matches_core(
    backend: str, rows: list[dict[str, Any]], shared_as_scalars: bool
) -> None:
    arguments = split_tensors(rows, shared_as_scalars=shared_as_scalars)
    if shared_as_scalars and not any(isinstance(v, torch.Tensor) for v in arguments.values()):
        arguments["num_tokens"] = torch.tensor([row["num_tokens"] for row in rows])
    got = kernels.mamba_block_aligned_split(**arguments, backend=backend)
    assert got.dtype is torch.int64
    assert got.tolist() == core_splits(rows)


@pytest.mark.parametrize("backend", BACKENDS)
@given(case=mask_batches())
def test_mask_matches_core(
    backend: str, case: tuple[dict[str, Any], list[tuple[int, int, list[int]]]]
) -> None:
    config, rows = case
    assert_mask_matches_core(batched_mask(config, rows, backend), config, rows)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", list(OffGridInterval))
def test_an_off_grid_interval_takes_the_form_asked_for(backend: str, form: OffGridInterval) -> None:
    # The finding's call (docs/findings.md): the two forms keep different runs.
    window = GroupSpec.sliding_window(16, 17)
    start, end = torch.tensor([0, 5, 20]), torch.tensor([24, 9, 20])
    got = kernels.reachable_block_mask(
        start, end, 64, window, False, 96, off_grid_interval=form, backend=backend
    )
    assert got is not None
    for row, (first, last) in enumerate(zip(start.tolist(), end.tolist(), strict=True)):
        want = reachable_block_mask(first, last, 64, window, False, 96, off_grid_interval=form)
        assert got[row, : last - first].tolist() == want


@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), max_size=50))
def test_junction_matches_core(pairs: list[tuple[int, int]]) -> None:
    hits = [min(a, b) for a, b in pairs]
    longest = [max(a, b) for a, b in pairs]
    got = kernels.shared_prefix_boundary(
        torch.tensor(hits, dtype=torch.int64), torch.tensor(longest, dtype=torch.int64)
    )
    assert got.tolist() == [
        shared_prefix_boundary(h, m) for h, m in zip(hits, longest, strict=True)
    ]


@given(rows=split_batches(max_rows=8), data=st.data())
def test_scalars_broadcast_like_tensors(rows: list[dict[str, Any]], data: st.DataObject) -> None:
    """An argument shared by every row may be passed as a Python scalar."""
    if not rows:
        return
    tensors = split_tensors(rows)
    name = data.draw(st.sampled_from(sorted(k for k, v in tensors.items() if v is not None)))
    shared = [{**row, name: rows[0][name]} for row in rows]
    try:
        want = core_splits(shared)
    except ValueError:
        return  # sharing row 0's value made another row invalid; covered elsewhere
    scalar_args = {**split_tensors(shared), name: rows[0][name]}
    assert kernels.mamba_block_aligned_split(**scalar_args, backend="torch").tolist() == want
