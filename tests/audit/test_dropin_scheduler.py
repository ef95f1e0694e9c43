"""The drop-in inside vLLM 0.33.0's real ``Scheduler``: the minimal cases that crashed it.

With partial hash hits and a full-attention block wider than the hash unit,
the core proves a hash unit from any registration inside its block within the
request's hashed chain (a resend's partial tail registered past the unit), while
vLLM's own lookup reads only up to its bound. The drop-in must hand vLLM the
very block that registration names: ``schedule()`` raised
``RuntimeError: group 0: block 0 of a core hit is not cached`` when its block
collection looked only as far as vLLM's lookup reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from junction import dropin
from junction.audit.vllm.scheduler import build_scheduler, make_request, serve
from junction.core import GroupSpec, HybridGeometry
from junction.upstream.vllm_0_33.env import vllm
from junction.upstream.vllm_0_33.specs import vllm_geometry

PROMPT = tuple(range(100, 140))  # 40 tokens: two hash units and a partial one


@pytest.fixture(params=[False, True], ids=["vllm", "dropin"])
def swapped(request: pytest.FixtureRequest) -> Iterator[bool]:
    if not request.param:
        yield False
        return
    with dropin.swapped_in():
        yield True


def _hit(scheduler: Any, tokens: tuple[int, ...], unit: int) -> tuple[Any, int]:
    """Admit a request for ``tokens`` in one ``schedule()``; return it and its hit."""
    request = make_request("probe", tokens, unit, 1)
    scheduler.add_request(request)
    scheduled = scheduler.schedule()
    return request, request.num_computed_tokens - scheduled.num_scheduled_tokens["probe"]


def _holds_the_hit(scheduler: Any, request: Any, geometry: HybridGeometry, hit: int) -> None:
    """Each full-attention block the request resumed on is registered under a
    unit of its own block at or past the hit's last unit in it (so it holds
    the hit's KV), as the core's covered reading proved."""
    unit, size = geometry.hash_block_size, geometry.groups[0].block_size
    scale = size // unit
    manager = scheduler.kv_cache_manager.coordinator.single_type_managers[0]
    blocks = manager.req_to_blocks[request.request_id]
    for index in range(-(-hit // size)):
        key = blocks[index].block_hash
        assert key is not None, index
        own = range(index * scale, min((index + 1) * scale, len(request.block_hashes)))
        held = [k for k in own if request.block_hashes[k] == vllm().utils.get_block_hash(key)]
        assert held, index
        assert held[0] >= min((index + 1) * scale, hit // unit) - 1, (index, held)


def test_partial_hits_with_eagle_on_the_draft_group_only(swapped: bool) -> None:
    # Blocks of 64, hash unit 16, EAGLE on the Mamba (draft) group only: the
    # 40-token prompt's EAGLE chunk end leaves a Mamba state at 16 and its
    # full-attention partial tail registered at unit 1 (tokens [0, 32)), which
    # a 32-token prefix's full attention (no drop, bound 31) never reads.
    geometry = vllm_geometry(
        [GroupSpec.full(64, eagle_group=False), GroupSpec.mamba(64, eagle_group=True)],
        16,
        use_eagle=True,
    )
    assert geometry.partial_hits
    scheduler = build_scheduler(geometry, num_blocks=64)
    serve(scheduler, make_request("x", PROMPT, 16, 1))
    request, hit = _hit(scheduler, PROMPT[:32], 16)
    assert hit == (16 if swapped else 0)  # vLLM misses it: finding 11
    _holds_the_hit(scheduler, request, geometry, hit)


def test_partial_hits_after_one_eviction(swapped: bool) -> None:
    # The same blocks without EAGLE: a 20-token prefix of the prompt leaves a
    # Mamba state at 16 and a full-attention partial tail at unit 0; evicting
    # that block leaves the 40-token prompt's registration at unit 1 the only
    # one holding unit 0.
    geometry = vllm_geometry([GroupSpec.full(64), GroupSpec.mamba(64)], 16)
    assert geometry.partial_hits
    scheduler = build_scheduler(geometry, num_blocks=64)
    serve(scheduler, make_request("x", PROMPT, 16, 1))
    shorter = make_request("y", PROMPT[:20], 16, 1)
    serve(scheduler, shorter)
    pool = scheduler.kv_cache_manager.block_pool
    [evicted] = pool.get_cached_block(shorter.block_hashes[0], [0])
    pool.evict_blocks({evicted.block_id})
    request, hit = _hit(scheduler, PROMPT[:32], 16)
    assert hit == (16 if swapped else 0)  # vLLM misses it: finding 11
    _holds_the_hit(scheduler, request, geometry, hit)
