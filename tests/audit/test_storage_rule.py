"""Where vLLM 0.33.0 can hold a Mamba state under partial hits, and where a next turn resumes.

The case: full attention and Mamba blocks of 528, hash unit 16 (vLLM turns
partial hits on), EAGLE; a request of ``N = 3200`` tokens, prompt and answer,
finishes and its next turn resends it. Full attention alone lands at
``floor_528(3199) - 16 = 3152``; the core and the oracle answer 2640, the
deepest Mamba block end below it. Run on vLLM's own ``Scheduler``, its
storage rule (docs/design/storage-rule.md) decides whose the 512 tokens are:

* vLLM's Mamba lookup finds a state at any hash unit that has one registered,
  but a decode registers states only at Mamba block ends
  (``cache_full_blocks``); hash-unit states only inside the prompt, here its
  tail (``MambaManager._cache_partial_tail_block``). No decode state sits at
  3152: the next turn resumes at the deepest state at or below it.
* That is 2640, the core's answer, when the answer crosses a Mamba block end
  above the prompt's tail; else the prompt's tail, deeper than the core and
  the oracle (every Mamba state on the block grid) answer.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from junction.audit.vllm.scheduler import (
    build_scheduler,
    make_request,
    model_output,
    serve,
    step,
)
from junction.core import GroupSpec, HybridGeometry, decode_checkpoint
from junction.reference.oracle.first_principles import oracle_decode_checkpoint
from junction.upstream.vllm_0_33.env import vllm
from junction.upstream.vllm_0_33.specs import vllm_geometry

BLOCK, UNIT, FINISHED = 528, 16, 3200
FULL_ATTENTION_ALONE = 3152  # floor_528(3199) - 16: six whole blocks, the EAGLE unit dropped
CORE = 2640  # floor_528(3152)

# prompt tokens; the Mamba states vLLM's lookup finds after the request; where its next turn
# resumes. Prefill chunks end at the split's stops (the last cacheable block end, the
# prompt's tail at a hash unit), decode registers every Mamba block end it crosses.
CASES = [
    (2000, (1056, 1984, 2112, 2640, 3168), 2640),
    (2700, (2112, 2672, 3168), 2672),
    (3000, (2112, 2976, 3168), 2976),
    (3170, (2640, 3152, 3168), 3152),
]


@functools.cache
def _geometry(retention_interval: int | None = None) -> HybridGeometry:
    """The case's geometry as vLLM derives it (partial hits on: Mamba's 528 > 16)."""
    groups = [GroupSpec.full(BLOCK), GroupSpec.mamba(BLOCK)]
    return vllm_geometry(groups, UNIT, use_eagle=True, retention_interval=retention_interval)


@pytest.fixture(autouse=True)
def _long_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # The scheduler's stand-in model (OPT) declares 2048 positions; nothing here runs it.
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")


def _finish(prompt: int, retention_interval: int | None = None) -> tuple[Any, list[int]]:
    """vLLM's scheduler after a request of ``prompt`` tokens decoded to ``FINISHED``
    tokens one a step and finished; the request's tokens (prompt and answer)."""
    geometry = _geometry(retention_interval)
    scheduler = build_scheduler(geometry, num_blocks=64, max_model_len=2 * FINISHED)
    tokens = list(range(1000, 1000 + prompt))
    request = make_request("x", tokens, UNIT, FINISHED - prompt)
    serve(scheduler, request, max_steps=2 * FINISHED)
    return scheduler, tokens + list(request.output_token_ids)


def _finders(scheduler: Any) -> tuple[Any, Any, Any]:
    coordinator = scheduler.kv_cache_manager.coordinator
    full, mamba = coordinator.single_type_managers
    return coordinator.block_pool, full, mamba


def _stored(scheduler: Any, tokens: list[int]) -> list[int]:
    """Every position vLLM's own Mamba lookup finds a state at: its finder asked
    at each hash unit (no drop: Mamba has none), the hit it lands on collected."""
    pool, _, mamba = _finders(scheduler)
    hashes = make_request("probe", tokens, UNIT, 1).block_hashes
    found = set()
    for bound in range(UNIT, len(tokens) + 1, UNIT):
        _, hit = type(mamba).find_longest_cache_hit(
            hashes, bound, [1], pool, mamba.kv_cache_spec, False, UNIT
        )
        found.add(int(hit))
    return sorted(found - {0})


