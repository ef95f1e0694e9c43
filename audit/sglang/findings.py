"""The audit's findings about SGLang 0.5.23, and the docs/findings.md section they make.

Each :class:`SglangFinding` names one way SGLang's unified radix cache departs
from a promise of docs/domain.md, with a minimal counterexample (a replayable
``Scenario`` and the Mamba chunk SGLang ran with), its cause in SGLang's code
and its impact. :func:`diagnose` names the finding that explains a violation
(the property tests fail on one it cannot explain). :func:`findings_markdown`
re-runs every counterexample on both tree cores and a side-by-side of vLLM
0.33.0, SGLang and the ``junction`` policy on the same scenarios, so the
section is regenerated, never edited (between the ``sglang-audit`` markers).
"""

from __future__ import annotations

import attrs

from junction.core import GroupKind, GroupSpec, HybridGeometry
from junction.reference.harness import Promise, Scenario, Violation, check
from junction.reference.harness.engine_subject import EngineSubject
from junction.reference.harness.verdict import KeptTooMany, KeptUnneeded, ShortOfFullAttention
from junction.reference.policies.builtin import JunctionPolicy
from junction.upstream.vllm_0_33.env import PINNED_VERSION as VLLM_VERSION
from junction.upstream.vllm_0_33.specs import vllm_geometry

from ..sections import counterexample_paragraph, table_cell
from ..vllm.subject import VllmSubject
from . import ENGINE
from .cache import TreeCore
from .env import PINNED_VERSION
from .subject import SglangSubject, sglang_projection

__all__ = [
    "COMPARED",
    "SGLANG_BEGIN",
    "SGLANG_END",
    "SGLANG_FINDINGS",
    "SglangFinding",
    "Side",
    "diagnose",
    "findings_markdown",
    "side_by_side",
]

SGLANG_BEGIN, SGLANG_END = ENGINE.begin, ENGINE.end


@attrs.frozen
class SglangFinding:
    """One departure of SGLang 0.5.23, with its minimal counterexample."""

    key: str
    title: str
    promises: tuple[Promise, ...]
    cause: str
    impact: str
    counterexample: Scenario
    mamba_chunk: int


def _mamba(page: int) -> HybridGeometry:
    return HybridGeometry([GroupSpec.full(page), GroupSpec.mamba(page)], page, retention_interval=0)


