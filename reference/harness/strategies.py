"""Random scenarios for each promise, in its scope (Hypothesis strategies).

Sizes stay small and prompt lengths cluster around grid multiples, where the
replay, EAGLE and whole-block boundaries part ways, so a counterexample
shrinks to one a person can read. The draws are part of the harness's
reproducibility contract: the same seed gives the same examples, so a change
here changes every recorded counterexample (docs/findings.md).
"""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

from junction.core import CrossedGridPoints, GroupKind, GroupSpec, HybridGeometry, cdiv
from junction.reference.engine.finish import FinishReason
from junction.reference.engine.speculative import SpeculativeDecoding

from .promise import Promise, Retention
from .scenario import Scenario

__all__ = ["scenarios"]

_budgets = st.integers(4, 48)


@st.composite
def _geometries(
    draw: st.DrawFn, retention: Retention = Retention.ANY, eagle: bool = True
) -> HybridGeometry:
    """One to three full-attention groups of different block sizes, one or two
    sparse groups, and a hash unit of 1, 2 or 4 dividing every block (smaller
    than every block half the time or more: partial hits then land inside
    blocks). The unit is drawn first and 2 shrinks first, towards one
    full-attention group at unit 2."""
    unit = draw(st.sampled_from([2, 1, 4]))
    block = st.sampled_from([size for size in (2, 4, 8) if size % unit == 0])
    groups = [
        GroupSpec.full(size) for size in draw(st.lists(block, min_size=1, max_size=3, unique=True))
    ]
    for kind in draw(
        st.lists(st.sampled_from(["sliding_window", "mamba"]), min_size=1, max_size=2)
    ):
        size = draw(block)
        groups.append(
            GroupSpec.sliding_window(size, draw(st.integers(1, 20)))
            if kind == "sliding_window"
            else GroupSpec.mamba(size)
        )
    use_eagle = draw(st.booleans()) if eagle else False
    if use_eagle and draw(st.booleans()):
        # EAGLE per group: the draft model's groups marked, at least one.
        marks = draw(st.lists(st.booleans(), min_size=len(groups), max_size=len(groups)))
        marks[draw(st.integers(0, len(groups) - 1))] = True
        groups = [attrs.evolve(g, eagle_group=mark) for g, mark in zip(groups, marks, strict=True)]
    scheduler_block = HybridGeometry(groups, unit).scheduler_block_size
    choices: dict[Retention, list[int | None]] = {
        Retention.ANY: [None, 0, scheduler_block, 2 * scheduler_block],
        Retention.ZERO: [0],
        Retention.POSITIVE: [scheduler_block, 2 * scheduler_block, 3 * scheduler_block],
    }
    return HybridGeometry(
        groups,
        unit,
        partial_hits=draw(st.booleans()),
        use_eagle=use_eagle,
        retention_interval=draw(st.sampled_from(choices[retention])),
    )


@st.composite
def _speculative(draw: st.DrawFn) -> SpeculativeDecoding | None:
    """One token a step (shrinks first), or 1 to 3 drafts a step under either rule
    for a passed Mamba block end, with a script of accepted counts."""
    if not draw(st.booleans()):
        return None
    drafts = draw(st.integers(1, 3))
    crossed = draw(st.sampled_from(list(CrossedGridPoints)))
    accepted = draw(st.lists(st.integers(0, drafts), min_size=1, max_size=4))
    return SpeculativeDecoding(drafts, crossed, accepted)


def _has_mamba(geometry: HybridGeometry) -> bool:
    return any(g.kind is GroupKind.MAMBA for g in geometry.groups)


@st.composite
def _safety(draw: st.DrawFn) -> Scenario:
    geometry = draw(_geometries())
    base = draw(st.lists(st.integers(0, 9), min_size=1, max_size=40))
    prompts = []
    for _ in range(draw(st.integers(1, 6))):
        shared = draw(st.integers(0, len(base)))
        tail = draw(st.lists(st.integers(0, 9), min_size=0 if shared else 1, max_size=20))
        prompts.append((*base[:shared], *tail))
    longest = max(len(p) for p in prompts) + 4
    blocks_per_request = sum(
        cdiv(longest, g.block_size) if g.kind is not GroupKind.MAMBA else 2 for g in geometry.groups
    )
    return Scenario(
        Promise.SAFETY,
        geometry,
        prompts,
        budget=draw(_budgets),
        num_blocks=blocks_per_request + draw(st.integers(1, 2 * blocks_per_request)),
        gaps=draw(st.lists(st.integers(0, 4), min_size=len(prompts), max_size=len(prompts))),
        max_output_tokens=draw(st.integers(1, 4)),
    )


