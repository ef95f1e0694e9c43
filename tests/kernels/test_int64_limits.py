"""Hostile inputs near int64's limits: the batched paths give core's answer or reject.

Core computes in Python integers, the batched paths in int64, so values here
are drawn near ``2**62 .. 2**63 - 1`` and mixed with small ones, where the
chunk start ``computed + local + external``, the chunk end ``start +
num_new_tokens``, the next grid point, a boundary's run end and the periodic
residue all pass int64 when formed. Every accepted batch must equal core row
by row; a rejected one must name a row (and argument) that core rejects too,
and a batch holding a row core rejects must be rejected, never answered.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from junction import kernels
from junction.core import GroupSpec, InvalidArgument, mamba_block_aligned_split

from .batches import FLAGS, assert_mask_matches_core, batched_mask, split_tensors

LIMIT = 2**63 - 1
# The Triton interpreter runs a launch in numpy: a few batches, not hundreds.
INTERPRETED = settings(max_examples=30)
# The torch path near the limits: 150 examples reach every limit the strategies aim
# at many times over (their draws are skewed to the edges).
NEAR_LIMITS = settings(max_examples=min(150, settings.default.max_examples))


def near_limits(minimum: int, maximum: int = LIMIT) -> st.SearchStrategy[int]:
    """Small values, values in the top half up to ``maximum``, and its last few."""
    # Distinct ranges only: one_of drops a branch equal to another only while
    # st.integers' cache still holds it, which would make generation flaky.
    ranges = {
        (minimum, min(64, maximum)),
        (max(minimum, maximum // 2), maximum),
        (max(minimum, maximum - 64), maximum),
    }
    return st.one_of([st.integers(low, high) for low, high in sorted(ranges)])


@st.composite
def split_rows(draw: st.DrawFn, maximum: int = LIMIT) -> dict[str, Any]:
    """One split row, every argument within core's rules except, at times, the start."""
    total = draw(near_limits(1, maximum))
    prompt = draw(st.one_of(st.just(total), near_limits(1, total)))
    if draw(st.booleans()):
        # A start within num_tokens (core accepts), often at its end.
        computed = draw(st.one_of(st.integers(0, total), st.just(total)))
        local = draw(st.integers(0, total - computed))
        external = draw(st.integers(0, total - computed - local))
    else:
        # Counts drawn freely: their sum may pass num_tokens, or int64.
        computed, local, external = (draw(near_limits(0, maximum)) for _ in range(3))
    block = draw(near_limits(1, maximum))
    halves = [block // 2] if block % 2 == 0 else []
    return {
        "num_computed_tokens": computed,
        "num_new_tokens": draw(near_limits(0, maximum)),
        "num_prompt_tokens": prompt,
        "num_tokens": total,
        "block_size": block,
        "shared_prefix_boundary": draw(near_limits(0, maximum)),
        "use_eagle": draw(st.booleans()),
        "hash_block_size": draw(st.sampled_from([1, block, *halves])),
        "partial_hits": draw(st.booleans()),
        "max_prefill_tokens": None,
        "num_new_local_computed_tokens": local,
        "num_external_computed_tokens": external,
    }


@st.composite
def split_batches(draw: st.DrawFn, maximum: int = LIMIT) -> list[dict[str, Any]]:
    """Rows sharing ``max_prefill_tokens`` being None (a tensor holds no None)."""
    rows = draw(st.lists(split_rows(maximum), min_size=1, max_size=6))
    if draw(st.booleans()):
        rows = [{**row, "max_prefill_tokens": draw(near_limits(1, maximum))} for row in rows]
    return rows


def core_answers(rows: list[dict[str, Any]]) -> list[int | InvalidArgument]:
    """Core's answer per row, or the error it raises for that row."""
    answers: list[int | InvalidArgument] = []
    for row in rows:
        try:
            answers.append(mamba_block_aligned_split(**row))
        except InvalidArgument as error:
            answers.append(error)
    return answers


def assert_core_or_rejected(wants: list[int | InvalidArgument], batched: Callable[[], Any]) -> Any:
    """The batched answer, after checking it against core's answers (or errors) per row."""
    try:
        got = batched()
    except InvalidArgument as error:
        name, _, index = error.argument.partition("[")
        row = int(index.rstrip("]"))
        want = wants[row]
        assert isinstance(want, InvalidArgument), f"row {row} rejected, core answers {want}"
        assert want.argument == name, f"row {row}: batched says {error}, core says {want}"
        return None
    errors = [want for want in wants if isinstance(want, InvalidArgument)]
    assert not errors, f"answered a batch core rejects: {errors}"
    return got


def check_split(rows: list[dict[str, Any]], backend: str, shared_as_scalars: bool) -> None:
    wants = core_answers(rows)
    arguments = split_tensors(rows, shared_as_scalars=shared_as_scalars)
    if not any(isinstance(value, torch.Tensor) for value in arguments.values()):
        arguments["num_tokens"] = torch.tensor([row["num_tokens"] for row in rows])
    got = assert_core_or_rejected(
        wants, lambda: kernels.mamba_block_aligned_split(**arguments, backend=backend)
    )
    if got is not None:
        assert got.tolist() == wants


# The issue's two cases: a chunk end past int64 (core answers 2: the next grid
# point), and three start counts of 2**62 whose sum wrapped below num_tokens.
CHUNK_END_PAST_INT64: list[dict[str, Any]] = [
    {
        **{name: 0 for name in ("num_new_local_computed_tokens", "num_external_computed_tokens")},
        "num_computed_tokens": 2,
        "num_new_tokens": 2**63 - 2,
        "num_prompt_tokens": 10,
        "num_tokens": 10,
        "block_size": 4,
        "shared_prefix_boundary": 0,
        "use_eagle": False,
        "hash_block_size": 4,
        "partial_hits": False,
        "max_prefill_tokens": None,
    }
]
STARTS_WRAPPING_PAST_INT64: list[dict[str, Any]] = [
    {
        **CHUNK_END_PAST_INT64[0],
        "num_computed_tokens": 2**62,
        "num_new_local_computed_tokens": 2**62,
        "num_external_computed_tokens": 2**62,
        "num_new_tokens": 4,
    }
]


@pytest.mark.parametrize("backend", ["torch", "triton"])
def test_the_issues_cases(backend: str) -> None:
    got = kernels.mamba_block_aligned_split(**split_tensors(CHUNK_END_PAST_INT64), backend=backend)
    assert got.tolist() == [mamba_block_aligned_split(**CHUNK_END_PAST_INT64[0])] == [2]
    with pytest.raises(InvalidArgument) as info:
        kernels.mamba_block_aligned_split(
            **split_tensors(STARTS_WRAPPING_PAST_INT64), backend=backend
        )
    assert info.value.argument == "num_computed_tokens[0]"
    assert "computed + local + external" in info.value.rule
    with pytest.raises(InvalidArgument):
        mamba_block_aligned_split(**STARTS_WRAPPING_PAST_INT64[0])


@NEAR_LIMITS
@given(rows=split_batches(), shared_as_scalars=st.booleans())
@example(rows=CHUNK_END_PAST_INT64, shared_as_scalars=False)
@example(rows=STARTS_WRAPPING_PAST_INT64, shared_as_scalars=True)
def test_split_near_int64_is_core_or_rejected(
    rows: list[dict[str, Any]], shared_as_scalars: bool
) -> None:
    check_split(rows, "torch", shared_as_scalars)


@INTERPRETED
@given(rows=split_batches(), shared_as_scalars=st.booleans())
def test_split_near_int64_is_core_or_rejected_in_triton(
    rows: list[dict[str, Any]], shared_as_scalars: bool
) -> None:
    check_split(rows, "triton", shared_as_scalars)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32])