SGLANG_FINDINGS: tuple[SglangFinding, ...] = (
    SglangFinding(
        "state-at-prompt-end",
        "A resend misses the state a first send tracked at its own end",
        (Promise.REPLAY,),
        "a chunk tracks its state at the last checkpoint-grid point it reaches "
        "(`_mamba_radix_cache_v2_req_prepare_for_extend`), the prompt's end `N` when `N` is "
        "on the grid; `checkpoint_into_tree` inserts full KV only up to that state. A "
        "resend's lookup is bounded to `N - 1` (`_compute_max_prefix_len`), so it stops "
        "inside the node, which `match_prefix` splits: the split parent gets no state",
        "the resend hits the previous state (here none) although full attention covers "
        "`N - 1` floored to the page; SGLang then sets `mamba_branching_seqlen` and the "
        "resend tracks a state there, so a third send hits (the `junction` policy keeps "
        "`floor_L(N - 1)` on the first send)",
        Scenario("replay", _mamba(2), [tuple(range(8))], tuple(range(8)), 16),
        4,
    ),
    SglangFinding(
        "chunk-grid",
        "Hits and the junction land on the checkpoint grid, below full attention",
        (Promise.JUNCTION, Promise.REPLAY),
        "`MambaComponent.finalize_match_result_in_tree_core` floors `full_kv_hit_length` "
        "to `mamba_checkpoint_grid` (`lcm(mamba_cache_chunk_size, page)`); the kernel "
        "snapshots states only every chunk from a request's prefix, so a state at a page "
        "inside the chunk cannot be tracked",
        "a third request sharing a prefix hits the prefix floored to the chunk, not "
        "floored to the page, where SGLang's hits otherwise land; on the project's "
        "geometry with the Mamba block equal to SGLang's chunk the `junction` policy "
        "lands at the same place",
        Scenario(
            "junction",
            _mamba(2),
            [(*range(10), 101, 0), (*range(10), 102, 0)],
            (*range(10), 103, 0),
            16,
        ),
        4,
    ),
    SglangFinding(
        "off-grid-cut",
        "A chunk cut off the checkpoint grid loses the junction",
        (Promise.JUNCTION,),
        "without DCP a chunk cut is left where the budget puts it "
        "(`PrefillAdder.floor_chunked_tokens`: `mamba_prefill_chunk_grid` is 1), and each "
        "chunk tracks its state a whole number of chunks past its own start "
        "(`_mamba_radix_cache_v2_req_prepare_for_extend`), so a chunk starting off the grid "
        "leaves a state off it. `finalize_match_result_in_tree_core` puts the branching point "
        "on the absolute grid, but `prepare_for_extend` tracks it only when it is a whole "
        "number of chunks past the chunk's start, so a request resuming at such a state (or "
        "a chunk starting off the grid) never tracks it and tracks a state past it instead",
        "a third request sharing the prefix hits the previous state, below the branching "
        "point SGLang computed (here 10 for a junction at 12, full attention 12): the loss "
        "is up to about one prefill chunk, the distance between two states the first "
        "prompt tracked. A budget that is not a multiple of the chunk is the "
        "trigger (the same prompts cut at 4 or 8 tokens hit 12; the tests re-run it): a "
        "`chunked_prefill_size` off the grid, or the remainder a request is cut to when it "
        "shares a step with others (the budget the earlier ones left)",
        Scenario(
            "junction",
            _mamba(2),
            [(*range(13), 101, 0, 0), (*range(13), 102, 0, 0)],
            (*range(13), 103, 0, 0),
            6,
        ),
        4,
    ),
    SglangFinding(
        "state-per-chunk",
        "A state is kept at every chunk of a long prompt",
        (Promise.ECONOMY,),
        "`checkpoint_into_tree` runs after every chunk of a chunked prefill, and the "
        "unfinished request donates its tracked state (`prepare_for_caching_req`); "
        "`mamba_max_states_per_path` is unbounded by default (-1)",
        "a prompt of `k` chunks keeps `k` states where a resend or a shared prefix needs "
        "at most two (its replay boundary and its junction): Mamba memory grows with "
        "prompt length, and a resend hits the last one anyway. Capping "
        "`mamba_max_states_per_path` at 1 does not restore economy: the cap spares "
        "locked nodes, and the running request holds the lock on its previous chunk's "
        "state when the next insert applies the cap, so two states stay (the tests "
        "re-run it)",
        Scenario("economy", _mamba(2), [tuple(range(13))], (), 4),
        4,
    ),
)


def diagnose(violation: Violation, mamba_chunk: int) -> str | None:
    """The key of the finding that explains ``violation`` (SGLang's), or ``None``."""
    problem, scenario = violation.problem, violation.scenario
    if isinstance(problem, ShortOfFullAttention):
        page = scenario.geometry.hash_block_size
        bound = (len(scenario.probe) - 1) // page * page
        if problem.hit >= problem.full_attention // mamba_chunk * mamba_chunk:
            return "chunk-grid"  # as far as the checkpoint grid allows
        if problem.full_attention == bound:
            return "state-at-prompt-end"  # full attention reaches the lookup's bound
        # The state lost is the one the second request should track at its branching
        # point, which only a third request reads: the junction promise's probe.
        if scenario.promise is Promise.JUNCTION and _cut_off_grid(scenario, mamba_chunk):
            return "off-grid-cut"
        return None
    if isinstance(problem, KeptUnneeded | KeptTooMany):
        group = scenario.geometry.groups[problem.group_id]
        return "state-per-chunk" if group.kind is GroupKind.MAMBA else None
    return None


def _cut_off_grid(scenario: Scenario, mamba_chunk: int) -> bool:
    """Whether some prompt is cut into chunks off the checkpoint grid: the only way a
    chunk (and the states it tracks) starts off the grid, since admissions resume at
    states and a first chunk starts at 0."""
    page = scenario.geometry.hash_block_size
    cut = scenario.budget // page * page
    return cut % mamba_chunk != 0 and any(len(p) > scenario.budget for p in scenario.prompts)


