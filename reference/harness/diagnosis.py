"""Which upstream report a violation of a vLLM policy in the reference engine matches.

The diagnosis of a counterexample is a rule on its shape (geometry, promise,
which problem, its numbers), written from reading each shrunk case; a
violation no rule explains is reported as "new, not yet diagnosed" rather
than guessed. The rules read the :class:`.verdict.Violation`'s typed fields,
never its prose: a reworded message would break a rule that parsed it, silently.
"""

from __future__ import annotations

from junction.core import GroupKind, HybridGeometry

from .promise import Promise
from .verdict import MissedPosition, OffGrid, Violation

__all__ = ["UNDIAGNOSED", "diagnose", "diagnose_connector"]

UNDIAGNOSED = "new, not yet diagnosed"


def _sparse_wider_than_hash(geometry: HybridGeometry) -> bool:
    return any(
        g.kind is GroupKind.SLIDING_WINDOW and g.block_size > geometry.alignment_tokens
        for g in geometry.groups
    )


def diagnose(policy: str, violation: Violation) -> str:
    """The upstream report a violation of ``policy`` (a vLLM policy's name) matches."""
    scenario, promise, problem = violation.scenario, violation.promise, violation.problem
    geometry = scenario.geometry
    eagle, partial = geometry.use_eagle, geometry.partial_hits
    interval, grid = geometry.retention_interval, geometry.scheduler_block_size
    hit_promise = promise in (Promise.REPLAY, Promise.JUNCTION)
    missed = problem if isinstance(problem, MissedPosition) else None
    if (
        policy == "vllm-pr47782"
        and promise in (Promise.REPLAY, Promise.SPLIT)
        and not eagle
        and any(len(p) % grid == 0 for p in scenario.prompts)
    ):
        return (
            "vLLM #50409: the last cacheable position `N - N mod b` keeps the only state at "
            "a block-aligned prompt's end, one token past every lookup"
        )
    if isinstance(problem, OffGrid):
        return (
            "vLLM #54076 (still there when an attention block is wider than the Mamba "
            "block): the split works on `cache_config.block_size`, the Mamba block, so chunks "
            "end, and Mamba states land, on Mamba-block multiples that are not hit-aligned"
        )
    mamba_blocks = [g.block_size for g in geometry.groups if g.kind is GroupKind.MAMBA]
    if (
        hit_promise
        and policy.startswith("vllm")
        and not partial
        and any(b < grid for b in mamba_blocks)
    ):
        return (
            "vLLM #54076 (still there when an attention block is wider than the Mamba "
            "block): chunks end on Mamba-block multiples, so the hit-aligned position a "
            "lookup lands on has no Mamba state"
        )
    if missed is not None and interval and missed.position % interval == 0:
        return (
            "vLLM #53479 (what remains of it): the Mamba mask marks one state per segment, but "
            "the split never stops at segment boundaries, so only segments a chunk happens to "
            "end at are kept (promise 3 of docs/domain.md counts only those)"
        )
    if missed is not None and missed.request.shared_prefix_boundary == missed.position:
        return (
            "sub-block junction floored the wrong way (a defect class of docs/domain.md): with "
            "partial hits a junction inside a scheduler block is floored relative to the chunk "
            "start (`s + floor_L(J - s)`), which lands on the start, so no chunk ends at the "
            "junction"
        )
    if missed is not None and eagle:
        return (
            "new, harmless: under EAGLE `replay_boundaries` names `floor_L(P - 1) - L`, where "
            "the split (last cacheable `floor_L(N) - L`) never ends a chunk; the resend lands "
            "at the split's position, so nothing is lost, but the two disagree"
        )
    if promise is Promise.ECONOMY and partial and _sparse_wider_than_hash(geometry):
        return (
            "new: with partial hits (`A = H`) a sliding-window group whose block is wider "
            "than `H` falls back to dense retention (`A` is not a whole number of its blocks), "
            "so `R = 0` keeps every one of its blocks"
        )
    if promise is Promise.ECONOMY and eagle and len(scenario.prompts[0]) <= grid:
        return (
            "new, minor: a replay boundary that floors to 0 (a prompt within one alignment "
            "unit) still keeps the sliding window's EAGLE peek block, which no lookup reads"
        )
    if hit_promise and partial:
        return (
            "engine-model difference, not claimed against vLLM: the reference engine serves "
            "a Mamba hit only at a block end, while vLLM 0.33 also keys the prompt's partial-"
            "tail Mamba state at a hash boundary; `make audit-vllm` checks vLLM's own code"
        )
    if (
        hit_promise
        and eagle
        and any(g.kind is GroupKind.SLIDING_WINDOW and not g.eagle_group for g in geometry.groups)
    ):
        return (
            "new (EAGLE per group): `cache_blocks` adds the junction's EAGLE landing `J - B` "
            "only in an EAGLE group's manager, so a sliding window of the target model keeps "
            "no tail where the draft group's drop lands a sibling's hit"
        )
    if hit_promise and eagle:
        return (
            "new (the mirror of #53945/#54713): under EAGLE vLLM keeps the replay state at "
            "`floor_L(N) - L` and the junction's at `J - B`, assuming the drop is a whole "
            "block, but a lookup drops `min(A, B_f)` tokens and re-floors to `A`, so it "
            "lands above the kept state when the prompt is not `L`-aligned"
        )
    return UNDIAGNOSED


def diagnose_connector(violation: Violation) -> str:
    """Why the tier form fails under vLLM 0.33.0's connector saving (``TierSaving.VLLM_0_33``)."""
    geometry = violation.scenario.geometry
    if any(g.kind is GroupKind.SLIDING_WINDOW for g in geometry.groups):
        return (
            "vLLM 0.33.0's Mooncake store connector (`store_mask` -> `_reachable_masks`) hands "
            "`reachable_block_mask` the replay boundaries only, never the junction: the "
            "sliding window's tail at the junction stays local, so another instance finds "
            "full attention's blocks in the store but cannot resume there"
        )
    return UNDIAGNOSED
