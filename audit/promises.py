"""SPEC section 7's promises, checked against vLLM 0.33.0's own code.

The same promises, scopes and replayable :class:`reference.conformance.Scenario`
data as the conformance harness, but every decision comes from vLLM: its
``KVCacheManager`` caches through its masks, its split chooses the chunks,
its coordinator looks up (``audit.vllm_engine``). A check returns ``None``
when the promise holds, else what went wrong.

* 1, 2 (``replay``, ``junction``): the probe hits as far as full attention
  alone. Literal without partial hits and without EAGLE sliding windows (a
  little wider than the harness: EAGLE with Mamba groups only is literal
  too); otherwise at least what vLLM itself finds with dense retention
  (``R = None``) on the same requests: sparse retention loses nothing.
* 3 (``segments``): under ``R > 0`` the probe hits at least the last segment
  boundary a chunk end materialised, up to what it shares with the prompt.
* 4 (``economy``): under ``R = 0`` every sparse block vLLM keeps is needed by
  a promised position, within (boundaries x need) blocks per request.
* 5 (``split``): chunk ends are on the grid ``L`` (or promised, or the
  prompt's partial tail), within the budget; every promised position inside
  the prefill is a chunk end; the split moves whenever a grid point fits.
* 6 (``reconciliation``): vLLM's ``(h, ℓ, J)`` equals the first-principles
  oracle (``reference.oracle``) on vLLM's own pool.
* 7 (``safety``): with a pool small enough to evict, no lookup resumes a
  Mamba group at a position no earlier chunk end materialised.

vLLM's promised positions are the ``vllm-0.33`` policy's
(``VllmPolicy.checkpoint_positions``: its boundaries floored to ``A``, plus
the segment boundaries under ``R > 0``), which the differential tests prove
are the positions vLLM's masks keep.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from junction.core import GroupKind, HybridGeometry, last_cacheable_position
from junction.reference.harness.conformance import PROMISES, Scenario
from junction.reference.oracle.first_principles import oracle_blocks_needed
from junction.reference.policies.vllm import VllmPolicy

from .lookup import oracle_reconcile_view
from .split import vllm_split
from .vllm_engine import PoolExhausted, Prefill, RequestState, VllmEngine
from .vllm_env import vllm

__all__ = ["PROMISES", "check", "run_prompts"]

POLICY = VllmPolicy()


def run_prompts(scenario: Scenario, geometry: HybridGeometry | None = None) -> VllmEngine:
    """A vLLM engine that prefilled the scenario's prompts one after another.

    A prompt that cannot fit the pool (``num_blocks``) is skipped, as a
    scheduler would keep it waiting.
    """
    engine = VllmEngine(
        scenario.geometry if geometry is None else geometry, num_blocks=scenario.num_blocks
    )
    for prompt in scenario.prompts:
        try:
            engine.prefill(prompt, scenario.budget)
        except PoolExhausted:
            continue
    return engine


def _state(run: Prefill) -> RequestState:
    prompt = len(run.tokens)
    return RequestState(prompt, prompt, prompt, run.lookup.shared_prefix_boundary)


def _literal(geometry: HybridGeometry) -> bool:
    """Whether "as far as full attention alone" can hold for any policy.

    Not with partial hits (full attention lands inside blocks where a Mamba
    group holds no state), nor under EAGLE with a sliding window (it must
    match one of *its* blocks past the hit). Under EAGLE with Mamba groups
    only it can: Mamba never drops.
    """
    eagle_window = geometry.use_eagle and any(
        g.kind is GroupKind.SLIDING_WINDOW for g in geometry.groups
    )
    return not geometry.partial_hits and not eagle_window


def _check_hit(scenario: Scenario) -> str | None:
    geometry = scenario.geometry
    lookup = run_prompts(scenario).lookup(scenario.probe)
    if _literal(geometry):
        alone = lookup.core.longest_hit_length
        if lookup.hit_length != alone:
            return f"hit {lookup.hit_length}, full attention alone {alone}"
        return None
    dense = attrs.evolve(geometry, retention_interval=None)
    best = run_prompts(scenario, dense).lookup(scenario.probe).hit_length
    if lookup.hit_length < best:
        return (
            f"hit {lookup.hit_length} under R={geometry.retention_interval}, "
            f"{best} with every block"
        )
    return None


def _shared(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


def _check_segments(scenario: Scenario) -> str | None:
    interval = scenario.geometry.retention_interval
    assert interval, "the segments promise is about R > 0"
    engine = run_prompts(scenario)
    (run,) = engine.prefills
    hit = engine.lookup(scenario.probe).hit_length
    prompt, probe = run.tokens, scenario.probe
    reach = min(_shared(prompt, probe), len(prompt) - 1, len(probe) - 1)
    ends = set(run.chunk_ends)
    segments = [s for s in range(interval, reach + 1, interval) if s in ends]
    if hit < max(segments, default=0):
        return f"hit {hit}, materialised segment boundaries {segments}"
    return None


def _needed_units(geometry: HybridGeometry, group_id: int, run: Prefill) -> set[int]:
    """Hash units of the run's chain keying the blocks its promised positions need."""
    group = geometry.groups[group_id]
    request = _state(run)
    scale = group.block_size // geometry.hash_block_size
    units: set[int] = set()
    for position in POLICY.checkpoint_positions(geometry, request):
        if position >= request.num_prompt_tokens:
            continue
        if group.kind is GroupKind.MAMBA and position % group.block_size:
            units.add(position // geometry.hash_block_size - 1)  # a partial-tail state
            continue
        for index in oracle_blocks_needed(
            group.kind.value, position, group.block_size, group.window, geometry.use_eagle
        ):
            units.add((index + 1) * scale - 1)
    return units


def _check_economy(scenario: Scenario) -> str | None:
    engine = run_prompts(scenario)
    geometry, utils = engine.geometry, vllm().utils
    kept: dict[int, set[bytes]] = {}
    for key in list(engine.block_pool.cached_block_hash_to_block._cache):
        kept.setdefault(int(utils.get_group_id(key)), set()).add(bytes(utils.get_block_hash(key)))
    for group_id, group in enumerate(geometry.groups):
        if group.kind is GroupKind.FULL:
            continue
        needed: set[bytes] = set()
        allowance = 0
        per_boundary = (
            1 if group.kind is GroupKind.MAMBA else group.blocks_for_hit(geometry.use_eagle)
        )
        for run in engine.prefills:
            boundaries = POLICY.reachable_boundaries(geometry, group, _state(run))
            allowance += len(set(boundaries)) * per_boundary
            needed |= {
                run.block_hashes[unit]
                for unit in _needed_units(geometry, group_id, run)
                if unit < len(run.block_hashes)
            }
        group_kept = kept.get(group_id, set())
        unneeded = group_kept - needed
        if unneeded:
            return (
                f"group {group_id} ({group}) keeps {len(unneeded)} of {len(group_kept)} "
                "blocks that no promised position needs"
            )
        if len(group_kept) > allowance:
            return (
                f"group {group_id} ({group}) keeps {len(group_kept)} blocks; "
                f"the boundaries allow {allowance}"
            )
    return None


def _check_split(scenario: Scenario) -> str | None:
    engine = run_prompts(scenario)
    geometry, budget = engine.geometry, scenario.budget
    grid = geometry.scheduler_block_size
    for run in engine.prefills:
        request = _state(run)
        prompt = request.num_prompt_tokens
        label = f"P={prompt}, J={request.shared_prefix_boundary}"
        if run.stalled:
            return f"{label}: the split scheduled nothing at {run.chunk_ends[-1:]}"
        promised = set(POLICY.checkpoint_positions(geometry, request))
        tail = last_cacheable_position(prompt, geometry.hash_block_size, geometry.use_eagle)
        starts = (run.lookup.hit_length, *run.chunk_ends[:-1])
        for start, end in zip(starts, run.chunk_ends, strict=True):
            if not 0 < end - start <= budget:
                return f"{label}: chunk [{start}, {end}), budget {budget}"
            allowed = end % grid == 0 or grid > budget or end in promised
            allowed |= geometry.partial_hits and end == tail
            if end < prompt and not allowed:
                return f"{label}: chunk [{start}, {end}) ends off the grid {grid}"
        for position in sorted(promised):
            if starts[0] < position < prompt and position not in run.chunk_ends:
                return (
                    f"{label}: promised position {position} is no chunk end {list(run.chunk_ends)}"
                )
        for start in starts:
            reach = (start // grid + 1) * grid - start
            if reach > budget:
                continue
            wanted = min(reach, prompt - start)
            moved = vllm_split(
                geometry,
                num_prompt_tokens=prompt,
                num_tokens=prompt,
                num_computed_tokens=start,
                shared_prefix_boundary=request.shared_prefix_boundary,
                num_new_tokens=wanted,
                max_num_scheduled_tokens=budget,
            )
            if moved == 0:
                return f"{label}: no progress from {start} with {wanted} tokens"
    return None


def _check_reconciliation(scenario: Scenario) -> str | None:
    engine = run_prompts(scenario)
    lookup = engine.lookup(scenario.probe)
    junction = lookup.shared_prefix_boundary
    got = (lookup.hit_length, junction or lookup.hit_length, junction)
    want = oracle_reconcile_view(
        engine.geometry, lookup.views, lookup.max_hit_length, lookup.hashed_tokens
    )
    if got != want:
        return f"vLLM (h, ℓ, J) = {got}, oracle {want} on the same cache"
    return None


def _check_safety(scenario: Scenario) -> str | None:
    if not any(g.kind is GroupKind.MAMBA for g in scenario.geometry.groups):
        return None
    engine = run_prompts(scenario)
    engine.lookup(scenario.probe or scenario.prompts[-1])
    for lookup in engine.lookups:
        if not lookup.state_materialized:
            return (
                f"a {len(lookup.tokens)}-token request resumes at {lookup.hit_length}, "
                "where no chunk end left a Mamba state"
            )
    return None


_CHECKS: dict[str, Callable[[Scenario], str | None]] = {
    "replay": _check_hit,
    "junction": _check_hit,
    "segments": _check_segments,
    "economy": _check_economy,
    "split": _check_split,
    "reconciliation": _check_reconciliation,
    "safety": _check_safety,
}


def check(scenario: Scenario) -> str | None:
    """Run the scenario's promise check on vLLM's code: ``None`` when it holds."""
    return _CHECKS[scenario.promise](scenario)