def _observed(finding: SglangFinding) -> tuple[str, str]:
    """Re-run the counterexample on both tree cores: what went wrong, and the diagnosis."""
    verdicts = {
        core: check(finding.counterexample, SglangSubject(core, finding.mamba_chunk))
        for core in TreeCore
    }
    texts = {str(v) if v else "no longer reproduces" for v in verdicts.values()}
    if len(texts) != 1:
        raise AssertionError(f"{finding.key}: the tree cores disagree: {verdicts}")
    violation = verdicts[TreeCore.RUST]
    if violation is None:
        return "no longer reproduces", "-"
    return str(violation), diagnose(violation, finding.mamba_chunk) or "undiagnosed"


@attrs.frozen
class Side:
    """One engine on one scenario: the probe's hit, the Mamba states kept, the junction."""

    hit: int
    states: int
    junction: int


def side_by_side(scenario: Scenario) -> tuple[Side, Side, Side]:
    """vLLM, SGLang and the ``junction`` policy on one scenario: the probe's hit, the
    Mamba states kept and the junction the last prompt was admitted with."""
    geometry = scenario.geometry
    mamba = next(i for i, g in enumerate(geometry.groups) if g.kind is GroupKind.MAMBA)
    vllm = VllmSubject().run(scenario)
    engine = EngineSubject(JunctionPolicy()).run(scenario)
    projection = sglang_projection(geometry)
    sglang = SglangSubject(TreeCore.RUST, projection.mamba_chunk).run(
        attrs.evolve(scenario, geometry=projection.geometry)
    )
    sides = []
    for run, group in ((vllm, mamba), (sglang, 1), (engine, mamba)):
        junction = run.prefills[-1].request.shared_prefix_boundary
        sides.append(Side(run.lookup(scenario.probe).hit, len(run.kept(group)), junction))
    return sides[0], sides[1], sides[2]


# The configuration vLLM implies for full attention in 2-token blocks, Mamba in 4
# (partial hits on: its hash unit is smaller than the Mamba block).
COMPARED_GEOMETRY = vllm_geometry([GroupSpec.full(2), GroupSpec.mamba(4)], 2, retention_interval=0)

COMPARED: tuple[tuple[str, Scenario], ...] = (
    (
        "resend of a 16-token prompt (budget 16)",
        Scenario(
            "replay",
            COMPARED_GEOMETRY,
            [tuple(range(16))],
            tuple(range(16)),
            16,
        ),
    ),
    (
        "resend of a 15-token prompt (budget 4)",
        Scenario(
            "replay",
            COMPARED_GEOMETRY,
            [tuple(range(15))],
            tuple(range(15)),
            4,
        ),
    ),
    (
        "third request after two sharing 10 tokens",
        Scenario(
            "junction",
            COMPARED_GEOMETRY,
            [(*range(10), 101, 0), (*range(10), 102, 0)],
            (*range(10), 103, 0),
            16,
        ),
    ),
    (
        "third request after two sharing 12 tokens",
        Scenario(
            "junction",
            COMPARED_GEOMETRY,
            [(*range(12), 101, 0, 0), (*range(12), 102, 0, 0)],
            (*range(12), 103, 0, 0),
            16,
        ),
    ),
    (
        "third request after two sharing 13 tokens, in 6-token chunks",
        Scenario(
            "junction",
            COMPARED_GEOMETRY,
            [(*range(13), 101, 0, 0), (*range(13), 102, 0, 0)],
            (*range(13), 103, 0, 0),
            6,
        ),
    ),
)


