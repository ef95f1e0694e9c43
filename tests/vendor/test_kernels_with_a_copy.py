"""The batched paths against a vendored copy (``core=``): the copy's specs, plans and errors."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from junction import core as installed
from junction.reference import vendoring

torch = pytest.importorskip("torch")
kernels = pytest.importorskip("junction.kernels")


@pytest.fixture
def copy(vendored: Path) -> ModuleType:
    return vendoring.load(vendored)


def test_the_mask_of_a_copy_is_the_copys_answer(copy: ModuleType) -> None:
    spec = copy.GroupSpec.mamba(4)
    start = torch.tensor([0, 3, 7, 10])
    end = torch.tensor([9, 5, 20, 10])
    boundaries = torch.tensor([[18, -1], [13, 40], [-1, -1], [0, 44]])
    got = kernels.reachable_block_mask(
        start, end, 8, spec, False, 16, boundaries, backend="torch", core=copy
    )
    for row in range(4):
        known = [int(b) for b in boundaries[row] if b >= 0]
        want = copy.reachable_block_mask(int(start[row]), int(end[row]), 8, spec, False, 16, known)
        width = int(end[row] - start[row])
        assert got[row, :width].tolist() == want and not got[row, width:].any()


def test_a_copys_kernels_raise_the_copys_error(copy: ModuleType) -> None:
    rows = torch.tensor([4, 8])
    with pytest.raises(copy.InvalidArgument) as info:  # the kernels' own validation
        kernels.mamba_block_aligned_split(
            num_computed_tokens=rows,
            num_new_tokens=rows,
            num_prompt_tokens=torch.tensor([4, 0]),
            num_tokens=rows,
            block_size=4,
            backend="torch",
            core=copy,
        )
    assert info.value.argument == "num_prompt_tokens[1]"
    assert not isinstance(info.value, installed.InvalidArgument)
    with pytest.raises(copy.InvalidArgument) as info:
        kernels.shared_prefix_boundary(rows, rows - 1, backend="torch", core=copy)
    assert info.value.argument == "longest_hit_length[0]"


def test_a_spec_of_another_core_is_refused_by_name(copy: ModuleType) -> None:
    rows = torch.tensor([0, 1])
    with pytest.raises(copy.InvalidArgument) as info:  # the copy's mask_plan judges the spec
        kernels.reachable_block_mask(
            rows, rows, 4, installed.GroupSpec.mamba(4), False, backend="torch", core=copy
        )
    assert info.value.argument == "spec"


def test_core_must_be_a_core_module() -> None:
    rows = torch.tensor([1])
    for value in ("junction.core", torch):
        with pytest.raises(installed.InvalidArgument) as info:
            kernels.shared_prefix_boundary(rows, rows, core=value)
        assert info.value.argument == "core" and info.value.value is value
