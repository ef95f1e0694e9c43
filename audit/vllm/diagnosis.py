"""Which recorded finding explains a promise violation of vLLM 0.33.0.

A violation the promise checks find on vLLM's code is one of the findings in
docs/findings.md, or new; the audit's tests require every violation to be
explained, so an unknown defect fails them with its scenario. Lookup
departures are diagnosed exactly (the one ``upstream.vllm_0_33.lookup_model`` flag that
alone reproduces vLLM's answer); the other findings are rules on the
scenario's shape and the typed problem (``harness.verdict``), with their
reasons in :mod:`audit.vllm.findings`.
"""

from __future__ import annotations

import attrs

from junction.core import GroupKind, HybridGeometry, floor_to, replay_boundary
from junction.reference.harness import Promise, Scenario, Violation
from junction.reference.harness.verdict import MissedPosition, OffGrid
from junction.upstream.vllm_0_33.lookup_model import Quirks, model_reconcile

from .subject import POLICY, VllmRun, VllmSubject

__all__ = ["LOOKUP_QUIRKS", "diagnose", "lookup_departures"]

LOOKUP_QUIRKS: tuple[str, ...] = tuple(field.name for field in attrs.fields(Quirks))


def lookup_departures(scenario: Scenario) -> list[str]:
    """The lookup departures behind every lookup of the scenario where vLLM and core differ.

    Each disagreeing lookup contributes the first departure (in
    :data:`LOOKUP_QUIRKS` order) that alone reproduces vLLM's answer, else the
    first that does together with ``verified_set``, or ``"unexplained"``. The
    second try is there because the verified set also decides *which* lookups
    vLLM makes: a second round asks a verified EAGLE window again without its
    drop at the candidate it proved, harmless alone (it needs fewer blocks
    there) but a path into another departure (a one-token window then finds no
    hit, ``swa_window_of_one_needs_a_block``).
    """
    engine = _run(scenario).engine
    engine.lookup(scenario.probe or scenario.prompts[-1])
    found: list[str] = []
    for lookup in engine.lookups:
        theirs = (lookup.hit_length, lookup.shared_prefix_boundary)
        if theirs == (lookup.core.hit_length, lookup.core.shared_prefix_boundary):
            continue
        tries = [(name, Quirks().only(name)) for name in LOOKUP_QUIRKS]
        tries += [(name, attrs.evolve(quirks, verified_set=True)) for name, quirks in tries]
        for name, quirks in tries:
            hit, _, junction = model_reconcile(
                engine.geometry, lookup.views, lookup.max_hit_length, lookup.hashed_tokens, quirks
            )
            if (hit, junction) == theirs:
                found.append(name)
                break
        else:
            found.append("unexplained")
    return found


def _run(scenario: Scenario) -> VllmRun:
    return VllmSubject().run(scenario)


def _mamba_narrower_than_grid(geometry: HybridGeometry) -> bool:
    return not geometry.partial_hits and any(
        g.kind is GroupKind.MAMBA and g.block_size < geometry.scheduler_block_size
        for g in geometry.groups
    )


def _ends_on_the_mamba_block(geometry: HybridGeometry, problem: object) -> bool:
    """A chunk ended on the Mamba block, off ``L`` (a multiple of it): vLLM's split
    grid, with or without partial hits (which make such an end reachable, but
    not an end on the scheduler grid)."""
    block = geometry.mamba_block_size
    return isinstance(problem, OffGrid) and problem.end % block == 0 and block < problem.grid


def _eagle_drops_less_than_the_grid(geometry: HybridGeometry) -> bool:
    """EAGLE, and the lookup drops less than ``L``: one hash unit with partial hits,
    else the EAGLE groups' own blocks when every one is below ``L`` (EAGLE per group
    can leave the largest blocks to groups that do not drop)."""
    if not geometry.use_eagle:
        return False
    return geometry.partial_hits or geometry.eagle_drop_tokens < geometry.scheduler_block_size


