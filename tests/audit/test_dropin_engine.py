"""The drop-in inside vLLM's real ``Scheduler``, as shipped against it: the fast slice.

Every layout of the differential run (``audit.vllm.scheduler_differential``; the
full run is ``make vllm-engine``), one seed and a short workload each, in both
modes: ``identical`` must show no difference at all, ``corrected`` only
differences the oracle judges the drop-in right on and a documented finding
explains. And the check can fail: a drop-in that hands vLLM one block short
is caught.
"""

from __future__ import annotations

from typing import Any

import pytest

from junction import dropin
from junction.audit.vllm.scheduler_differential import (
    Finding,
    Layout,
    Unclassified,
    layouts,
    run_layout,
)
from junction.dropin import lookup

REQUESTS = 40

LAYOUTS = layouts()


@pytest.mark.parametrize("layout", LAYOUTS, ids=[layout.name for layout in LAYOUTS])
def test_identical_mode_never_differs(layout: Layout) -> None:
    report = run_layout(layout, 0, REQUESTS, "identical")
    assert report.compared_steps == report.steps
    assert not report.findings


@pytest.mark.parametrize("layout", LAYOUTS, ids=[layout.name for layout in LAYOUTS])
def test_corrected_mode_differs_only_where_a_finding_says(layout: Layout) -> None:
    report = run_layout(layout, 1, REQUESTS, "corrected")
    assert report.lookups >= REQUESTS // 2  # an aborted request may never be looked up
    assert set(report.findings) <= set(Finding)
    if not report.findings:
        assert report.compared_steps == report.steps


def test_the_full_layout_set_covers_every_axis() -> None:
    names = " ".join(layout.name for layout in LAYOUTS)
    assert len(LAYOUTS) >= 30
    axes = (
        "R=0",
        "R=32",
        "R=None",
        "window1/",
        "window40/",
        "window70/",
        "(partial)",
        "+mamba16 R=0",
        "EAGLE full",
        "EAGLE draft=",
        "lookahead",
        "checkpoints/",
    )
    for axis in axes:
        assert axis in names, axis
    assert any(layout.hash_lookahead_tokens for layout in LAYOUTS)
    assert any(layout.prefill_checkpoint_alignment for layout in LAYOUTS)


def test_a_block_collected_short_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    collect = lookup._group_blocks

    def one_short(*args: Any) -> list[Any]:
        return collect(*args)[:-1]

    monkeypatch.setattr(lookup, "_group_blocks", one_short)
    layout = next(layout for layout in LAYOUTS if layout.name == "full16+mamba16 R=None")
    with pytest.raises(Unclassified, match="blocks handed for a hit"):
        run_layout(layout, 0, REQUESTS, "corrected")
    assert not dropin.installed()
