"""The mask's two options of docs/domain.md (decision 3), worked by hand.

The properties and the exhaustive walk prove the default form against the
oracle; vLLM's form (``OffGridInterval.FLOORED_INTERVAL``) is proven against
vLLM itself in ``tests/audit/test_mask_options.py``, which needs vLLM. So the
floored form is also restated here from its formula (a run every ``R // B``
blocks), so that a change to it fails without vLLM installed.
"""

from __future__ import annotations

import itertools

from junction.core import GroupSpec, MaskPlan, OffGridInterval, mask_plan, reachable_block_mask

FLOORED = OffGridInterval.FLOORED_INTERVAL


def _kept(mask: list[bool] | None, start: int = 0) -> list[int]:
    assert mask is not None
    return [start + i for i, kept in enumerate(mask) if kept]


def test_vllms_final_segment_example() -> None:
    # vLLM's test_swa_reachable_block_mask_final_partial_segment: W 16, B 4
    # (need 4), A 36 (a segment of 9 blocks), blocks [243, 250).
    window = GroupSpec.sliding_window(4, 16)

    def kept(final: int, eagle: bool = False) -> list[int]:
        mask = reachable_block_mask(243, 250, 36, window, eagle, final_segment_end_block=final)
        return _kept(mask, 243)

    assert kept(300) == [248, 249]  # the final tail [296, 300) is out of range
    assert kept(250) == [246, 247, 248, 249]  # [250 - 4, 250)
    assert kept(300, eagle=True) == kept(250, eagle=True) == [243, 248, 249]  # ignored


def test_the_final_segment_needs_segments_and_a_window() -> None:
    window, state = GroupSpec.sliding_window(4, 9), GroupSpec.mamba(4)  # need 2
    assert _kept(reachable_block_mask(0, 8, 4, window, False, 0, final_segment_end_block=7)) == []
    # Periodic tails [2, 4) and [6, 8), and the final one [7 - 2, 7).
    assert _kept(reachable_block_mask(0, 8, 4, window, False, 16, final_segment_end_block=7)) == [
        2,
        3,
        5,
        6,
        7,
    ]
    # Mamba: a state at the horizon exists only if a chunk ended there.
    assert _kept(reachable_block_mask(0, 8, 4, state, False, 12, final_segment_end_block=7)) == [
        2,
        5,
    ]


def test_segment_ends_off_the_alignment_land_on_it() -> None:
    # The finding's call: W 17, B 16 (need 1), A 64, R 96: segment ends 96,
    # 192, 288, 384 land at 64, 192, 256, 384; vLLM keeps the tails at 96k.
    window = GroupSpec.sliding_window(16, 17)
    assert _kept(reachable_block_mask(0, 24, 64, window, False, 96)) == [3, 11, 15, 23]
    floored = reachable_block_mask(0, 24, 64, window, False, 96, off_grid_interval=FLOORED)
    assert _kept(floored) == [5, 11, 17, 23]


def test_when_off_grid_segment_ends_keep_every_block() -> None:
    # A sliding window: exactly when need * B >= ceil_A(R).
    assert mask_plan(4, GroupSpec.sliding_window(2, 8), False, 6) is None  # need 4: 8 >= 8
    assert mask_plan(4, GroupSpec.sliding_window(2, 6), False, 6) is not None  # need 3: 6 < 8
    assert mask_plan(4, GroupSpec.sliding_window(2, 6), True, 6) is None  # need 4 with EAGLE
    # Mamba: exactly when A divides B and R <= B.
    assert mask_plan(2, GroupSpec.mamba(4), False, 3) is None
    assert mask_plan(2, GroupSpec.mamba(4), False, 5) is not None
    assert mask_plan(8, GroupSpec.mamba(4), False, 3) is not None  # B | A, A > B


def test_an_interval_on_the_grid_is_planned_as_periodic_runs() -> None:
    # R = 8, a multiple of A = 4 and of B = 2: a segment ends every 4 blocks, so
    # the plan is periodic (segment 0), not the off-grid form's segment ends,
    # which batched kernels answer only where end_block * B + A + R fits int64.
    window = GroupSpec.sliding_window(2, 3)  # need 1
    assert mask_plan(4, window, False, 8) == MaskPlan(4, 1, 0, 2, 4, True, 0, True)
    assert mask_plan(4, GroupSpec.mamba(2), False, 8) == MaskPlan(4, 1, 0, 2, 4, True)


def _floored_restatement(
    start: int, end: int, alignment: int, spec: GroupSpec, eagle: bool, interval: int | None
) -> list[bool] | None:
    """vLLM 0.33.0's mask without boundaries, from its formula (docs/domain.md)."""
    block = spec.block_size
    if spec.window is None:  # Mamba
        if interval is None or (interval and interval // block <= 1):
            return None
        period = interval // block
        return [bool(period) and (i + 1) % period == 0 for i in range(start, end)]
    if alignment % block:
        return None
    need, shift = spec.blocks_for_hit(eagle), 1 if eagle else 0
    segment = alignment if interval is None else interval
    period = segment // block
    if segment and need >= period:
        return None
    return [
        bool(period) and i >= shift and (i - shift) % period >= period - need
        for i in range(start, end)
    ]


def test_the_floored_form_is_vllms_formula() -> None:
    specs = [GroupSpec.mamba(b) for b in (1, 2, 3)] + [
        GroupSpec.sliding_window(b, w) for b in (1, 2, 3) for w in (1, 2, 4, 7)
    ]
    checked = 0
    for spec, alignment, eagle, interval in itertools.product(
        specs, range(1, 7), (False, True), (None, 0, *range(1, 14))
    ):
        for start, length in ((0, 12), (5, 9)):
            got = reachable_block_mask(
                start, start + length, alignment, spec, eagle, interval, off_grid_interval=FLOORED
            )
            want = _floored_restatement(start, start + length, alignment, spec, eagle, interval)
            assert got == want, (spec, alignment, eagle, interval, start)
            checked += 1
    assert checked > 3000, checked