def _sub_block_boundary(scenario: Scenario) -> bool:
    """Partial hits, and a boundary vLLM hands the Mamba mask for a prefilled
    request (floored to ``A``) lies inside a Mamba block."""
    geometry = scenario.geometry
    mamba = [g for g in geometry.groups if g.kind is GroupKind.MAMBA]
    if not geometry.partial_hits or not mamba:
        return False
    alignment, block = geometry.alignment_tokens, mamba[0].block_size
    for prefill in _run(scenario).prefills:
        for x in POLICY.reachable_boundaries(geometry, mamba[0], prefill.request):
            if floor_to(x, alignment) % block:
                return True
    return False


def _eagle_shifted(scenario: Scenario, position: int) -> bool:
    """``position`` is one of vLLM's EAGLE-shifted boundaries of a prefilled request:
    ``floor_L(P - 1) - L`` or ``J - B`` for a group's block ``B``."""
    geometry = scenario.geometry
    grid = geometry.scheduler_block_size
    for prefill in _run(scenario).prefills:
        prompt, junction = prefill.request.num_prompt_tokens, prefill.request.shared_prefix_boundary
        if position == floor_to(replay_boundary(prompt), grid) - grid:
            return True
        if junction and any(position == junction - g.block_size for g in geometry.groups):
            return True
    return False


def _eagle_zero_boundary(scenario: Scenario) -> bool:
    """EAGLE, and a prefilled request hands a sliding window a boundary below ``A``
    (``max(floor_L(P) - L, 0)`` for a prompt shorter than ``2L``)."""
    geometry = scenario.geometry
    if not geometry.use_eagle:
        return False
    alignment = geometry.alignment_tokens
    for prefill in _run(scenario).prefills:
        for group in geometry.groups:
            if group.kind is GroupKind.SLIDING_WINDOW and any(
                x < alignment for x in POLICY.reachable_boundaries(geometry, group, prefill.request)
            ):
                return True
    return False


def _target_window_under_a_junction(scenario: Scenario) -> bool:
    """EAGLE per group: a sliding window that is not an EAGLE group, and a prefilled
    request with a junction (vLLM adds ``J - B`` only in EAGLE groups' managers)."""
    geometry = scenario.geometry
    if not geometry.use_eagle or not any(
        g.kind is GroupKind.SLIDING_WINDOW and not g.eagle_group for g in geometry.groups
    ):
        return False
    return any(prefill.request.shared_prefix_boundary for prefill in _run(scenario).prefills)


def diagnose(violation: Violation) -> str | None:
    """The key of the finding that explains this violation, or ``None`` (new)."""
    scenario, promise = violation.scenario, violation.promise
    geometry = scenario.geometry
    departures = lookup_departures(scenario)
    if departures and "unexplained" not in departures:
        return f"lookup-{departures[0]}"
    if _mamba_narrower_than_grid(geometry) and promise is not Promise.RECONCILIATION:
        return "mamba-grid"
    if promise is Promise.SPLIT and _ends_on_the_mamba_block(geometry, violation.problem):
        return "mamba-grid"
    missed = violation.problem.position if isinstance(violation.problem, MissedPosition) else None
    interval = geometry.retention_interval
    if missed is not None and interval and missed % interval == 0:
        return "segments-not-split"
    if promise is not Promise.RECONCILIATION and _sub_block_boundary(scenario):
        return "partial-sub-block"
    if missed is not None and geometry.use_eagle and _eagle_shifted(scenario, missed):
        return "eagle-shift-split"
    if promise is Promise.ECONOMY and _eagle_zero_boundary(scenario):
        return "eagle-zero-boundary"
    if promise in (Promise.REPLAY, Promise.JUNCTION) and _target_window_under_a_junction(scenario):
        return "eagle-junction-target-group"
    if promise is not Promise.RECONCILIATION and _eagle_drops_less_than_the_grid(geometry):
        return "eagle-landing"
    return None
