"""The compiled replay (numba, the ``fast`` extra) equals the Python replay field for field.

On drawn geometries, policies and workloads under pools small enough to
evict and to refuse (every ``PointResult`` field: hits, refusals, evictions,
peaks, final counts, prefill tokens, FLOPs saved, TTFTs), on the
conversation trace's first requests in Qwen3-Next's 32 points of ``junction
hbm``, and against the reference engine itself, as the Python replay is
(``test_equal_to_engine``). Where numba is missing these skip, unless
``--require-numba``; ``auto`` then runs the Python replay, which is checked
here without numba too.
"""

from __future__ import annotations

import importlib
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from junction.core import GroupSpec, HybridGeometry, InvalidArgument
from junction.reference.replay import Point, PointResult, ReplayRequest, future_uses, replay
from junction.reference.replay.models import catalog_model
from junction.reference.replay.stream import hash_trace_requests
from junction.reference.simulator.variants import table_variants
from junction.reference.workloads.step_time import StepTimeModel
from tests import options

from .engine_side import FLOPS, engine_records, token_requests
from .test_equal_to_engine import REPLAYED, scenarios
from .test_peer import TRACE, require_module

BUDGETS = (8, 16, 32, 64, 128, 256, 512, 1024)


def _require_numba() -> None:
    missing = "numba is not installed (the fast extra; `make setup` installs it)"
    require_module("numba", options.require_numba, "--require-numba", missing)


def _both(
    geometry: HybridGeometry, stream: list[ReplayRequest], points: list[Point], **settings: object
) -> tuple[list[PointResult] | str, list[PointResult] | str]:
    """Each engine's results, or the one line it raised."""
    found: list[list[PointResult] | str] = []
    for engine in ("python", "compiled"):
        try:
            found.append(replay(geometry, stream, points, engine=engine, **settings))  # type: ignore[arg-type]
        except InvalidArgument as error:
            found.append(str(error))
    return found[0], found[1]


@given(scenarios(), st.data())
def test_the_compiled_replay_equals_the_python_replay(scenario, data) -> None:  # type: ignore[no-untyped-def]
    """Several policies and pools, the smallest refusing or evicting: every field equal."""
    _require_numba()
    geometry, policy, _, num_blocks, budget, requests = scenario
    stream = token_requests(geometry, requests)
    policies = data.draw(st.lists(st.sampled_from(sorted(REPLAYED)), min_size=1, max_size=2))
    sizes = data.draw(st.lists(st.integers(2, num_blocks), min_size=1, max_size=3))
    points = [
        Point(name, geometry.retention_interval, blocks)
        for name in (policy, *policies)
        for blocks in (num_blocks, *sizes)
    ]
    python, compiled = _both(
        geometry,
        stream,
        points,
        max_num_batched_tokens=budget,
        flops=FLOPS,
        step_time=StepTimeModel(),
        measure_from=data.draw(st.integers(0, len(stream))),
    )
    assert compiled == python


@given(scenarios().map(lambda s: (*s[:2], "lru", *s[3:])))
def test_the_compiled_replay_equals_the_engine(scenario) -> None:  # type: ignore[no-untyped-def]
    """The compiled replay's totals are the reference engine's: hits, evictions, the
    cached blocks per group at the end and their peaks."""
    _require_numba()
    geometry, policy, eviction, num_blocks, budget, requests = scenario
    records, _ = engine_records(geometry, policy, num_blocks, eviction, budget, requests)
    point = Point(policy, geometry.retention_interval, num_blocks, eviction)
    stream = token_requests(geometry, requests)
    (found,) = replay(geometry, stream, [point], max_num_batched_tokens=budget, engine="compiled")
    assert found.refused == 0
    assert found.hit_tokens == sum(r.hit for r in records)
    usage = records[-1].usage
    assert (found.evictions, found.retained_final, found.retained_peak) == (
        usage.evictions,
        usage.cached,
        usage.peak,
    )


