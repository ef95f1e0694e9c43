"""The audit's findings about vLLM 0.33.0, and the docs/findings.md section they make.

Each :class:`Finding` names one defect or departure in vLLM's own code, with
the minimal counterexample the audit shrank it to (a replayable
``junction.reference.harness.Scenario``), what in vLLM's code causes it, the
promise it breaks and the upstream report it matches (or "new").
:func:`findings_markdown` re-runs every counterexample on the installed vLLM
and writes what it observes, so the section is regenerated, never edited:
``junction audit findings --write docs/findings.md`` replaces the text
between the ``vllm-audit`` markers and leaves the rest of the file alone.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from junction.core import GroupSpec, HybridGeometry
from junction.reference.harness import Promise, Scenario, check
from junction.upstream.vllm_0_33.env import PINNED_VERSION

from ..sections import counterexample_paragraph, table_cell
from . import ENGINE
from .diagnosis import diagnose
from .mask_findings import mask_findings_markdown
from .split_findings import split_findings_markdown
from .subject import VllmSubject

__all__ = ["AUDIT_BEGIN", "AUDIT_END", "FINDINGS", "Finding", "findings_markdown"]

AUDIT_BEGIN, AUDIT_END = ENGINE.begin, ENGINE.end


def _promises(names: Iterable[str]) -> tuple[Promise, ...]:
    return tuple(Promise.named(name) for name in names)


@attrs.frozen
class Finding:
    """One defect or departure of vLLM 0.33.0, with its minimal counterexample."""

    key: str
    title: str
    promises: tuple[Promise, ...] = attrs.field(converter=_promises)
    upstream: str
    cause: str
    impact: str
    counterexample: Scenario


def _scenario(
    promise: str,
    groups: list[GroupSpec],
    unit: int,
    prompts: list[tuple[int, ...]],
    probe: tuple[int, ...] = (),
    budget: int = 4,
    *,
    eagle: bool = False,
    interval: int | None = None,
    partial: bool = False,
) -> Scenario:
    """A counterexample; ``partial`` states what vLLM decides (the tests check it),
    so building the catalogue needs no vLLM."""
    geometry = HybridGeometry(
        groups, unit, partial_hits=partial, use_eagle=eagle, retention_interval=interval
    )
    return Scenario(promise, geometry, prompts, probe, budget)


_full, _swa, _mamba = GroupSpec.full, GroupSpec.sliding_window, GroupSpec.mamba

FINDINGS: tuple[Finding, ...] = (
    Finding(
        "mamba-grid",
        "Chunks end on the Mamba block, hits land on `L`",
        ("replay", "junction", "split"),
        "vLLM #54076 (the chunk grid on the Mamba group's block size, as the bug zoo "
        "models it): still in 0.33.0's code, visible whenever `L > B_m`",
        "`_mamba_block_aligned_split` floors chunk ends and its last cacheable position "
        "`floor_b(N - 1)` to `cache_config.block_size`, which align mode makes the Mamba "
        "block `B_m`; hits land on the scheduler block `L` (lcm of every group's block). "
        "Page-size unification widens the block of an attention group whose page is "
        "smaller (`unify_kv_cache_spec_page_size`), so `L` can be a multiple of `B_m`",
        "chunk ends and the replay state fall between the hit grid's points: even with dense "
        "retention no Mamba state sits where a resend lands, so the hit is lost",
        _scenario("replay", [_full(4), _mamba(2)], 2, [(0,) * 7], (0,) * 7, 6),
    ),
    Finding(
        "eagle-landing",
        "EAGLE boundaries assume a drop of one scheduler block",
        ("replay", "junction"),
        "new; the mirror of #53945/#54713 (state kept where no lookup lands)",
        "`replay_boundaries` keeps `floor_L(P - 1) - L` and `floor_L(P) - L`, and "
        "`cache_blocks` adds `J - B` for the junction, but the EAGLE lookup can drop less "
        "than `L`, and then it lands above the kept positions: with partial hits full "
        "attention drops one hash unit (`eagle_proof_margin`) and re-floors to `A = H`; "
        "without them each EAGLE group drops its own block, below `L` when every EAGLE "
        "group's block is: with EAGLE per group (`is_eagle_group`) when the groups with the "
        "largest blocks are not EAGLE groups (a resend of 18 tokens with full attention of 2 "
        "as the only EAGLE group and `L = 8` lands at 16, the windows keep their tails at "
        "8); with every group an EAGLE group only when a Mamba block sets `L`, whose grid "
        "then limits the landing first",
        "under `R = 0` the sliding-window tail or Mamba state a resend needs is not kept: the "
        "resend misses what dense retention would hit",
        _scenario(
            "replay",
            [_full(2), _mamba(4), _swa(2, 2)],
            2,
            [(0,) * 4],
            (0,) * 4,
            eagle=True,
            interval=0,
            partial=True,
        ),
    ),
    Finding(
        "partial-sub-block",
        "Partial hits: a boundary inside a Mamba block is kept at two different positions",
        ("junction", "economy", "split"),
        "new (a defect class of docs/domain.md: a sub-block junction rounded the wrong way)",
        "with partial hits (`A = H`) the split stops at the junction floored to the Mamba "
        "block from the chunk start (`s + floor_b(J - s)`) and the Mamba mask keeps block "
        "`floor_A(x) // B - 1`, the state at `floor_B(x)`; the sliding-window mask keeps its "
        "tail at `floor_A(x)`, where lookups land. The exact junction stop "
        "(`enable_mamba_shared_prefix_checkpoint`) is off by default and only ever applies "
        "under EAGLE",
        "under `R = 0` no position has both the Mamba state and the window tail: a third "
        "request sharing the prefix misses it; the floored Mamba state is kept for nothing; "
        "the junction is never a chunk end",
        _scenario(
            "junction",
            [_full(2), _mamba(4), _swa(2, 2)],
            2,
            [(0,) * 7 + (101, 0), (0,) * 7 + (102, 0)],
            (0,) * 7 + (103, 0),
            interval=0,
            partial=True,
        ),
    ),
    Finding(
        "segments-not-split",
        "`R > 0`: segment states are kept only where a chunk happens to end",
        ("split",),
        "vLLM #53479, what remains of it",
        "the Mamba mask marks the state block of every `R`-token segment, but the split "
        "never stops at segment boundaries (its stops are the grid, the last cacheable "
        "position, the partial tail and the junction)",
        "a segment state exists only if the budget happens to end a chunk there; "
        "promise 3 of docs/domain.md counts only materialised segments, so lookups lose "
        "nothing they were promised, but `R` is not the spacing of the kept states",
        _scenario("split", [_full(2), _mamba(2)], 2, [(7, 0, 0, 0, 0, 0, 0)], budget=6, interval=2),
    ),
    Finding(
        "eagle-shift-split",
        "EAGLE: shifted boundaries are kept but never chunk ends",
        ("split",),
        "new, mostly harmless",
        "`replay_boundaries` names `floor_L(P - 1) - L`, the split's last cacheable position "
        "is `floor_L(N) - L`; `cache_blocks` adds `J - B`, the split stops at `J` only. A "
        "resend may match every hashed token, so it lands at `floor_L(P) - L`, never at "
        "`floor_L(P - 1) - L`",
        "the Mamba state at those boundaries is never materialised (align mode writes states "
        "at chunk ends only), and under `R = 0` the sliding window keeps a tail for a "
        "position no lookup of this prompt lands on",
        _scenario("split", [_full(2), _mamba(2)], 2, [(0,), (7, 0, 0, 0, 0, 0)], eagle=True),
    ),
    Finding(
        "eagle-zero-boundary",
        "EAGLE: a replay boundary of 0 still keeps the window's peek block",
        ("economy",),
        "new, minor",
        "for a prompt shorter than `2L`, `replay_boundaries` returns "
        "`max(floor_L(P) - L, 0) = 0`; the sliding-window mask keeps the block ending at "
        "`0 / B + 1` (the EAGLE peek) for it",
        "under `R = 0` one block per short prompt is kept that no lookup reads (a hit of 0 "
        "reads nothing)",
        _scenario("economy", [_full(2), _swa(2, 1)], 2, [(0,), (7, 0)], eagle=True, interval=0),
    ),
    Finding(
        "eagle-junction-target-group",
        "EAGLE per group: a target-model window keeps no tail where the draft's drop lands",
        ("junction",),
        "new (EAGLE per group, `is_eagle_group`)",
        "`cache_blocks` adds the junction's EAGLE landing `J - B` to the boundaries only in "
        "a manager whose own `use_eagle` is set, i.e. an EAGLE group's. A request that "
        "shares less than the junction's request did lands one block lower, at `J - B`, in "
        "every group (the hit is the least of them, and the draft group drops a block), "
        "but a sliding window of the target model alone kept no tail there",
        "under `R = 0` a sibling diverging just past the junction misses in the target "
        "window what dense retention would hit (with every group marked, or none, vLLM "
        "keeps it)",
        Scenario(
            "junction",
            HybridGeometry(
                [_full(2), GroupSpec.sliding_window(2, 2, eagle_group=False)],
                2,
                use_eagle=True,
                retention_interval=0,
            ),
            [(0,) * 9, (0,) * 6 + (1, 1)],
            (0,) * 4 + (2, 2),
            4,
        ),
    ),
    Finding(
        "lookup-verified_set",
        "EAGLE lookup: a sliding window accepts a shorter candidate without its peek block",
        ("reconciliation",),
        "new; a leak in the EAGLE `verified` set that fixed #32802 (one drop per candidate)",
        "`find_longest_cache_hit` marks an EAGLE group verified after its dropping lookup "
        "and clears the set only when a lookup *without* the drop shortens the candidate. "
        "A Mamba group is looked up with the drop flag set (it never drops), so when it "
        "shortens the candidate the verified sliding window is asked again without the "
        "drop: it needs no block past the new candidate",
        "vLLM resumes at a length where that group lacks the block past the hit, the block "
        "EAGLE groups must match (its draft KV may have been written for another next "
        "token); a longer hit than first principles allow",
        Scenario(
            "reconciliation",
            HybridGeometry(
                [_full(1), _swa(2, 5), _mamba(1)], 1, use_eagle=True, retention_interval=0
            ),
            [(0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0), (0, 1, 0)],
            (0, 1, 1, 0, 1, 0, 0, 0, 0, 0),
            5,
        ),
    ),
    Finding(
        "lookup-swa_realign_before_drop",
        "EAGLE lookup: a short leading window run loses one alignment unit",
        ("reconciliation",),
        "new",
        "`SlidingWindowManager.find_longest_cache_hit`, when no run of `need` blocks "
        "exists, takes the run from block 0, trims it to `A`, then pops the EAGLE block and "
        "trims again; the run (peek included) already served the position one block below "
        "its end",
        "with sliding-window blocks finer than `A`, a servable hit is missed (a miss, never a "
        "wrong answer)",
        _scenario("reconciliation", [_full(2), _swa(1, 4)], 1, [(0,) * 4], (0,) * 4, eagle=True),
    ),
    Finding(
        "lookup-swa_window_of_one_needs_a_block",
        "A sliding window of one token serves no hit without the EAGLE drop",
        ("replay", "junction", "reconciliation"),
        "new, cosmetic (no model has `W = 1`)",
        "with `W = 1` a lookup without the EAGLE drop needs no cached block (`need = 0`, "
        "and the mask keeps none), but `SlidingWindowManager.find_longest_cache_hit` "
        "accepts a position only after finding a cached block ending there. Under EAGLE "
        "the window is looked up without its drop too: once `find_longest_cache_hit` "
        "(`HybridKVCacheCoordinator`) has it in `eagle_verified`, a second round, started "
        "because the first shortened the candidate, asks it again at the candidate it "
        "proved, without the drop, and it answers 0 (`WINDOW_OF_ONE_UNDER_EAGLE` in "
        "`tests/audit/test_promises.py`)",
        "the lookup misses, and reports the whole full-attention hit as an uncached shared "
        "prefix (a junction) to pin",
        _scenario("reconciliation", [_full(2), _swa(2, 1)], 2, [(0, 0), (0, 0, 0)], (0, 0, 0)),
    ),
    Finding(
        "lookup-full_probe_below_bound",
        "Partial hits: full attention misses hash units inside a block the bound cuts",
        ("reconciliation",),
        "new, minor",
        "`FullAttentionManager.find_longest_cache_hit` counts whole blocks ending within "
        "the bound, then probes only the *registered* hash units of the next block (prompt "
        "partial tails). A block cached whole but cut by the bound (a shorter request inside "
        "another's cached block) serves none of its units, although its KV covers them",
        "`ℓ` is under-reported: the junction the request should pin is not detected",
        _scenario(
            "reconciliation",
            [_full(4), _mamba(8)],
            2,
            [(0,) * 15, (0,) * 5],
            (0,) * 4,
            partial=True,
        ),
    ),
)


def _observed(finding: Finding) -> tuple[str, str]:
    """Re-run the counterexample on vLLM: what went wrong, and the diagnosis."""
    violation = check(finding.counterexample, VllmSubject())
    if violation is None:
        return "no longer reproduces", "-"
    return str(violation), diagnose(violation) or "undiagnosed"


def findings_markdown() -> str:
    """The ``## vLLM 0.33.0 audit`` section, markers included (runs vLLM)."""
    lines = [
        AUDIT_BEGIN,
        f"## vLLM {PINNED_VERSION} audit",
        "",
        "Generated by `junction audit findings` (`make audit-findings`): every "
        "counterexample below is re-run on the installed vLLM when the section is "
        "written. Unlike the sections above, nothing here goes through our engine or "
        "policies: `audit/vllm/` drives vLLM's own code on CPU, `SlidingWindowManager` / "
        "`MambaManager.reachable_block_mask` on real specs, `Scheduler."
        "_mamba_block_aligned_split` on a stand-in carrying only the attributes it reads "
        "with a real `Request`, and a real `KVCacheManager` (hybrid coordinator, block "
        "pool, block hasher) fed prompts the way its scheduler feeds them "
        "(`audit/vllm/engine.py`). Modelled configuration: vLLM's defaults (prefix caching "
        "on, no KV connector, no explicit EAGLE group so every group counts as one under "
        "EAGLE, no lookahead hashes or multi-module MTP, no internal prefill checkpoints, "
        "`enable_mamba_shared_prefix_checkpoint` off), one request at a time, prompts only.",
        "",
        "### Differential: the `vllm-0.33` policy against vLLM's functions",
        "",
        "| vLLM 0.33.0 | ours | result |",
        "| --- | --- | --- |",
        "| `SlidingWindowManager` / `MambaManager.reachable_block_mask` | "
        "`VllmPolicy.block_mask` | equal on random inputs and on every call of real runs |",
        "| the boundaries `cache_blocks` hands the mask (`replay_boundaries` + junction) | "
        "`VllmPolicy.reachable_boundaries` | equal on every call of real runs (vLLM also "
        "passes negative `J - B` under partial hits; they mark nothing, the policy drops "
        "them) |",
        "| `Scheduler._mamba_block_aligned_split` | `VllmPolicy.split` | equal, after one "
        "fix to ours: vLLM's grid is `cache_config.block_size` (the Mamba block), not `L` |",
        "| `HybridKVCacheCoordinator.find_longest_cache_hit` via "
        "`KVCacheManager.get_computed_blocks` | `core.reconcile_hits` over the same pool | "
        "four departures below; vLLM equals our restatement of it "
        "(`upstream/vllm_0_33/lookup_model.py`) with exactly those four switched on |",
        "",
        "Lookup is not a policy decision, so the four lookup departures are findings about "
        "vLLM (the last four rows below); their counterexamples are `reconciliation` "
        "scenarios: vLLM's `(h, ℓ, J)` against the first-principles oracle on vLLM's own "
        "pool.",
        "",
        "### Findings",
        "",
        "| # | finding | promise broken | observed on the counterexample | upstream |",
        "| --- | --- | --- | --- | --- |",
    ]
    observed = [_observed(f) for f in FINDINGS]
    for number, (finding, (problem, _)) in enumerate(zip(FINDINGS, observed, strict=True), 1):
        broken = ", ".join(str(p.number) for p in finding.promises)
        lines.append(
            f"| {number} | {table_cell(finding.title)} | {broken} | {table_cell(problem)} | "
            f"{table_cell(finding.upstream)} |"
        )
    lines += [
        "",
        "Promises 3 (segments) and 7 (no Mamba resume without its exact state, under "
        "eviction) held on every scenario the audit ran. Every violation the property "
        "tests (`tests/audit/test_promises.py`) find must be explained by one of these "
        "findings (`audit/vllm/diagnosis.py`); an unexplained one fails them.",
        "",
        "### Causes and minimal counterexamples",
        "",
        "Replay one with `check(Scenario.from_json(json.loads(text)), VllmSubject())` "
        "(`junction.reference.harness`, `junction.audit.vllm.subject`).",
        "",
    ]
    for number, (finding, (_, key)) in enumerate(zip(FINDINGS, observed, strict=True), 1):
        notes = (f"`{finding.key}`", f"diagnosed as `{key}`")
        lines += counterexample_paragraph(
            number, finding.title, notes, finding.cause, finding.impact, finding.counterexample
        )
    lines += mask_findings_markdown()
    lines += split_findings_markdown()
    lines.append(AUDIT_END)
    return "\n".join(lines) + "\n"
