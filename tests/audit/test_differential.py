"""Differential: the ``vllm-0.33`` policy against vLLM 0.33.0's own functions.

Two levels, both on random inputs:

* function by function on identical arguments: ``reachable_block_mask`` of
  ``SlidingWindowManager`` / ``MambaManager`` (real specs) against the policy's
  ``block_mask``, and ``Scheduler._mamba_block_aligned_split`` (stand-in
  scheduler, real ``Request``) against the policy's ``split``, with the
  split's three settings (lookahead hashes, the exact shared-prefix stop,
  internal prefill checkpoints) drawn too;
* inside real runs of vLLM's ``KVCacheManager`` (``audit.vllm.engine``): every
  mask call its caching path made, with the boundaries *it* computed, must
  equal the policy's ``reachable_boundaries`` and ``block_mask`` for that
  request, and every split the policy's ``split``.

Any disagreement is a bug in one of the two: ours is fixed in
``reference/vllm_policies.py``; vLLM's goes to docs/findings.md.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from junction.audit.vllm.engine import RequestState
from junction.audit.vllm.masks import vllm_block_mask
from junction.audit.vllm.split import vllm_split
from junction.core import GroupKind, HybridGeometry
from junction.reference.policies.vllm import VllmPolicy
from junction.upstream.vllm_0_33.scheduler import VllmSplitOptions

from .strategies import (
    PromptRun,
    examples,
    has_mamba,
    prompt_runs,
    request_states,
    vllm_geometries,
)

POLICY = VllmPolicy()


@settings(max_examples=examples(1.0))
@given(st.data())
def test_mask_equals_vllm(data: st.DataObject) -> None:
    geometry = data.draw(vllm_geometries())
    group = data.draw(st.sampled_from([g for g in geometry.groups if g.kind is not GroupKind.FULL]))
    state = data.draw(request_states(geometry))
    request = RequestState(
        state["num_prompt_tokens"], state["num_tokens"], 0, state["shared_prefix_boundary"]
    )
    start = data.draw(st.integers(0, 12))
    end = data.draw(st.integers(start, start + 24))
    boundaries = POLICY.reachable_boundaries(geometry, group, request)
    ours = POLICY.block_mask(geometry, group, request, start, end, boundaries)
    theirs = vllm_block_mask(geometry, group, start, end, boundaries)
    assert (None if ours is None else list(ours)) == theirs, (geometry, group, request, start, end)


@settings(max_examples=examples(1.0))
@given(st.data())
def test_split_equals_vllm(data: st.DataObject) -> None:
    geometry = data.draw(vllm_geometries(need="mamba"))
    state = data.draw(request_states(geometry))
    total = state["num_tokens"]
    computed = data.draw(st.integers(0, total))
    budget = data.draw(st.integers(1, 3 * geometry.scheduler_block_size))
    threshold = data.draw(st.one_of(st.just(0), st.integers(1, 3 * geometry.scheduler_block_size)))
    wanted = data.draw(st.integers(0, total - computed + 2))
    request = RequestState(
        state["num_prompt_tokens"], total, computed, state["shared_prefix_boundary"]
    )
    limit = min(budget, threshold) if threshold else budget
    options = data.draw(split_options(geometry))
    ours = VllmPolicy(options).split(geometry, request, wanted, limit)
    theirs = vllm_split(
        geometry,
        num_prompt_tokens=request.num_prompt_tokens,
        num_tokens=total,
        num_computed_tokens=computed,
        shared_prefix_boundary=request.shared_prefix_boundary,
        num_new_tokens=wanted,
        max_num_scheduled_tokens=budget,
        long_prefill_token_threshold=threshold,
        options=options,
    )
    assert ours == theirs, (geometry, request, wanted, budget, threshold, options)


def split_options(geometry: HybridGeometry) -> st.SearchStrategy[VllmSplitOptions]:
    """vLLM's split settings: mostly its defaults, else each drawn (tiles on the
    hash unit, the block, or a width that seldom fits)."""
    unit = geometry.hash_block_size
    return st.one_of(
        st.just(VllmSplitOptions()),
        st.builds(
            VllmSplitOptions,
            st.one_of(st.just(0), st.integers(0, 2 * geometry.scheduler_block_size)),
            st.booleans(),
            st.one_of(st.none(), st.sampled_from([1, unit, geometry.mamba_block_size, 3])),
        ),
    )


@settings(max_examples=examples(0.6))
@given(prompt_runs())
def test_real_runs_make_the_policys_decisions(run: PromptRun) -> None:
    geometry = run.geometry
    engine = run.on_vllm(lookups=False)
    assert bool(engine.split_calls) == has_mamba(geometry)  # the split runs in align mode
    for call in engine.mask_calls:
        group = geometry.groups[call.group_id]
        assert call.alignment_tokens == geometry.alignment_tokens
        assert call.use_eagle == group.eagle_lookup(geometry.use_eagle)
        assert call.retention_interval == geometry.retention_interval
        boundaries = POLICY.reachable_boundaries(geometry, group, call.request)
        assert boundaries == tuple(x for x in call.boundaries if x >= 0), (group, call)
        mask = POLICY.block_mask(
            geometry, group, call.request, call.start_block, call.end_block, boundaries
        )
        assert (None if mask is None else tuple(mask)) == call.answer, (group, call)
    for split in engine.split_calls:
        state = split.request
        start = state.num_computed_tokens + split.num_new_local_computed_tokens
        request = RequestState(
            state.num_prompt_tokens, state.num_tokens, start, state.shared_prefix_boundary
        )
        limit = split.max_num_scheduled_tokens
        if split.long_prefill_token_threshold:
            limit = min(limit, split.long_prefill_token_threshold)
        assert POLICY.split(geometry, request, split.num_new_tokens, limit) == split.answer, split