@st.composite
def _prompt(draw: st.DrawFn, grid: int) -> tuple[int, ...]:
    """Tokens; half the time a length at, just below or just above a grid multiple."""
    length = draw(
        st.one_of(
            st.integers(1, 60),
            st.builds(
                lambda k, off: max(k * grid + off, 1),
                st.integers(1, 8),
                st.sampled_from([-1, 0, 1]),
            ),
        )
    )
    return tuple(draw(st.lists(st.integers(0, 40), min_size=length, max_size=length)))


@st.composite
def _scenario(draw: st.DrawFn, promise: Promise) -> Scenario:
    geometry = draw(
        _geometries(promise.retention, eagle=promise.eagle).filter(
            lambda g: promise is not Promise.SPLIT or _has_mamba(g)
        )
    )
    grid = geometry.scheduler_block_size
    x = draw(_prompt(grid))
    budget = draw(_budgets)
    match promise:
        case Promise.REPLAY:
            return Scenario(promise, geometry, [x], x, budget)
        case Promise.JUNCTION:
            ty, tz = draw(_prompt(grid)), draw(_prompt(grid))
            prompts = [(*x, 101, *ty), (*x, 102, *ty)]
            return Scenario(promise, geometry, prompts, (*x, 103, *tz), budget)
        case Promise.TIER:  # the junction's shape, or a resend, probed on another instance
            ty, tz = draw(_prompt(grid)), draw(_prompt(grid))
            prompts = [(*x, 101, *ty), (*x, 102, *ty)]
            probe = (*x, 103, *tz) if draw(st.booleans()) else prompts[-1]
            return Scenario(promise, geometry, prompts, probe, budget)
        case Promise.SEGMENTS:
            k, tail = draw(st.integers(0, len(x))), draw(_prompt(grid))
            return Scenario(promise, geometry, [x], (*x[:k], 999, *tail), budget)
        case Promise.NEXT_TURN:
            # The next turn: X's transcript and new text (none, a token, or more),
            # X ending stopped (shrinks first), length-capped or aborted, decoded
            # one token a step (shrinks first) or in speculative steps.
            answer = draw(st.integers(1, 12))
            new = draw(st.one_of(st.just(()), _prompt(grid)))
            finish = draw(st.sampled_from(list(FinishReason)))
            steps = draw(_speculative())
            if steps is not None:  # longer answers: several grid points in speculative steps
                answer += draw(st.integers(0, 16))
            return Scenario(
                promise,
                geometry,
                [x],
                new,
                budget,
                max_output_tokens=answer,
                finish=finish,
                speculative=steps,
            )
        case Promise.DECLARED_PREFIX:
            # A sibling of a checkpoint X declares, diverging right after it.
            answer = draw(st.integers(1, 12))
            k, tail = draw(st.integers(0, len(x))), draw(_prompt(grid))
            return Scenario(
                promise,
                geometry,
                [x],
                (*x[:k], 103, *tail),
                budget,
                max_output_tokens=answer,
                declared=(k,),
            )
        case Promise.ECONOMY | Promise.SPLIT:
            y = draw(_prompt(grid))
            return Scenario(promise, geometry, [x, (*x[: len(x) // 2], 7, *y)], (), budget)
        case _:  # reconciliation (safety has its own strategy)
            k, y, z = draw(st.integers(0, len(x))), draw(_prompt(grid)), draw(_prompt(grid))
            return Scenario(promise, geometry, [x, (*x[:k], *y)], (*x[:k], *z), budget)


def scenarios(promise: Promise | str) -> st.SearchStrategy[Scenario]:
    """Random scenarios for one promise (its scope: e.g. ``segments`` needs ``R > 0``)."""
    promise = Promise.named(promise)
    return _safety() if promise is Promise.SAFETY else _scenario(promise)