@NEAR_LIMITS
@given(data=st.data())
def test_narrow_dtypes_near_their_limits(dtype: torch.dtype, data: st.DataObject) -> None:
    """Sums of narrow tensors (three int32 counts of 2**31 - 1) are taken in int64."""
    rows = data.draw(split_batches(torch.iinfo(dtype).max))
    wants = core_answers(rows)
    arguments = {
        name: value.to(dtype) if isinstance(value, torch.Tensor) and name not in FLAGS else value
        for name, value in split_tensors(rows).items()
    }
    got = assert_core_or_rejected(
        wants, lambda: kernels.mamba_block_aligned_split(**arguments, backend="torch")
    )
    if got is not None:
        assert got.dtype is torch.int64
        assert got.tolist() == wants


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64])
def test_scalars_outside_int64_are_rejected(value: int) -> None:
    rows = torch.tensor([4, 8])
    with pytest.raises(InvalidArgument) as info:
        kernels.mamba_block_aligned_split(
            num_computed_tokens=0,
            num_new_tokens=rows,
            num_prompt_tokens=rows,
            num_tokens=value,
            block_size=4,
        )
    assert info.value.argument == "num_tokens"
    assert "int64" in info.value.rule
    with pytest.raises(InvalidArgument) as info:
        kernels.shared_prefix_boundary(rows, value)
    assert info.value.argument == "longest_hit_length"


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_dtypes_int64_cannot_hold_are_rejected(dtype: torch.dtype) -> None:
    """A uint64 ``2**64 - 1`` would become int64's ``-1``: the boundary pad."""
    rows = torch.tensor([4, 8])
    most = torch.full((2, 1), torch.iinfo(dtype).max, dtype=dtype)
    with pytest.raises(InvalidArgument) as info:
        kernels.reachable_block_mask(rows, rows, 4, GroupSpec.mamba(4), False, 8, most)
    assert info.value.argument == "reachable_boundaries"
    with pytest.raises(InvalidArgument) as info:
        kernels.mamba_block_aligned_split(
            num_computed_tokens=0,
            num_new_tokens=rows,
            num_prompt_tokens=rows,
            num_tokens=most[:, 0],
            block_size=4,
        )
    assert info.value.argument == "num_tokens"