def _full_attention_alone(scheduler: Any, tokens: list[int]) -> int:
    pool, full, _ = _finders(scheduler)
    hashes = make_request("probe", tokens, UNIT, 1).block_hashes
    _, hit = type(full).find_longest_cache_hit(
        hashes, len(tokens) - 1, [0], pool, full.kv_cache_spec, True, UNIT
    )
    return int(hit)


def _looked_up(scheduler: Any, tokens: list[int], name: str) -> int:
    """vLLM's admission lookup (``get_computed_blocks``) for ``tokens``, admitting nothing."""
    request = make_request(name, tokens, UNIT, 1)
    return int(scheduler.kv_cache_manager.get_computed_blocks(request)[1])


def _admitted(scheduler: Any, tokens: list[int], name: str) -> int:
    """Admit ``tokens`` as a new request in one ``schedule()``: the hit it resumes at."""
    request = make_request(name, tokens, UNIT, 1)
    scheduler.add_request(request)
    scheduled = scheduler.schedule()
    hit = request.num_computed_tokens - scheduled.num_scheduled_tokens[name]
    scheduler.update_from_output(scheduled, model_output(scheduled, scheduler))
    while scheduler.requests:
        step(scheduler)
    return int(hit)


@pytest.mark.parametrize(("prompt", "stored", "resumes"), CASES)
def test_the_next_turn_resumes_where_vllm_stored_a_state(
    prompt: int, stored: tuple[int, ...], resumes: int
) -> None:
    scheduler, tokens = _finish(prompt)
    assert len(tokens) == FINISHED
    tail = vllm().interface.get_mamba_prefill_checkpoint_position(prompt, UNIT, True)

    # The storage rule: every state on the Mamba block but the prompt's tail at a hash
    # unit; past the prompt, exactly the block ends the decode crossed (3199 computed).
    assert tuple(_stored(scheduler, tokens)) == stored
    assert tail in stored and tail % BLOCK != 0
    assert all(at % BLOCK == 0 for at in stored if at != tail)
    crossed = range(BLOCK * (prompt // BLOCK + 1), FINISHED, BLOCK)
    assert [at for at in stored if at > prompt] == list(crossed)

    # The lookup: full attention alone lands at 3152, where no decode state can be,
    # so the next turn (with new text, or the exact resend, looked up and then
    # admitted by the scheduler) resumes at the deepest stored state at or below it.
    assert _full_attention_alone(scheduler, tokens) == FULL_ATTENTION_ALONE
    assert resumes == max(at for at in stored if at <= FULL_ATTENTION_ALONE)
    assert _looked_up(scheduler, tokens + list(range(5000, 5100)), "new text") == resumes
    assert _looked_up(scheduler, tokens, "resend") == resumes
    assert _admitted(scheduler, tokens, "next turn") == resumes


def test_under_sparse_retention_no_decode_state_is_kept() -> None:
    """``R = 0``: vLLM's Mamba mask keeps the prompt's replay boundaries only, so the
    decode's block ends go uncached and the next turn resumes at the prompt's tail."""
    scheduler, tokens = _finish(2000, retention_interval=0)
    assert _stored(scheduler, tokens) == [1056, 1984]
    assert _looked_up(scheduler, tokens, "resend") == 1984


def test_the_core_and_the_oracle_answer_the_block_grid() -> None:
    """Both put every Mamba state on the block grid: 2640, vLLM's answer when the
    answer crosses a block end above the prompt's tail (prompt 2000), below it
    when the prompt's tail is the deepest state (docs/design/storage-rule.md)."""
    geometry = _geometry()
    groups = [(g.kind.value, g.block_size, g.window, g.eagle_group) for g in geometry.groups]
    assert geometry.partial_hits and geometry.hit_grid_tokens == BLOCK
    assert decode_checkpoint(geometry, FINISHED) == CORE
    assert oracle_decode_checkpoint(groups, UNIT, UNIT, True, FINISHED) == CORE
    by_prompt = {prompt: resumes for prompt, _, resumes in CASES}
    assert by_prompt[2000] == CORE
    assert FULL_ATTENTION_ALONE - CORE == 512  # recomputed each turn, on vLLM too
    deeper = {prompt: resumes - CORE for prompt, resumes in by_prompt.items()}
    assert deeper == {2000: 0, 2700: 32, 3000: 336, 3170: 512}
