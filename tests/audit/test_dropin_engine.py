"""The drop-in inside vLLM's real ``Scheduler``, as shipped against it: the fast slice.

Every layout of the differential run (``audit.vllm.scheduler_differential``; the
full run is ``make vllm-engine``) but its KV-connector ones, of which two run
here, one seed and a short workload each, in both modes: ``identical`` must
show no difference at all, ``corrected`` only differences the oracle judges
the drop-in right on and a documented finding explains. And the check can
fail: a drop-in that hands vLLM one block short is caught, on a connector
layout too. vLLM's own failures on its connector paths end a run only where
they are what the documentation says, the drop-in failing alike.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from junction import dropin
from junction.audit.vllm.scheduler_differential import (
    Finding,
    Layout,
    Unclassified,
    VllmFailure,
    layouts,
    run_layout,
)
from junction.audit.vllm.scheduler_differential.connector import vllm_failure
from junction.dropin import lookup
from junction.upstream.vllm_0_33.env import vllm

REQUESTS = 40

ALL_LAYOUTS = layouts()
CONNECTOR_SLICE = (
    "connector async full16+mamba64 H=16 (partial)",  # async loads, the local tail dropped
    "connector sync full16+window1/16",  # classified differences with external tokens
)
LAYOUTS = [
    layout for layout in ALL_LAYOUTS if layout.connector is None or layout.name in CONNECTOR_SLICE
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=[layout.name for layout in LAYOUTS])
def test_identical_mode_never_differs(layout: Layout) -> None:
    report = run_layout(layout, 0, REQUESTS, "identical")
    assert report.compared_steps == report.steps
    assert not report.findings
    assert (report.external_vllm > 0) == (layout.connector is not None)


@pytest.mark.parametrize("layout", LAYOUTS, ids=[layout.name for layout in LAYOUTS])
def test_corrected_mode_differs_only_where_a_finding_says(layout: Layout) -> None:
    report = run_layout(layout, 1, REQUESTS, "corrected")
    assert report.lookups >= REQUESTS // 2  # an aborted request may never be looked up
    assert set(report.findings) <= set(Finding)
    if not report.findings:
        assert report.compared_steps == report.steps


def test_the_full_layout_set_covers_every_axis() -> None:
    names = " ".join(layout.name for layout in ALL_LAYOUTS)
    assert len(ALL_LAYOUTS) >= 50
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
        "connector sync",
        "connector async",
        "connector restoring",
    )
    for axis in axes:
        assert axis in names, axis
    assert any(layout.hash_lookahead_tokens for layout in ALL_LAYOUTS)
    assert any(layout.prefill_checkpoint_alignment for layout in ALL_LAYOUTS)
    assert sum(1 for layout in LAYOUTS if layout.connector) == len(CONNECTOR_SLICE)


@pytest.mark.parametrize("name", ["full16+mamba16 R=None", CONNECTOR_SLICE[0]])
def test_a_block_collected_short_fails_the_run(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    collect = lookup._group_blocks

    def one_short(*args: Any) -> list[Any]:
        return collect(*args)[:-1]

    monkeypatch.setattr(lookup, "_group_blocks", one_short)
    layout = _named(name)
    with pytest.raises(Unclassified, match="blocks handed for a hit"):
        run_layout(layout, 0, REQUESTS, "corrected")
    assert not dropin.installed()


def _named(name: str) -> Layout:
    return next(layout for layout in ALL_LAYOUTS if layout.name == name)


def test_a_connector_layout_runs_vllm_paths_that_combine_local_and_external(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not vacuous: the local hit (the drop-in's) and external tokens admitted
    together, a partial local tail dropped for a longer external hit, and
    asynchronous loads."""
    manager = vllm().manager.KVCacheManager
    allocate, truncate = manager.allocate_slots, manager.truncate_computed_blocks
    seen: Counter[str] = Counter()

    def allocate_slots(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("num_external_computed_tokens"):
            seen["external"] += 1
            seen["with a local hit"] += bool(kwargs.get("num_new_computed_tokens"))
            seen["async"] += bool(kwargs.get("delay_cache_blocks"))
        return allocate(self, request, *args, **kwargs)

    def truncate_computed_blocks(self: Any, *args: Any) -> Any:
        seen["tail dropped"] += 1
        return truncate(self, *args)

    monkeypatch.setattr(manager, "allocate_slots", allocate_slots)
    monkeypatch.setattr(manager, "truncate_computed_blocks", truncate_computed_blocks)
    run_layout(_named(CONNECTOR_SLICE[0]), 0, REQUESTS, "identical")
    assert all(seen[what] for what in ("external", "with a local hit", "async", "tail dropped"))


@pytest.mark.parametrize(
    ("name", "seed", "requests", "failure"),
    [
        (
            "connector restoring full16+window40/16+mamba64 H=16 (partial)",
            1,
            REQUESTS,
            VllmFailure.LAGGING_WINDOW_TRUNCATED,
        ),
        (
            "connector sync checkpoints/16 full16+mamba64 H=16 (partial)",
            5,
            80,
            VllmFailure.MAMBA_EXTERNAL_UNDERCOUNT,
        ),
    ],
)
def test_vllm_own_failures_end_the_run_the_drop_in_failing_alike(
    name: str, seed: int, requests: int, failure: VllmFailure
) -> None:
    report = run_layout(_named(name), seed, requests, "identical")
    assert report.vllm_failures == {failure: 1}
    assert report.compared_steps == report.steps


def test_any_other_error_is_no_vllm_failure() -> None:
    assert vllm_failure(ValueError("Cannot get 1 free blocks from the pool")) is None
    assert vllm_failure(AssertionError()) is None
