"""Batched inputs are rejected with core's errors, naming the argument and the row."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from junction import kernels
from junction.core import GroupSpec, InvalidArgument

from .batches import batched_mask, mask_batches, split_batches, split_tensors

# Each test draws one argument of a dozen to break; 100 examples break each several
# times over (the rule under test is core's, proven by tests/properties).
BUDGET = settings(max_examples=min(100, settings.default.max_examples))

# (argument, a value that breaks core's rule for it, given the row)
SPLIT_BREAKS = {
    "num_computed_tokens": lambda row: -1,
    "num_new_tokens": lambda row: -3,
    "num_prompt_tokens": lambda row: 0,
    "num_tokens": lambda row: row["num_prompt_tokens"] - 1,
    "block_size": lambda row: 0,
    "shared_prefix_boundary": lambda row: -2,
    "hash_block_size": lambda row: row["block_size"] + 1 if row["block_size"] > 1 else 0,
    "max_prefill_tokens": lambda row: 0,
    "num_new_local_computed_tokens": lambda row: -1,
    "num_external_computed_tokens": lambda row: -5,
    "hash_lookahead_tokens": lambda row: -1,
}


@BUDGET
@given(rows=split_batches(max_rows=10).filter(bool), data=st.data())
def test_split_names_the_argument_and_row(rows: list[dict[str, Any]], data: st.DataObject) -> None:
    row = data.draw(st.integers(0, len(rows) - 1))
    argument = data.draw(st.sampled_from(sorted(SPLIT_BREAKS)))
    value = SPLIT_BREAKS[argument](rows[row])
    broken = [dict(r) for r in rows]
    if argument == "max_prefill_tokens":
        broken = [{**r, argument: r[argument] or 10**9} for r in broken]
    broken[row][argument] = value
    with pytest.raises(InvalidArgument) as info:
        kernels.mamba_block_aligned_split(**split_tensors(broken), backend="torch")
    assert info.value.argument == f"{argument}[{row}]"
    assert info.value.value == value


@BUDGET
@given(rows=split_batches(max_rows=6).filter(bool), data=st.data())
def test_split_rejects_start_past_the_tokens(
    rows: list[dict[str, Any]], data: st.DataObject
) -> None:
    row = data.draw(st.integers(0, len(rows) - 1))
    broken = [dict(r) for r in rows]
    broken[row]["num_computed_tokens"] = broken[row]["num_tokens"] + 1
    with pytest.raises(InvalidArgument) as info:
        kernels.mamba_block_aligned_split(**split_tensors(broken), backend="torch")
    assert info.value.argument == f"num_computed_tokens[{row}]"


@BUDGET
@given(case=mask_batches().filter(lambda c: bool(c[1])), data=st.data())
def test_mask_names_the_argument_and_row(
    case: tuple[dict[str, Any], list[tuple[int, int, list[int]]]], data: st.DataObject
) -> None:
    config, rows = case
    row = data.draw(st.integers(0, len(rows) - 1))
    start, end, boundaries = (list(r) for r in zip(*rows, strict=True))
    argument = data.draw(st.sampled_from(["start_block", "end_block", "reachable_boundaries"]))
    if argument == "start_block":
        start[row] = -1
    elif argument == "end_block":
        end[row] = start[row] - 1
    else:
        boundaries[row] = [*boundaries[row], -7]
    broken = list(zip(start, end, boundaries, strict=True))
    with pytest.raises(InvalidArgument) as info:
        batched_mask(config, broken, "torch")
    assert info.value.argument == f"{argument}[{row}]"


def test_structural_errors_name_the_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = torch.tensor([4, 8])
    spec = GroupSpec.mamba(4)

    def split(**overrides: Any) -> torch.Tensor:
        args: dict[str, Any] = dict(
            num_computed_tokens=0,
            num_new_tokens=rows,
            num_prompt_tokens=rows,
            num_tokens=rows,
            block_size=4,
        )
        return kernels.mamba_block_aligned_split(**{**args, **overrides})

    cases: list[tuple[Any, str]] = [
        (lambda: split(num_tokens=torch.tensor([4, 8, 9])), "num_tokens"),
        (lambda: split(num_tokens=rows.reshape(2, 1)), "num_tokens"),
        (lambda: split(num_tokens=rows.float()), "num_tokens"),
        (lambda: split(use_eagle=torch.tensor([0, 1])), "use_eagle"),
        (lambda: split(use_eagle=1), "use_eagle"),
        (lambda: split(block_size=4.0), "block_size"),
        (lambda: split(max_prefill_tokens=True), "max_prefill_tokens"),
        (lambda: split(backend="cuda"), "backend"),
        (lambda: split(num_new_tokens=4, num_prompt_tokens=8, num_tokens=8), "arguments"),
        (
            lambda: kernels.reachable_block_mask(rows, rows, 4, spec, False, 0, rows),
            "reachable_boundaries",
        ),
        # Off the grid of a Mamba group whose A (6) and B (4) do not divide one another.
        (
            lambda: kernels.reachable_block_mask(rows, rows, 6, spec, False, 10),
            "retention_interval",
        ),
        (
            lambda: kernels.reachable_block_mask(
                rows, rows, 4, spec, False, 0, final_segment_end_block=rows.float()
            ),
            "final_segment_end_block",
        ),
        (
            lambda: kernels.reachable_block_mask(
                rows, rows, 4, spec, False, 0, final_segment_end_block=rows - 6
            ),
            "final_segment_end_block[0]",
        ),
        (
            # An off-grid interval's runs are found from end_block * B: it must fit.
            lambda: kernels.reachable_block_mask(
                torch.tensor([0, 2**62]),
                torch.tensor([1, 2**62]),
                4,
                GroupSpec.sliding_window(4, 5),
                False,
                6,
            ),
            "end_block[1]",
        ),
        (lambda: kernels.reachable_block_mask(rows, rows, 0, spec, False, 0), "alignment_tokens"),
        (lambda: kernels.shared_prefix_boundary(rows, rows - 1), "longest_hit_length[0]"),
    ]
    for call, argument in cases:
        with pytest.raises(InvalidArgument) as info:
            call()
        assert info.value.argument == argument, (argument, info.value)
    # Triton on CPU tensors only under the interpreter; never a silent fallback.
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(InvalidArgument) as info:
        split(backend="triton")
    assert info.value.argument == "backend"
