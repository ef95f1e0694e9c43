"""``junction hbm --layout sglang``'s arithmetic against SGLang 0.5.23's own functions.

For each catalog hybrid, as SGLang's config classes read it (built from the
fields the replay resolved): a state slot's bytes are its
``mamba2_cache_params.mamba_cache_per_req``, the replay's block its Mamba
chunk (the checkpoint grid at page 1), and at every budget and ratio the
slots and KV tokens are what ``KVCacheConfigurator._handle_max_mamba_cache``
then ``DefaultPoolConfigurator.calculate_pool_sizes`` make of it (called on
stand-ins holding only what they read: no speculative decoding, one
pipeline stage, no fused draft), SGLang refusing to start where the slots
come to none.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from junction.audit.sglang.env import publish_server_args, sglang
from junction.reference.replay.config_fields import GatedDeltaNetState, Mamba2State
from junction.reference.replay.configs import read_config
from junction.reference.replay.layouts import Layout, layout_of, sglang_pools
from junction.reference.replay.models import catalog_fields, memory_model

HYBRIDS = ("qwen3-next-80b-a3b", "nemotron-h-8b")
BUDGETS = (8, 16, 32, 64, 128, 256, 512, 1024, 0.75, 37.3)
RATIOS = (0.9, 0.1, 0.5, 3.0)


@pytest.fixture(scope="module")
def context() -> Iterator[Any]:
    """SGLang's scheduler context at page 1; the two fields the calculator reads
    and writes restored after."""
    sglang()
    publish_server_args(1, 64, -1)
    runtime = importlib.import_module("sglang.srt.runtime_context")
    schedule = runtime.get_schedule()
    saved = (schedule.mamba_full_memory_ratio, schedule.max_mamba_cache_size)
    yield runtime
    runtime.get_context().override(
        "junction.test_layouts", mamba_full_memory_ratio=saved[0], max_mamba_cache_size=saved[1]
    )


def _sglang_config(model: str) -> Any:
    """SGLang's config class of ``model``, given the sizes the replay resolved."""
    shape = read_config(model, catalog_fields(model))
    state = shape.state
    if isinstance(state, GatedDeltaNetState):
        config = importlib.import_module("sglang.srt.configs.qwen3_next").Qwen3NextConfig(
            num_hidden_layers=len(shape.layer_types),
            num_key_value_heads=shape.kv_heads,
            head_dim=shape.head_dim,
            linear_conv_kernel_dim=state.conv_kernel,
            linear_num_key_heads=state.key_heads,
            linear_num_value_heads=state.value_heads,
            linear_key_head_dim=state.key_dim,
            linear_value_head_dim=state.value_dim,
        )
        config.full_attention_interval = shape.layer_types.index("full_attention") + 1
        full = [i for i, kind in enumerate(shape.layer_types) if kind == "full_attention"]
        assert config.full_attention_layer_ids == full
        return config
    assert isinstance(state, Mamba2State)
    pattern = catalog_fields(model)["hybrid_override_pattern"]
    return importlib.import_module("sglang.srt.configs.nemotron_h").NemotronHConfig(
        hybrid_override_pattern=pattern,
        num_key_value_heads=shape.kv_heads,
        head_dim=shape.head_dim,
        mamba_num_heads=state.heads,
        mamba_head_dim=state.head_dim,
        mamba_n_groups=state.groups,
        n_groups=state.groups,  # what its mamba2_cache_params reads, as config.json names it
        ssm_state_size=state.state_size,
        mamba_d_conv=state.conv_kernel,
    )


def _layout(model: str, ratio: float = 0.9) -> Layout:
    fields = catalog_fields(model)
    return layout_of("sglang", memory_model(model, fields), fields, ratio=ratio)


@pytest.mark.parametrize("model", HYBRIDS)
def test_a_slot_and_the_grid_are_sglangs(model: str, context: Any) -> None:
    config = _sglang_config(model)
    layout = _layout(model)
    assert layout.slot_bytes == config.mamba2_cache_params.mamba_cache_per_req
    assert len(config.mamba2_cache_params.layers) == layout.model.state_layers
    assert layout.block_size == getattr(config, "mamba_chunk_size", 64)
    kv_layers = len(config.full_attention_layer_ids)
    assert layout.block_bytes == layout.block_size * layout.model.kv_bytes_per_token * kv_layers


@pytest.mark.parametrize("model", HYBRIDS)
def test_slots_and_tokens_are_sglangs_at_every_budget(model: str, context: Any) -> None:
    configurator = importlib.import_module("sglang.srt.mem_cache.kv_cache_configurator")
    pools = importlib.import_module("sglang.srt.model_executor.pool_configurator")
    params = _sglang_config(model).mamba2_cache_params
    runner = SimpleNamespace(
        mambaish_config=SimpleNamespace(mamba2_cache_params=params),
        pp_size=1,
        fused_entry_bytes=lambda name: None,
        spec_algorithm=SimpleNamespace(is_none=lambda: True),
        hybrid_gdn_config=None,
        hybrid_kda_config=None,
        extra_mamba_cache_bytes_per_req=0,
        attn_dp_size=1,
    )
    for ratio in RATIOS:
        layout = _layout(model, ratio)
        cell = layout.block_bytes // layout.block_size
        sizer = SimpleNamespace(_fixed_overhead_bytes=0, _cell_size=cell, _zero_kv_max_tokens=0)
        for gib in BUDGETS:
            context.get_context().override(
                "junction.test_layouts", mamba_full_memory_ratio=ratio, max_mamba_cache_size=None
            )
            handle = configurator.KVCacheConfigurator._handle_max_mamba_cache
            ours = sglang_pools(gib, layout.slot_bytes, cell, ratio)
            if ours[0] <= 0:  # SGLang refuses to start
                with pytest.raises(RuntimeError, match="Not enough GPU memory"):
                    handle(runner, float(gib))
                continue
            rest = handle(runner, float(gib))
            slots = context.get_schedule().max_mamba_cache_size
            tokens = pools.DefaultPoolConfigurator.calculate_pool_sizes(
                sizer, int(rest * (1 << 30)), 1
            ).max_total_num_tokens
            assert ours == (slots, tokens)
            assert layout.pools(gib).state_slots == slots, (ratio, gib)