def findings_markdown() -> str:
    """The ``## SGLang 0.5.23 audit`` section, markers included (runs SGLang and vLLM)."""
    lines = [
        SGLANG_BEGIN,
        f"## SGLang {PINNED_VERSION} audit",
        "",
        "Generated by `junction audit findings` (`make audit-findings`): every "
        "counterexample is re-run on SGLang's `UnifiedRadixCache`, on both tree cores "
        "(Python and the bundled Rust one), which must agree. `audit/sglang/` builds the "
        "cache on CPU from `HybridReqToTokenPool`, `HybridLinearKVPool` (or `SWAKVPool`) "
        "and their allocators, and feeds it prompts as its scheduler does "
        "(`audit/sglang/cache.py` lists what it assumes of the scheduler; each assumption "
        "is tested): `match_prefix` bounded to `N - 1`, page-floored chunks of the budget, "
        "the state each chunk tracks named by SGLang's own "
        "`ScheduleBatch._mamba_radix_cache_v2_req_prepare_for_extend`, and "
        "`checkpoint_into_tree`'s insert after every chunk. The harness geometry is "
        "SGLang's page for every group (a Mamba state may end any node); the checkpoint "
        "grid (`mamba_cache_chunk_size`) is the configuration each finding names. "
        "Sliding-window prompts run in one chunk: a chunked request's out-of-window "
        "slots are freed through its own token row, which the driver does not model.",
        "",
        "Promises run: 1 (replay), 2 (junction), 4 (economy, yardstick: the `junction` "
        "policy's promised positions with SGLang's own branching point as the junction), "
        "6 (reconciliation: `device_prefix_len` and `full_kv_hit_length` against the "
        "first-principles oracle on SGLang's own tree, full + Mamba) and 7 (no Mamba "
        "resume without a state written at exactly that prefix, under eviction). Not run: "
        "3 (SGLang has no segments) and 5 (the split is its scheduler's, which the driver "
        "assumes rather than runs).",
        "",
        "### Findings",
        "",
        "| # | finding | promise broken | Mamba chunk | observed on the counterexample |",
        "| --- | --- | --- | --- | --- |",
    ]
    observed = [_observed(f) for f in SGLANG_FINDINGS]
    for number, (finding, (problem, _)) in enumerate(
        zip(SGLANG_FINDINGS, observed, strict=True), 1
    ):
        broken = ", ".join(str(p.number) for p in finding.promises)
        lines.append(
            f"| {number} | {table_cell(finding.title)} | {broken} | "
            f"{finding.mamba_chunk} | {table_cell(problem)} |"
        )
    lines += [
        "",
        "Reconciliation (6) and safety (7) held on every scenario the audit ran, on both "
        "cores: SGLang's lookup equals the oracle on its own tree, and it never resumed "
        "at a prefix without a state tracked there. Every violation the property tests "
        "(`tests/audit/sglang/test_promises.py`) find must be explained by one of these "
        "findings (`audit/sglang/findings.py: diagnose`); an unexplained one fails them.",
        "",
        "### Causes and minimal counterexamples",
        "",
        "Replay one with `check(Scenario.from_json(json.loads(text)), "
        "SglangSubject(TreeCore.RUST, mamba_chunk))` (`junction.audit.sglang.subject`).",
        "",
    ]
    for number, (finding, (_, key)) in enumerate(zip(SGLANG_FINDINGS, observed, strict=True), 1):
        notes = (f"`{finding.key}`", f"diagnosed as `{key}`", f"Mamba chunk {finding.mamba_chunk}")
        lines += counterexample_paragraph(
            number, finding.title, notes, finding.cause, finding.impact, finding.counterexample
        )
    lines += [
        f"### Side by side: vLLM {VLLM_VERSION}, SGLang {PINNED_VERSION}, the `junction` policy",
        "",
        "vLLM and the policy on the configuration vLLM implies for full attention in "
        "2-token blocks and Mamba in 4-token blocks (`R = 0`; partial hits on), SGLang on "
        "its projection (2-token pages, Mamba chunk 4). "
        "Per engine: the last request's hit, the Mamba states kept after the scenario, the "
        "junction the last prompt (before the probe) was admitted with (vLLM's and the "
        "policy's `J`, SGLang's `mamba_branching_seqlen`; 0: none).",
        "",
        "| scenario | vLLM hit / states / junction | SGLang hit / states / junction | "
        "`junction` hit / states / junction |",
        "| --- | --- | --- | --- |",
    ]
    for title, scenario in COMPARED:
        cells = [f"{s.hit} / {s.states} / {s.junction}" for s in side_by_side(scenario)]
        lines.append(f"| {title} | {' | '.join(cells)} |")
    lines += ["", SGLANG_END]
    return "\n".join(lines) + "\n"
