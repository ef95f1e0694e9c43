"""vLLM 0.33.0's Mooncake store connector takes no Mamba state past the prefill's end.

docs/design/decode-checkpoints-in-tier.md relies on it: a decode checkpoint's
state never reaches the store through this connector, so the tier's
``decode_checkpoints`` option models no path vLLM 0.33.0 has here.

* ``MooncakeStoreScheduler._handle_boundary_state_offloads`` drops a
  boundary state past ``prefill_end_tokens`` ("a mamba-only key past it can
  never complete a joint hybrid hit"); ``register_finished_partial_tail``
  refuses a finish-time tail past it likewise.
* The finish-time tail itself (``MambaManager.finalize_partial_tail_offload``)
  exists only with no token in flight and the computed tokens at its
  boundary: under async scheduling a finish with a step in flight saves none.

The methods run on stand-ins for the objects they read (the connector's
trackers, the manager's tails), not on a running engine.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

from junction.upstream.vllm_0_33.env import vllm

PREFILL_END, MAMBA_GROUP, STORE_GROUP = 3000, 1, 0


def _module(name: str) -> Any:
    vllm()  # the pinned version, or the audit's error
    return importlib.import_module(f"vllm.{name}")


def _connector() -> Any:
    """The fields of a ``MooncakeStoreScheduler`` the two methods read, one request tracked."""
    tracker = SimpleNamespace(prefill_end_tokens=PREFILL_END, has_pending_offload=False)
    return SimpleNamespace(
        kv_role="kv_producer",
        _request_trackers={"r": tracker},
        _unfinished_requests={"r": (SimpleNamespace(),)},
        _store_group_id_by_kv_cache_group_id={MAMBA_GROUP: STORE_GROUP},
        _boundary_state_group_ids={STORE_GROUP},
    )


def test_a_boundary_state_past_the_prefill_end_is_not_stored() -> None:
    scheduler = _module("distributed.kv_transfer.kv_connector.v1.mooncake.store.scheduler")
    save = SimpleNamespace(req_id="r", can_save=True, boundary_puts=[])
    meta = SimpleNamespace(requests=[save])
    # The prompt's state at 2112, a decode state at 3168 (past the prefill's end).
    offloads = {"r": [(MAMBA_GROUP, 7, 2112), (MAMBA_GROUP, 8, 3168)]}
    scheduler.MooncakeStoreScheduler._handle_boundary_state_offloads(_connector(), offloads, meta)
    assert [put.num_tokens for put in save.boundary_puts] == [2112]


def test_a_finish_time_tail_past_the_prefill_end_is_refused() -> None:
    scheduler = _module("distributed.kv_transfer.kv_connector.v1.mooncake.store.scheduler")
    register = scheduler.MooncakeStoreScheduler.register_finished_partial_tail
    request = SimpleNamespace(request_id="r")
    tail = [(MAMBA_GROUP, 8, PREFILL_END + 16)]
    assert register(_connector(), request, ([1], [8]), tail) is False


def test_the_finish_time_tail_needs_no_token_in_flight() -> None:
    manager = _module("v1.core.single_type_kv_cache_manager").MambaManager
    block = object()

    def finalize(computed: int, in_flight: int) -> Any:
        fake = SimpleNamespace(
            mamba_cache_mode="align",
            kv_cache_group_id=MAMBA_GROUP,
            _producer_partial_tail_reqs={"r": (block, PREFILL_END)},
        )
        return manager.finalize_partial_tail_offload(fake, "r", computed, in_flight)

    assert finalize(PREFILL_END, 0) == (MAMBA_GROUP, block, PREFILL_END)
    assert finalize(PREFILL_END, 1) is None  # a step in flight (async scheduling)
    assert finalize(PREFILL_END + 1, 0) is None  # a token computed past the tail
