"""What ``audit.sglang.cache`` assumes of SGLang's scheduler, and how the adapter reads
SGLang's answers, checked against SGLang's own code on both tree cores.

* the two tree cores give the same answer to every lookup of a run;
* SGLang's junction: ``mamba_branching_seqlen`` is the project's junction
  (``core.reconcile_hits`` on the same cache) floored to the checkpoint grid,
  when that passes the hit;
* every state a chunk tracked (SGLang's ``prepare_for_extend`` named it) is
  served by ``match_prefix`` at exactly that prefix, and no full-attention KV
  past the last tracked state is cached (``checkpoint_into_tree`` inserts up
  to the state only);
* the chunks: the rest of the prompt when it fits the budget, else the budget
  floored to the page, ending on a page, even off the Mamba checkpoint grid
  (without DCP ``PrefillAdder.floor_chunked_tokens`` leaves the cut); a budget
  under a page never schedules the prompt (``PrefillAdder``'s truncation);
* bad input: geometries SGLang cannot express, a chunk off the page, a
  missing or different SGLang, each named.
"""

from __future__ import annotations

import importlib.metadata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from junction.audit.sglang import env
from junction.audit.sglang.cache import SglangCache, TreeCore, Unsupported, layout_of
from junction.audit.sglang.subject import SglangSubject
from junction.core import GroupLookup, GroupSpec, HybridGeometry, reconcile_hits
from junction.reference.harness import RequestState, Scenario

from ..strategies import examples

_tokens = st.lists(st.integers(0, 3), min_size=1, max_size=40).map(tuple)


@st.composite
def runs(draw: st.DrawFn) -> tuple[HybridGeometry, int, int, list[tuple[int, ...]]]:
    """A full + Mamba geometry, its Mamba chunk, a budget and prompts sharing prefixes."""
    page = draw(st.sampled_from([1, 2, 4]))
    chunk = page * draw(st.sampled_from([1, 2, 4]))
    base = draw(_tokens)
    prompts = [(*base[: draw(st.integers(0, len(base)))], *draw(_tokens)) for _ in range(3)]
    geometry = HybridGeometry([GroupSpec.full(page), GroupSpec.mamba(page)], page)
    return geometry, chunk, draw(st.integers(1, 24)), prompts


def _prefill_all(
    geometry: HybridGeometry, chunk: int, budget: int, prompts: list[tuple[int, ...]]
) -> dict[TreeCore, SglangCache]:
    caches = {core: SglangCache(geometry, core, 512, chunk) for core in TreeCore}
    for cache in caches.values():
        for prompt in prompts:
            cache.prefill(prompt, budget)
        for prompt in prompts:
            cache.admit(prompt)
    return caches


@settings(max_examples=examples(0.3))
@given(runs())
def test_both_cores_give_the_same_lookups_and_states(
    drawn: tuple[HybridGeometry, int, int, list[tuple[int, ...]]],
) -> None:
    caches = _prefill_all(*drawn)
    python, rust = caches[TreeCore.PYTHON], caches[TreeCore.RUST]
    assert python.admissions == rust.admissions
    assert python.prefills == rust.prefills


@settings(max_examples=examples(0.3))
@given(runs())
def test_the_branching_point_is_the_projects_junction_floored_to_the_chunk(
    drawn: tuple[HybridGeometry, int, int, list[tuple[int, ...]]],
) -> None:
    """SGLang's ``mamba_branching_seqlen`` against the junction ``core.reconcile_hits``
    finds on the same cache (what the ``junction`` policy would pin), for every prompt."""
    geometry, chunk, budget, prompts = drawn
    *earlier, probe = prompts
    run = SglangSubject(TreeCore.RUST, chunk).run(
        Scenario("junction", geometry, earlier, probe, budget)
    )
    lookups = [GroupLookup(group, geometry.alignment_tokens) for group in geometry.groups]
    for prompt in prompts:
        full, mamba = (set(group.cached) for group in run.cached_sets(prompt))
        finders = [lookups[0].finder(full.__contains__), lookups[1].finder(mamba.__contains__)]
        ours = reconcile_hits(geometry, finders, len(prompt) - 1)
        admission = run.cache.admit(prompt)
        assert admission.hit == ours.hit_length
        floored = ours.shared_prefix_boundary // chunk * chunk
        assert admission.branching == (floored if floored > ours.hit_length else None)