def test_sparse_group_sizes_outside_int64_are_rejected() -> None:
    rows = torch.tensor([0, 1])
    with pytest.raises(InvalidArgument) as info:
        kernels.reachable_block_mask(rows, rows + 3, 1, GroupSpec.mamba(1), False, 2**64)
    assert info.value.argument == "retention_interval"
    # A dense group is answered (None) whatever its sizes: nothing is computed.
    assert kernels.reachable_block_mask(rows, rows, 2**64, GroupSpec.full(2**64), False) is None


MaskCase = tuple[dict[str, Any], list[tuple[int, int, list[int]]]]


@st.composite
def mask_cases(draw: st.DrawFn) -> MaskCase:
    """A sparse-capable group with sizes up to int64 and block ranges up to its end.

    Biased to the corners where int64 runs out: one-token blocks and
    alignment (a boundary is its own block index), the largest retention
    interval int64 holds (a period near ``2**63``), the first and last blocks
    and the last boundary.
    """
    block = draw(st.one_of(st.just(1), near_limits(1)))
    if draw(st.booleans()):
        spec = GroupSpec.mamba(block)
    else:
        spec = GroupSpec.sliding_window(block, draw(near_limits(1)))
    multiples = [block * k for k in range(1, 5) if block * k <= LIMIT]
    alignment = draw(st.one_of(st.just(block), st.sampled_from(multiples), near_limits(1)))
    unit = math.lcm(alignment, block)
    largest = LIMIT // unit * unit
    small = [unit * k for k in range(1, 5) if unit * k <= LIMIT]
    retention = draw(st.one_of(st.just(largest), st.sampled_from([None, 0, *small])))
    rows: list[tuple[int, int, list[int]]] = []
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.one_of(st.sampled_from([0, LIMIT - 40]), near_limits(0)))
        end = min(start + draw(st.integers(0, 40)), LIMIT)
        boundaries = draw(st.lists(st.one_of(st.just(LIMIT), near_limits(0)), max_size=3))
        rows.append((start, end, boundaries))
    config = {
        "alignment_tokens": alignment,
        "spec": spec,
        "use_eagle": draw(st.booleans()),
        "retention_interval": retention,
    }
    return config, rows


def check_mask(case: MaskCase, backend: str) -> None:
    config, rows = case
    assert_mask_matches_core(batched_mask(config, rows, backend), config, rows)


# EAGLE sliding window, B = A = 1 (block index = token), shift 1. With
# R = 2**63 - 1 the period is R: block 2's residue (phase + 2) = 2**63 wrapped
# into the run. With R = 0 and a window of 2**63 - 2 (a run as long), the
# boundary 2**63 - 1 ends its run at e = 2**63: core keeps blocks [2, 40).
PERIOD_NEAR_INT64: MaskCase = (
    {
        "alignment_tokens": 1,
        "spec": GroupSpec.sliding_window(1, 3),
        "use_eagle": True,
        "retention_interval": LIMIT,
    },
    [(0, 4, []), (LIMIT - 5, LIMIT, [LIMIT, 0])],
)
RUN_END_PAST_INT64: MaskCase = (
    {
        "alignment_tokens": 1,
        "spec": GroupSpec.sliding_window(1, LIMIT - 1),
        "use_eagle": True,
        "retention_interval": 0,
    },
    [(0, 40, [LIMIT]), (LIMIT - 5, LIMIT, [0])],
)


@NEAR_LIMITS
@given(case=mask_cases())
@example(case=PERIOD_NEAR_INT64)
@example(case=RUN_END_PAST_INT64)
def test_mask_near_int64_matches_core(case: MaskCase) -> None:
    check_mask(case, "torch")


@INTERPRETED
@given(case=mask_cases())
@example(case=PERIOD_NEAR_INT64)
@example(case=RUN_END_PAST_INT64)
def test_mask_near_int64_matches_core_in_triton(case: MaskCase) -> None:
    check_mask(case, "triton")
