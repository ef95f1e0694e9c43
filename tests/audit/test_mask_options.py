"""The mask's options against vLLM 0.33.0's own ``reachable_block_mask``.

The differential tests of ``test_differential.py`` reach the mask through
geometries, whose retention interval is a multiple of ``L``; here the class
method is called directly, as vLLM's offloading connector calls it: any
interval (off the group's grid too) and a final segment end. vLLM's form is
the core's ``OffGridInterval.FLOORED_INTERVAL``; the core's own form differs
only off the grid, where the recorded finding shows vLLM losing a promised
segment state (``audit/vllm/mask_findings.py``).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from junction.audit.vllm.mask_findings import MASK_FINDINGS, MaskFinding
from junction.audit.vllm.masks import vllm_group_mask
from junction.core import GroupMask, GroupSpec, OffGridInterval

from .strategies import examples


@st.composite
def _calls(
    draw: st.DrawFn,
) -> tuple[GroupSpec, int, bool, int | None, int, int, list[int], int | None]:
    block = draw(st.integers(1, 8))
    group = draw(st.sampled_from([GroupSpec.mamba(block), GroupSpec.sliding_window(block, 1)]))
    if group.window is not None:
        group = GroupSpec.sliding_window(block, draw(st.integers(1, 24)))
    alignment = draw(st.one_of(st.integers(1, 4).map(lambda k: k * block), st.integers(1, 16)))
    interval = draw(st.one_of(st.none(), st.just(0), st.integers(1, 60)))
    start = draw(st.integers(0, 30))
    end = draw(st.integers(start, start + 40))
    boundaries = draw(st.lists(st.integers(0, (end + 4) * block), max_size=3))
    final = draw(st.one_of(st.none(), st.integers(0, end + 8)))
    return group, alignment, draw(st.booleans()), interval, start, end, boundaries, final


@settings(max_examples=examples(1.0))
@given(_calls())
def test_the_floored_form_is_vllms_mask_options_included(
    call: tuple[GroupSpec, int, bool, int | None, int, int, list[int], int | None],
) -> None:
    group, alignment, eagle, interval, start, end, boundaries, final = call
    ours = GroupMask(
        alignment, group, eagle, interval, OffGridInterval.FLOORED_INTERVAL
    ).reachable_block_mask(start, end, boundaries, final)
    theirs = vllm_group_mask(group, start, end, alignment, eagle, interval, boundaries, final)
    assert ours == theirs, call


@pytest.mark.parametrize("finding", MASK_FINDINGS, ids=lambda f: f.key)
def test_mask_findings_still_reproduce(finding: MaskFinding) -> None:
    seen = finding.observe()
    assert seen.core_serves, f"{finding.key}: the core no longer keeps what the landing needs"
    assert not seen.vllm_serves, f"{finding.key}: vLLM now keeps what the landing needs"
