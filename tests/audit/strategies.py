"""Hypothesis strategies over configurations vLLM 0.33.0 accepts.

A configuration is groups (one full-attention group first, then sliding
window and/or Mamba groups; every Mamba group shares one block size, as
vLLM's single ``cache_config.block_size`` forces), a hash unit dividing every
block, EAGLE on or off and a retention interval (``None``, 0 or a multiple of
``L``). Partial hits are not drawn: :func:`upstream.vllm_0_33.specs.vllm_geometry` asks
vLLM whether it turns them on. Sizes stay small so counterexamples shrink to
readable ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import attrs
import hypothesis
from hypothesis import given, settings
from hypothesis import strategies as st

from junction.audit.vllm.engine import VllmEngine
from junction.core import GroupKind, GroupSpec, HybridGeometry
from junction.reference.harness import Promise, Scenario, scenarios
from junction.upstream.vllm_0_33.specs import vllm_geometry

block_sizes = st.sampled_from([1, 2, 4, 8, 3, 6])
windows = st.integers(1, 24)


def examples(share: float) -> int:
    """A share of the profile's examples (the audit runs vLLM's code, which is slow)."""
    return max(10, int(settings.default.max_examples * share))


Drawn = TypeVar("Drawn")


def violations_are_findings(
    promise: Promise,
    share: float,
    drawn: st.SearchStrategy[Drawn],
    explained: Callable[[Drawn], None],
    pinned: Sequence[Drawn] = (),
) -> Callable[[], None]:
    """A property test named for ``promise``: ``explained`` (which fails on a violation no
    recorded finding explains) holds on a ``share`` of the profile's examples of ``drawn``,
    and on every ``pinned`` one (scenarios random draws found once, which the derandomized
    CI profile would not draw)."""

    @settings(max_examples=examples(share))
    @given(drawn)
    def test(example: Drawn) -> None:
        explained(example)

    for pin in pinned:
        test = hypothesis.example(pin)(test)
    test.__name__ = f"test_{promise.value}_violations_are_recorded_findings"
    return test


@st.composite
def vllm_geometries(
    draw: st.DrawFn,
    sparse: tuple[str, ...] = ("sliding_window", "mamba"),
    max_sparse: int = 2,
    need: str | None = None,
    retention: str = "any",
) -> HybridGeometry:
    """A vLLM-valid hybrid geometry: full attention plus 1..max_sparse sparse groups.

    ``need`` forces one group of that kind; ``retention`` is ``"any"``,
    ``"zero"`` or ``"positive"``.
    """
    groups = [GroupSpec.full(draw(block_sizes))]
    kinds = draw(st.lists(st.sampled_from(sparse), min_size=1, max_size=max_sparse))
    if need is not None and need not in kinds:
        kinds[0] = need
    mamba_block = draw(block_sizes)
    for kind in kinds:
        if kind == "sliding_window":
            groups.append(GroupSpec.sliding_window(draw(block_sizes), draw(windows)))
        else:
            groups.append(GroupSpec.mamba(mamba_block))
    common = math.gcd(*(g.block_size for g in groups))
    unit = draw(st.sampled_from([h for h in range(1, common + 1) if common % h == 0]))
    grid = math.lcm(*(g.block_size for g in groups))
    intervals: list[int | None] = {
        "any": [None, 0, grid, 2 * grid],
        "zero": [0],
        "positive": [grid, 2 * grid, 3 * grid],
    }[retention]
    # EAGLE per group: mostly every group (vLLM's unmarked default), else the
    # draft model's groups marked (vllm_geometry applies vLLM's fallback and
    # its equal-spec merging).
    marks = draw(
        st.lists(st.sampled_from((True, True, False)), min_size=len(groups), max_size=len(groups))
    )
    groups = [
        attrs.evolve(group, eagle_group=mark) for group, mark in zip(groups, marks, strict=True)
    ]
    return vllm_geometry(
        groups,
        unit,
        use_eagle=draw(st.booleans()),
        retention_interval=draw(st.sampled_from(intervals)),
    )


def has_mamba(geometry: HybridGeometry) -> bool:
    return any(g.kind is GroupKind.MAMBA for g in geometry.groups)


@st.composite
def request_states(draw: st.DrawFn, geometry: HybridGeometry) -> dict[str, Any]:
    """``P``, ``N``, computed tokens and a junction on the hit grid (or 0)."""
    grid = geometry.scheduler_block_size
    prompt = draw(st.integers(1, 10 * grid))
    total = prompt + draw(st.one_of(st.just(0), st.integers(0, 2 * grid)))
    alignment = geometry.alignment_tokens
    junction = draw(
        st.one_of(
            st.just(0), st.integers(1, max(prompt // alignment, 1)).map(lambda k: k * alignment)
        )
    )
    return dict(num_prompt_tokens=prompt, num_tokens=total, shared_prefix_boundary=junction)


@st.composite
def prompt_families(draw: st.DrawFn, geometry: HybridGeometry) -> list[tuple[int, ...]]:
    """A few prompts that share prefixes of a base prompt, then diverge.

    Lengths cluster around multiples of ``L`` (plus or minus one), where the
    replay, EAGLE and junction positions part ways.
    """
    grid = geometry.scheduler_block_size
    length = draw(
        st.one_of(
            st.integers(1, 6 * grid),
            st.builds(
                lambda k, off: max(k * grid + off, 1),
                st.integers(1, 6),
                st.sampled_from([-1, 0, 1]),
            ),
        )
    )
    base = [draw(st.integers(0, 3)) for _ in range(length)]
    prompts = [tuple(base)]
    for index in range(draw(st.integers(1, 3))):
        shared = draw(st.integers(0, length))
        tail = draw(st.integers(0 if shared else 1, 2 * grid))
        prompts.append(
            (*base[:shared], 100 + index, *range(200, 200 + tail))[: max(shared + tail, 1)]
        )
    return prompts


@attrs.frozen
class PromptRun:
    """A family of prompts prefilled one after another on one geometry, ``budget`` per step."""

    geometry: HybridGeometry
    prompts: list[tuple[int, ...]]
    budget: int

    def on_vllm(self, lookups: bool) -> VllmEngine:
        """Prefill every prompt on a fresh ``VllmEngine``; then, with ``lookups``, look
        every one up again (a resend's lookup, on the pool the prefills left)."""
        engine = VllmEngine(self.geometry)
        for prompt in self.prompts:
            engine.prefill(prompt, self.budget)
        if lookups:
            for prompt in self.prompts:
                engine.lookup(prompt)
        return engine


@st.composite
def prompt_runs(draw: st.DrawFn) -> PromptRun:
    """A vLLM geometry, a family of prompts on it and a per-step budget up to ``4 L``."""
    geometry = draw(vllm_geometries())
    prompts = draw(prompt_families(geometry))
    budget = draw(st.integers(1, 4 * geometry.scheduler_block_size))
    return PromptRun(geometry, prompts, budget)


def _as_vllm(scenario: Scenario) -> Scenario:
    """The scenario on the geometry vLLM would run (one Mamba block size, its partial hits)."""
    geometry = scenario.geometry
    mamba = [g.block_size for g in geometry.groups if g.kind is GroupKind.MAMBA]
    groups = [
        GroupSpec.mamba(mamba[0]) if g.kind is GroupKind.MAMBA else g for g in geometry.groups
    ]
    return attrs.evolve(
        scenario,
        geometry=vllm_geometry(
            groups,
            geometry.hash_block_size,
            use_eagle=geometry.use_eagle,
            retention_interval=geometry.retention_interval,
        ),
    )


def vllm_scenarios(promise: Promise) -> st.SearchStrategy[Scenario]:
    """The conformance harness's scenarios for one promise, on vLLM-valid geometries."""
    return scenarios(promise).map(_as_vllm)
