"""The public conformance harness: does a retention policy keep its promises?

``run_conformance(policy)`` drives the reference engine with the policy over
random geometries, prompts and budgets (Hypothesis generates them and shrinks
a failure to a minimal one) and checks each promise of SPEC section 7:

1. ``replay``: a resend of X hits as far as full attention alone;
2. ``junction``: after X and Y share a prefix, Z sharing it hits as far as
   full attention alone;
3. ``segments``: under ``R > 0`` a sharing request hits at least the last
   materialised segment boundary;
4. ``economy``: under ``R = 0`` every kept sparse block is needed by a
   promised position, within (boundaries x need) blocks per request;
5. ``split``: chunk ends are grid points (or promised positions), within the
   budget, every promised position inside the prefill is a chunk end, and
   the split makes progress when a grid point fits;
6. ``reconciliation``: the engine's lookup equals the first-principles oracle
   on the engine's own cache (``h``, ``ℓ`` and the junction);
7. ``safety``: under eviction and preemption pressure, every engine invariant
   holds after every step and no hit resumes a Mamba group without its state.

Scope, where the literal promise cannot hold for any policy: "as far as full
attention alone" is asserted literally without EAGLE and partial hits (under
EAGLE a sliding window must match one of *its* blocks past the hit; with
partial hits full attention lands inside blocks where a Mamba group has no
state). There the hit must be at least what the reference policy achieves
with every block cached on the same requests: sparse retention loses nothing.

A failure comes back as a :class:`Scenario`: plain data (geometry, prompts,
budget, pool) that :func:`replay` runs again on any policy. Third parties pass
their own engine class too (``engine_factory``): the harness uses only
``submit``, ``step``, ``idle``, ``check``, ``requests``, ``policy``,
``coordinator.lookup`` and ``pool``.

Why Hypothesis inside a library function: its generation and shrinking are
the product here (a minimal counterexample is what an engine author can act
on); each batch runs with an explicit seed, so ``seed`` replays a run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from junction.core import GroupKind, GroupSpec, HybridGeometry, last_cacheable_position
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.policy import CheckedPolicy, Policy, PolicyError
from junction.reference.engine.request import Request
from junction.reference.oracle.first_principles import (
    OracleGroup,
    oracle_blocks_needed,
    oracle_reconcile,
)
from junction.reference.policies.builtin import DensePolicy

__all__ = [
    "PROMISES",
    "ConformanceReport",
    "PromiseVerdict",
    "Scenario",
    "replay",
    "run_conformance",
    "scenarios",
]

PROMISES: dict[str, str] = {
    "replay": "1. a resend hits as far as full attention alone",
    "junction": "2. after a shared prefix is seen twice, a third request hits it",
    "segments": "3. R > 0: a sharing request hits the last materialised segment",
    "economy": "4. R = 0: every kept sparse block is needed by a promised position",
    "split": "5. chunk ends on the grid or promised, in budget, promised ones hit",
    "reconciliation": "6. the lookup equals the first-principles oracle",
    "safety": "7. invariants hold under pressure; no Mamba resume without its state",
}

EngineFactory = Callable[[EngineConfig], Engine]


def _prompts(value: Iterable[Iterable[int]]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(prompt) for prompt in value)


def _ints(value: Iterable[int]) -> tuple[int, ...]:
    return tuple(value)


@attrs.frozen
class Scenario:
    """A replayable input of one promise check.

    ``prompts`` run one after another to completion (``safety``: they arrive
    ``gaps[i]`` steps apart instead, into a pool of ``num_blocks``);
    ``probe`` is the request looked up afterwards (empty when unused).
    """

    promise: str
    geometry: HybridGeometry
    prompts: tuple[tuple[int, ...], ...] = attrs.field(converter=_prompts)
    probe: tuple[int, ...] = attrs.field(converter=_ints, default=())
    budget: int = 16
    num_blocks: int = 5000
    gaps: tuple[int, ...] = attrs.field(converter=_ints, default=())
    max_output_tokens: int = 2

    def to_json(self) -> dict[str, Any]:
        geometry = self.geometry
        return {
            "promise": self.promise,
            "geometry": {
                "groups": [
                    {"kind": g.kind.value, "block_size": g.block_size, "window": g.window}
                    for g in geometry.groups
                ],
                "hash_block_size": geometry.hash_block_size,
                "partial_hits": geometry.partial_hits,
                "use_eagle": geometry.use_eagle,
                "retention_interval": geometry.retention_interval,
            },
            "prompts": [list(p) for p in self.prompts],
            "probe": list(self.probe),
            "budget": self.budget,
            "num_blocks": self.num_blocks,
            "gaps": list(self.gaps),
            "max_output_tokens": self.max_output_tokens,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Scenario:
        g = data["geometry"]
        groups = []
        for group in g["groups"]:
            kind = GroupKind(group["kind"])
            if kind is GroupKind.FULL:
                groups.append(GroupSpec.full(group["block_size"]))
            elif kind is GroupKind.MAMBA:
                groups.append(GroupSpec.mamba(group["block_size"]))
            else:
                groups.append(GroupSpec.sliding_window(group["block_size"], group["window"]))
        geometry = HybridGeometry(
            groups,
            g["hash_block_size"],
            partial_hits=g["partial_hits"],
            use_eagle=g["use_eagle"],
            retention_interval=g["retention_interval"],
        )
        fields = {k: v for k, v in data.items() if k != "geometry"}
        return cls(geometry=geometry, **fields)


@attrs.frozen
class PromiseVerdict:
    """One promise's outcome: ``status`` is ``kept``, ``violated``, ``error`` or ``n/a``.

    ``error`` means the policy raised or answered something malformed
    (``message`` names the call); ``n/a`` that ``where`` excluded every
    geometry in the promise's scope. ``seconds_to_counterexample`` is the wall
    time from the start of the run to the first failing example, before
    shrinking; ``seconds`` the time this promise's checks took.
    """

    promise: str
    status: str
    examples: int
    seconds: float
    counterexample: Scenario | None = None
    message: str = ""
    seconds_to_counterexample: float | None = None

    @property
    def statement(self) -> str:
        return PROMISES[self.promise]


@attrs.frozen
class ConformanceReport:
    policy: str
    seed: int
    verdicts: tuple[PromiseVerdict, ...]

    @property
    def passed(self) -> bool:
        return not self.violated

    @property
    def violated(self) -> tuple[PromiseVerdict, ...]:
        """The verdicts that are ``violated`` or ``error``."""
        return tuple(v for v in self.verdicts if v.status in ("violated", "error"))

    def table(self) -> str:
        lines = [f"policy {self.policy!r}, seed {self.seed}"]
        lines.append(f"  {'promise':<16}{'verdict':<10}{'examples':>9}{'seconds':>9}")
        for v in self.verdicts:
            lines.append(f"  {v.promise:<16}{v.status:<10}{v.examples:>9}{v.seconds:>9.1f}")
        for v in self.violated:
            lines.append(f"\n{v.statement}: {v.status}\n  {v.message}")
            if v.counterexample is not None:
                lines.append(f"  scenario: {json.dumps(v.counterexample.to_json())}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# Running requests through an engine


def _step_limit(tokens: int) -> int:
    """Steps after which a request that should have finished counts as stuck."""
    return 4 * tokens + 100


class History:
    """An engine that ran ``prompts`` one after another, recording every chunk."""

    def __init__(
        self,
        scenario: Scenario,
        policy: Policy,
        engine_factory: EngineFactory = Engine,
        prompts: Sequence[tuple[int, ...]] | None = None,
    ) -> None:
        config = EngineConfig(
            scenario.geometry,
            num_blocks=scenario.num_blocks,
            max_num_batched_tokens=scenario.budget,
            policy=policy,
        )
        self.engine = engine_factory(config)
        self.chunks: list[tuple[int, int, int]] = []
        for prompt in scenario.prompts if prompts is None else prompts:
            self.engine.submit(prompt, max_output_tokens=scenario.max_output_tokens)
            for _ in range(_step_limit(len(prompt) + scenario.max_output_tokens)):
                if self.engine.idle:
                    break
                self.chunks += self.engine.step()
                self.engine.check()
            else:
                raise AssertionError(f"no progress: {len(prompt)}-token prompt still running")

    def lookup(self, prompt: tuple[int, ...]) -> tuple[int, int, int]:
        """``(h, ℓ, J)`` for a new request ``prompt``, from the engine's coordinator."""
        probe = Request(-1, prompt, 1, self.engine.geometry.hash_block_size)
        hits = self.engine.coordinator.lookup(probe)
        return hits.hit_length, hits.longest_hit_length, hits.shared_prefix_boundary

    def oracle_lookup(self, prompt: tuple[int, ...]) -> tuple[int, int, int]:
        """``(h, ℓ, J)`` by the oracle, from the blocks the engine's pool holds."""
        geometry = self.engine.geometry
        probe = Request(-1, prompt, 1, geometry.hash_block_size)
        pool, chain = self.engine.pool, probe.chain
        groups = []
        for manager in self.engine.coordinator.managers:
            spec, size = manager.spec, manager.block_size
            if manager.sub_block_hits:  # full attention matching hash units
                units = frozenset(
                    j
                    for j in range(len(chain.hashes))
                    if pool.lookup_unit(manager.group_id, chain.hashes[j])
                )
                groups.append(OracleGroup("full", chain.unit, None, units))
                continue
            cached = set()
            for i in range(chain.num_hashed_tokens // size):
                block_hash = chain.block_hash(i, size)
                assert block_hash is not None
                block = pool.cached.get((manager.group_id, block_hash))
                # Only an exact state serves a Mamba hit (promise 7).
                if block and (
                    spec.kind is not GroupKind.MAMBA or block.state_position == (i + 1) * size
                ):
                    cached.add(i)
            groups.append(OracleGroup(spec.kind.value, size, spec.window, frozenset(cached)))
        return oracle_reconcile(
            groups,
            geometry.alignment_tokens,
            geometry.use_eagle,
            probe.num_tokens - 1,
            chain.num_hashed_tokens,
        )


def _literal(geometry: HybridGeometry) -> bool:
    return not geometry.use_eagle and not geometry.partial_hits


def _yardstick(scenario: Scenario, engine_factory: EngineFactory) -> int:
    """The hit the reference policy gets with every block cached, same requests."""
    return History(scenario, DensePolicy(), engine_factory).lookup(scenario.probe)[0]


def _has_mamba(geometry: HybridGeometry) -> bool:
    return any(g.kind is GroupKind.MAMBA for g in geometry.groups)


# ---------------------------------------------------------------------------
# The checks: each returns None when the promise holds, else what went wrong.


def _check_hit(scenario: Scenario, policy: Policy, engine_factory: EngineFactory) -> str | None:
    """Promises 1 and 2: the probe hits as far as full attention alone (see scope)."""
    hit, full_attention, _ = History(scenario, policy, engine_factory).lookup(scenario.probe)
    if _literal(scenario.geometry):
        if hit != full_attention:
            return f"hit {hit}, full attention alone {full_attention}"
        return None
    best = _yardstick(scenario, engine_factory)
    if hit < best:
        return f"hit {hit} under R={scenario.geometry.retention_interval}, {best} with every block"
    return None


def _check_segments(
    scenario: Scenario, policy: Policy, engine_factory: EngineFactory
) -> str | None:
    history = History(scenario, policy, engine_factory)
    hit, _, _ = history.lookup(scenario.probe)
    interval = scenario.geometry.retention_interval
    assert interval
    (prompt,) = scenario.prompts
    shared = next(
        (i for i, (a, b) in enumerate(zip(prompt, scenario.probe, strict=False)) if a != b),
        min(len(prompt), len(scenario.probe)),
    )
    reach = min(shared, len(prompt) - 1, len(scenario.probe) - 1)
    ends = {start + n for _, start, n in history.chunks}
    segments = [s for s in range(interval, reach + 1, interval) if s in ends]
    if hit < max(segments, default=0):
        return f"hit {hit}, materialised segment boundaries {segments}"
    return None


def _check_economy(scenario: Scenario, policy: Policy, engine_factory: EngineFactory) -> str | None:
    history = History(scenario, policy, engine_factory)
    engine, geometry = history.engine, scenario.geometry
    requests = list(engine.requests.values())
    for manager in engine.coordinator.managers:
        spec, size = manager.spec, manager.block_size
        if spec.kind is GroupKind.FULL:
            continue
        kept = {h for (group, h) in engine.pool.cached if group == manager.group_id}
        needed: set[int] = set()
        allowance = 0
        for request in requests:
            boundaries = engine.policy.reachable_boundaries(geometry, spec, request)
            per_boundary = (
                1 if spec.kind is GroupKind.MAMBA else spec.blocks_for_hit(geometry.use_eagle)
            )
            allowance += len(set(boundaries)) * per_boundary
            for position in engine.policy.checkpoint_positions(geometry, request):
                if position >= request.num_prompt_tokens:
                    continue
                for index in oracle_blocks_needed(
                    spec.kind.value, position, size, spec.window, geometry.use_eagle
                ):
                    block_hash = request.chain.block_hash(index, size)
                    if block_hash is not None:
                        needed.add(block_hash)
        unneeded = kept - needed
        if unneeded:
            return (
                f"group {manager.group_id} ({spec}) keeps {len(unneeded)} of {len(kept)} "
                "blocks that no promised position needs"
            )
        if len(kept) > allowance:
            return (
                f"group {manager.group_id} ({spec}) keeps {len(kept)} blocks; "
                f"the boundaries allow {allowance}"
            )
    return None


def _check_split(scenario: Scenario, policy: Policy, engine_factory: EngineFactory) -> str | None:
    history = History(scenario, policy, engine_factory)
    engine, geometry = history.engine, scenario.geometry
    grid, budget = geometry.scheduler_block_size, scenario.budget
    for request in engine.requests.values():
        prompt = request.num_prompt_tokens
        promised = set(engine.policy.checkpoint_positions(geometry, request))
        chunks = [(s, n) for rid, s, n in history.chunks if rid == request.request_id]
        tail = last_cacheable_position(prompt, geometry.hash_block_size, geometry.use_eagle)
        for start, n in chunks:
            if not 0 < n <= budget:
                return f"{request}: chunk of {n} tokens at {start}, budget {budget}"
            end = start + n
            if end < prompt:
                allowed = end % grid == 0 or grid > budget or end in promised
                allowed |= geometry.partial_hits and end == tail
                if not allowed:
                    return f"{request}: chunk [{start}, {end}) ends off the grid {grid}"
        ends = {s + n for s, n in chunks}
        first = min(s for s, _ in chunks)
        for position in sorted(promised):
            if first < position < prompt and position not in ends:
                return f"{request}: promised position {position} is no chunk end {sorted(ends)}"
        # Progress: from every chunk start, a budget reaching the next grid point moves.
        for start, _ in chunks:
            reach = (start // grid + 1) * grid - start
            if start >= prompt or reach > budget:
                continue
            view = _RequestState(prompt, request.num_tokens, start, request.shared_prefix_boundary)
            wanted = min(reach, request.num_tokens - start)
            if engine.policy.split(geometry, view, wanted, budget) == 0:
                return f"{request}: no progress from {start} with {wanted} tokens"
    return None


@attrs.frozen
class _RequestState:
    num_prompt_tokens: int
    num_tokens: int
    num_computed_tokens: int
    shared_prefix_boundary: int


def _check_reconciliation(
    scenario: Scenario, policy: Policy, engine_factory: EngineFactory
) -> str | None:
    history = History(scenario, policy, engine_factory)
    got = history.lookup(scenario.probe)
    want = history.oracle_lookup(scenario.probe)
    if got != want:
        return f"engine (h, ℓ, J) = {got}, oracle {want} on the same cache"
    return None


def _check_safety(scenario: Scenario, policy: Policy, engine_factory: EngineFactory) -> str | None:
    config = EngineConfig(
        scenario.geometry,
        num_blocks=scenario.num_blocks,
        max_num_batched_tokens=scenario.budget,
        policy=policy,
    )
    engine = engine_factory(config)
    try:
        for prompt, gap in zip(scenario.prompts, scenario.gaps, strict=True):
            for _ in range(gap):
                if engine.idle:
                    break
                engine.step()
                engine.check()
            engine.submit(prompt, scenario.max_output_tokens)
        for _ in range(_step_limit(sum(map(len, scenario.prompts)) * 4)):
            if engine.idle:
                break
            engine.step()
            engine.check()
        else:
            return "no progress: requests still running after the step limit"
        engine.check()
    except AssertionError as error:
        return f"{type(error).__name__}: {error}"
    return None


_CHECKS: dict[str, Callable[[Scenario, Policy, EngineFactory], str | None]] = {
    "replay": _check_hit,
    "junction": _check_hit,
    "segments": _check_segments,
    "economy": _check_economy,
    "split": _check_split,
    "reconciliation": _check_reconciliation,
    "safety": _check_safety,
}


def replay(
    scenario: Scenario, policy: Policy, engine_factory: EngineFactory = Engine
) -> str | None:
    """Run one scenario's check on ``policy``: ``None`` if the promise holds.

    Raises :class:`PolicyError` when the policy raises or answers malformed.
    """
    return _CHECKS[scenario.promise](scenario, policy, engine_factory)


# ---------------------------------------------------------------------------
# Scenario generation

_budgets = st.integers(4, 48)


@st.composite
def _geometries(draw: st.DrawFn, retention: str = "any", eagle: bool = True) -> HybridGeometry:
    block = st.sampled_from([2, 4, 8])
    groups = [GroupSpec.full(draw(block))]
    for kind in draw(
        st.lists(st.sampled_from(["sliding_window", "mamba"]), min_size=1, max_size=2)
    ):
        size = draw(block)
        groups.append(
            GroupSpec.sliding_window(size, draw(st.integers(1, 20)))
            if kind == "sliding_window"
            else GroupSpec.mamba(size)
        )
    unit = HybridGeometry(groups, 2).scheduler_block_size
    choices: dict[str, list[int | None]] = {
        "any": [None, 0, unit, 2 * unit],
        "zero": [0],
        "positive": [unit, 2 * unit, 3 * unit],
    }
    intervals = choices[retention]
    return HybridGeometry(
        groups,
        2,
        partial_hits=draw(st.booleans()),
        use_eagle=draw(st.booleans()) if eagle else False,
        retention_interval=draw(st.sampled_from(intervals)),
    )


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
        -(-longest // g.block_size) if g.kind is not GroupKind.MAMBA else 2 for g in geometry.groups
    )
    return Scenario(
        "safety",
        geometry,
        prompts,
        budget=draw(_budgets),
        num_blocks=blocks_per_request + draw(st.integers(1, 2 * blocks_per_request)),
        gaps=draw(st.lists(st.integers(0, 4), min_size=len(prompts), max_size=len(prompts))),
        max_output_tokens=draw(st.integers(1, 4)),
    )


@st.composite
def _prompt(draw: st.DrawFn, grid: int) -> tuple[int, ...]:
    """Tokens; half the time a length at, just below or just above a grid multiple,
    where the replay, EAGLE and whole-block boundaries part ways."""
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
def _scenario(draw: st.DrawFn, promise: str) -> Scenario:
    retention = {"segments": "positive", "economy": "zero"}.get(promise, "any")
    geometry = draw(
        _geometries(retention, eagle=promise != "segments").filter(
            lambda g: promise != "split" or _has_mamba(g)
        )
    )
    grid = geometry.scheduler_block_size
    x = draw(_prompt(grid))
    budget = draw(_budgets)
    if promise == "replay":
        return Scenario(promise, geometry, [x], x, budget)
    if promise == "junction":
        ty, tz = draw(_prompt(grid)), draw(_prompt(grid))
        prompts = [(*x, 101, *ty), (*x, 102, *ty)]
        return Scenario(promise, geometry, prompts, (*x, 103, *tz), budget)
    if promise == "segments":
        k, tail = draw(st.integers(0, len(x))), draw(_prompt(grid))
        return Scenario(promise, geometry, [x], (*x[:k], 999, *tail), budget)
    if promise in ("economy", "split"):
        y = draw(_prompt(grid))
        return Scenario(promise, geometry, [x, (*x[: len(x) // 2], 7, *y)], (), budget)
    # reconciliation
    k, y, z = draw(st.integers(0, len(x))), draw(_prompt(grid)), draw(_prompt(grid))
    return Scenario(promise, geometry, [x, (*x[:k], *y)], (*x[:k], *z), budget)


def scenarios(promise: str) -> st.SearchStrategy[Scenario]:
    """Random scenarios for one promise (its scope: e.g. ``segments`` needs ``R > 0``)."""
    if promise not in PROMISES:
        raise ValueError(f"promise={promise!r}: must be one of {', '.join(PROMISES)}")
    return _safety() if promise == "safety" else _scenario(promise)


# ---------------------------------------------------------------------------
# The runner


class _Found(Exception):
    """Raised inside a Hypothesis run to report a violation (so it shrinks it)."""


@attrs.define
class _Progress:
    examples: int = 0
    first_failure: float | None = None
    last_failure: Scenario | None = None
    message: str = ""
    status: str = "kept"


def _run_batch(
    promise: str,
    policy: Policy,
    engine_factory: EngineFactory,
    where: Callable[[HybridGeometry], bool] | None,
    examples: int,
    batch_seed: int,
    progress: _Progress,
    started: float,
) -> None:
    check = _CHECKS[promise]
    strategy = scenarios(promise)
    if where is not None:
        strategy = strategy.filter(lambda scenario: where(scenario.geometry))

    @hypothesis_seed(batch_seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(strategy)
    def run(scenario: Scenario) -> None:
        progress.examples += 1
        status = "violated"
        try:
            problem = check(scenario, policy, engine_factory)
        except PolicyError as error:
            problem, status = str(error), "error"
        except AssertionError as error:  # an engine invariant, checked after every step
            problem = f"engine invariant: {error}"
        if problem is None:
            return
        if progress.first_failure is None:
            progress.first_failure = time.perf_counter() - started
        progress.last_failure, progress.message, progress.status = scenario, problem, status
        raise _Found(problem)

    try:
        run()
    except _Found:
        pass
    except Unsatisfiable:  # ``where`` leaves no geometry in this promise's scope
        progress.status = "n/a"
        progress.message = "no geometry in this promise's scope passes `where`"


def run_conformance(
    policy: Policy,
    *,
    examples: int = 100,
    seconds: float | None = None,
    seed: int = 0,
    promises: Iterable[str] = PROMISES,
    engine_factory: EngineFactory = Engine,
    fail_fast: bool = False,
    where: Callable[[HybridGeometry], bool] | None = None,
    on_progress: Callable[[str, int, str], None] | None = None,
) -> ConformanceReport:
    """Check every promise of SPEC section 7 on ``policy``; a structured report.

    The promises take turns in batches (25 examples, doubling each round, so
    early rounds favour small inputs). Without ``seconds`` each promise runs
    ``examples`` examples; with ``seconds`` the rounds go on until the time
    is spent (at least one batch each). A promise stops at its first
    violation, which Hypothesis shrinks to a minimal :class:`Scenario`;
    ``fail_fast`` stops every promise then. The same ``seed`` replays the
    same examples in the same order. ``where`` narrows the geometries (e.g.
    an engine without partial hits: ``lambda g: not g.partial_hits``).
    ``on_progress(promise, examples, status)`` is called after each batch.

    Raises :class:`PolicyError` if ``policy`` does not implement the protocol,
    ``ValueError`` for an unknown promise name.
    """
    name = CheckedPolicy(policy).name  # fails early, naming what is missing
    chosen = list(promises)
    for promise in chosen:
        if promise not in PROMISES:
            raise ValueError(f"promise={promise!r}: must be one of {', '.join(PROMISES)}")
    state = {promise: _Progress() for promise in chosen}
    spent = dict.fromkeys(chosen, 0.0)
    started = time.perf_counter()

    def out_of_time() -> bool:
        return seconds is not None and time.perf_counter() - started >= seconds

    for round_ in range(10**9):
        if fail_fast and any(state[p].status in ("violated", "error") for p in chosen):
            break
        todo = [
            p
            for p in chosen
            if state[p].status == "kept" and (seconds is not None or state[p].examples < examples)
        ]
        if not todo or (round_ and out_of_time()):
            break
        for index, promise in enumerate(todo):
            progress = state[promise]
            size = 25 * 2 ** min(round_, 6)
            if seconds is None:
                size = min(size, examples - progress.examples)
            batch_started = time.perf_counter()
            _run_batch(
                promise,
                policy,
                engine_factory,
                where,
                size,
                seed * 1_000_003 + round_ * 101 + chosen.index(promise),
                progress,
                started,
            )
            spent[promise] += time.perf_counter() - batch_started
            if on_progress is not None:
                on_progress(promise, progress.examples, progress.status)
            if (fail_fast and progress.status in ("violated", "error")) or (
                out_of_time() and index < len(todo) - 1 and round_
            ):
                break
    verdicts = tuple(
        PromiseVerdict(
            promise,
            state[promise].status,
            state[promise].examples,
            spent[promise],
            state[promise].last_failure,
            state[promise].message,
            state[promise].first_failure,
        )
        for promise in chosen
    )
    return ConformanceReport(name, seed, verdicts)