@settings(max_examples=examples(0.3))
@given(runs())
def test_tracked_states_are_served_and_no_kv_past_the_last_is_cached(
    drawn: tuple[HybridGeometry, int, int, list[tuple[int, ...]]],
) -> None:
    geometry, chunk, budget, prompts = drawn
    for cache in _prefill_all(geometry, chunk, budget, prompts).values():
        for run in cache.prefills:
            for tracked in run.tracked:
                assert cache.match(run.tokens[:tracked]).device_prefix_len == tracked
    for prompt in prompts:  # alone in a cache, a prompt's KV ends at its last state
        alone = SglangCache(geometry, TreeCore.RUST, 512, chunk)
        run = alone.prefill(prompt, budget)
        assert alone.match(prompt).full_kv_hit_length == max(run.tracked, default=0)


@settings(max_examples=examples(0.3))
@given(
    st.sampled_from([1, 2, 4]),
    st.sampled_from([1, 2, 4]),
    st.integers(1, 60),
    st.integers(1, 20),
)
def test_chunks_are_page_floored_budgets(page: int, pages: int, prompt: int, budget: int) -> None:
    geometry = HybridGeometry([GroupSpec.full(page), GroupSpec.mamba(page)], page)
    scenario = Scenario("split", geometry, [tuple(range(prompt))], budget=budget)
    subject_run = SglangSubject(TreeCore.RUST, page * pages).run(scenario)
    (run,) = subject_run.cache.prefills
    ends = [end for _, end in run.chunks]
    for start, end in run.chunks:  # the protocol's split is the driver's chunk
        request = RequestState(prompt, prompt, start, 0)
        assert subject_run.split(request, prompt - start, budget) == end - start
    if budget < page and prompt > budget:
        assert run.stalled and not run.chunks
        return
    assert not run.stalled and ends[-1] == prompt
    for start, end in run.chunks:
        assert 0 < end - start <= budget
        # A cut is the page-floored budget, even off the Mamba grid (page * pages).
        assert end == prompt or end - start == budget // page * page


def test_a_sliding_window_resend_hits_all_but_the_last_token() -> None:
    geometry = HybridGeometry([GroupSpec.full(1), GroupSpec.sliding_window(1, 3)], 1)
    prompt = tuple(range(12))
    for core in TreeCore:
        cache = SglangCache(geometry, core, 100, 1)
        cache.prefill(prompt, 12)
        assert cache.admit(prompt).hit == 11
        assert cache.admit((*prompt[:6], 99, 98)).hit == 6
        with pytest.raises(Unsupported, match=r"^budget=4 chunks a 9-token sliding-window"):
            cache.prefill((*prompt[:3], 7, 7, 7, 7, 7, 7), 4)


@pytest.mark.parametrize(
    ("geometry", "message"),
    [
        (
            HybridGeometry([GroupSpec.full(2), GroupSpec.mamba(4)], 2),
            "blocks [2, 4], hash_block_size=2: SGLang's tree has one page for every component",
        ),
        (
            HybridGeometry([GroupSpec.full(2)], 2),
            "groups=(<GroupKind.FULL: 'full'>,): SGLang audits full + Mamba or full + sliding",
        ),
        (
            HybridGeometry([GroupSpec.full(2), GroupSpec.sliding_window(2, 4)], 2),
            "page 2: SGLang's sliding-window allocator pages by one token",
        ),
        (
            HybridGeometry([GroupSpec.full(2), GroupSpec.mamba(2)], 2, use_eagle=True),
            "use_eagle/partial_hits: not modelled for SGLang",
        ),
    ],
    ids=["blocks", "groups", "window-page", "eagle"],
)
def test_a_geometry_sglang_cannot_express_is_named(geometry: HybridGeometry, message: str) -> None:
    with pytest.raises(Unsupported) as raised:
        layout_of(geometry)
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize("chunk", [0, 3])
def test_a_mamba_chunk_off_the_page_is_refused(chunk: int) -> None:
    geometry = HybridGeometry([GroupSpec.full(2), GroupSpec.mamba(2)], 2)
    with pytest.raises(ValueError, match=f"^mamba_chunk={chunk}: must be a positive multiple"):
        SglangCache(geometry, TreeCore.RUST, 8, chunk)


def test_a_missing_or_different_sglang_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(env.importlib.metadata, "version", missing)
    assert env.sglang_missing_reason() == (
        "SGLang 0.5.23 is not installed (run `make audit-sglang-setup`: "
        "the `audit-sglang` extra, installed with --no-deps)"
    )
    with pytest.raises(env.SglangMissing, match=r"SGLang 0\.5\.23 is not installed"):
        env.sglang.__wrapped__()
    monkeypatch.setattr(env.importlib.metadata, "version", lambda name: "0.5.22")
    with pytest.raises(RuntimeError, match=r"written against SGLang 0\.5\.23, found 0\.5\.22"):
        env.sglang.__wrapped__()