@pytest.mark.parametrize(
    ("first", "shrink"),
    [(400, 8), pytest.param(0, 1, marks=pytest.mark.whole_trace)],
    ids=["first-400", "whole-trace"],
)
def test_qwen3_next_32_points_are_equal(first: int, shrink: int) -> None:
    """``junction hbm``'s 32 points (4 variants x 8 budgets, LRU): on the trace's first
    requests in pools an eighth the size, so that every point evicts, and (with
    ``--whole-trace``) on the whole trace in ``hbm``'s pools."""
    _require_numba()
    model = catalog_model("qwen3-next-80b-a3b")
    geometry = HybridGeometry(model.groups(), model.block_size)
    stream = hash_trace_requests(TRACE, geometry.hash_block_size, first=first)
    variants = table_variants(4 * geometry.scheduler_block_size)
    points = [
        Point(v.policy, v.retention_interval, model.blocks(gib) // shrink, "lru")
        for v in variants
        for gib in BUDGETS
    ]
    python, compiled = _both(geometry, stream, points, flops=FLOPS, step_time=StepTimeModel())
    assert isinstance(python, list)
    assert all(r.evictions for r in python)
    assert compiled == python


def test_the_compiled_engine_refuses_what_it_does_not_cover_and_auto_falls_back() -> None:
    _require_numba()
    model = catalog_model("qwen3-next-80b-a3b")
    geometry = HybridGeometry(model.groups(), model.block_size)
    stream = hash_trace_requests(TRACE, geometry.hash_block_size, first=20)
    lru = Point("junction", None, 300)
    outside = {
        "fifo": ([Point("junction", None, 300, "fifo")], {}),
        "a state pool": ([Point("junction", None, 300, state_slots=8)], {}),
        "no caching": ([Point("junction", None, 300, caching=False)], {}),
        "records": ([lru], {"keep_records": True}),
    }
    for points, settings in outside.values():
        with pytest.raises(InvalidArgument, match="the compiled replay does not apply"):
            replay(geometry, stream, points, engine="compiled", **settings)  # type: ignore[arg-type]
        assert replay(geometry, stream, points, **settings) == replay(  # type: ignore[arg-type]
            geometry, stream, points, engine="python", **settings
        )
    mixed = [lru, Point("junction", None, 300, "belady"), Point("dense", None, 200)]
    uses = future_uses(geometry, stream)
    with pytest.raises(InvalidArgument, match="the compiled replay does not apply"):
        replay(geometry, stream, mixed, uses=uses, engine="compiled")
    # auto: the lru points compiled, the Belady one in Python, in one pass.
    assert replay(geometry, stream, mixed, uses=uses) == replay(
        geometry, stream, mixed, uses=uses, engine="python"
    )
    with pytest.raises(InvalidArgument, match="expected one of auto, python, compiled"):
        replay(geometry, stream, [lru], engine="numba")


@pytest.mark.parametrize(
    "failure",
    [ModuleNotFoundError("No module named 'numba'"), RuntimeError("no locator available")],
    ids=["no numba", "no cache directory"],
)
def test_auto_runs_the_python_replay_where_numba_does_not_import(
    monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    """The compiled modules fail to import (numba missing, or numba finding nowhere to
    cache): ``auto`` is the Python replay and ``compiled`` one line saying why."""
    for name in ("kernels", "compiled"):
        monkeypatch.delitem(sys.modules, f"junction.reference.replay.{name}", raising=False)
    real = importlib.import_module

    def refuse(name: str, package: str | None = None) -> object:
        if name.startswith("junction.reference.replay."):
            raise failure
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", refuse)
    model = catalog_model("qwen3-next-80b-a3b")
    geometry = HybridGeometry(model.groups(), model.block_size)
    stream = hash_trace_requests(TRACE, geometry.hash_block_size, first=40)
    points = [Point("junction", None, 100)]
    assert replay(geometry, stream, points) == replay(geometry, stream, points, engine="python")
    with pytest.raises(InvalidArgument, match="numba does not import"):
        replay(geometry, stream, points, engine="compiled")


def test_the_kernels_take_the_plan_and_pool_codes_as_an_argument(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """numba's on-disk cache freezes a kernel's globals and is keyed on ``kernels.py``
    alone: the plan's and the pool's codes reach the kernels as an argument, so with
    every code changed (as an edit of ``plan.py`` or ``pool.py`` would) the compiled
    replay still equals the Python one, and the answers are those of the real codes."""
    _require_numba()
    kernels = importlib.import_module("junction.reference.replay.kernels")
    importlib.import_module("junction.reference.replay.compiled")
    geometry = HybridGeometry(
        [GroupSpec.full(16), GroupSpec.sliding_window(16, 40), GroupSpec.mamba(16)], 16
    )
    stream = hash_trace_requests(TRACE, geometry.hash_block_size, first=60)
    points = [Point("junction", None, 2000), Point("dense", 0, 1000)]
    before = replay(geometry, stream, points, engine="python")
    changed = {"CACHE": 1, "RELEASE": 2, "STATE": 0, "PRIVATE": -2, "NULL": -1}
    package = [m for n, m in sys.modules.items() if n.startswith(kernels.__package__)]
    for name, value in changed.items():  # as compiled kernels from numba's cache see them
        for module in package:
            if module is not kernels and hasattr(module, name):
                monkeypatch.setattr(module, name, value)
    assert all(r.evictions for r in before)
    assert replay(geometry, stream, points, engine="python") == before
    assert replay(geometry, stream, points, engine="compiled") == before
    assert not [name for name in changed if hasattr(kernels, name)]


@pytest.mark.parametrize(
    ("fields", "refusal"),
    [
        ((0, 3, ()), "prompt_tokens=0: must be an int >= 1"),
        ((16, -30, (1, 2, 3, 4)), "output_tokens=-30: must be an int >= 1"),
        ((1, 0, ()), "output_tokens=0: must be an int >= 1"),  # as the engine's Request
        ((True, 1, ()), "prompt_tokens=True: must be an int >= 1"),
        ((8, 1, (1, 2.0)), r"units\[1\]=2.0: must be an int"),
        ((8, 1, (5, 6, 5)), r"units\[2\]=5: repeats an earlier key"),
        ((8, 1, "ab"), "units='ab': must be a sequence of int prefix keys"),
    ],
)
def test_a_request_outside_the_rules_is_refused_before_either_replay_reads_it(
    fields: tuple[object, object, object], refusal: str
) -> None:
    """numba reads past an array unchecked, where Python raises or not: a request is
    checked as it is made, naming the field, its value and the rule."""
    with pytest.raises(InvalidArgument, match=refusal):
        ReplayRequest(*fields)  # type: ignore[arg-type]


def test_a_window_with_eagle_and_blocks_of_several_units_is_equal_on_the_trace() -> None:
    """A gpt-oss-like geometry with EAGLE and blocks of two hash units (the window scans
    and its EAGLE need, which drawn scenarios reach rarely) on the trace's first
    requests, pools small enough that every point evicts."""
    _require_numba()
    geometry = HybridGeometry(
        [GroupSpec.full(32), GroupSpec.sliding_window(32, 128)], 16, use_eagle=True
    )
    stream = hash_trace_requests(TRACE, geometry.hash_block_size, first=300)
    variants = table_variants(4 * geometry.scheduler_block_size)
    points = [
        Point(v.policy, v.retention_interval, blocks) for v in variants for blocks in (300, 900)
    ]
    python, compiled = _both(geometry, stream, points)
    assert isinstance(python, list)
    assert all(r.evictions for r in python) and any(r.hit_tokens for r in python)
    assert compiled == python
