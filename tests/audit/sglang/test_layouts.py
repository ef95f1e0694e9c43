"""``junction hbm --layout sglang``'s arithmetic against SGLang 0.5.23's own functions.

For each catalog hybrid, as SGLang's config classes read the catalog's raw
fields (and with ``mamba_ssm_dtype`` set): a state slot's bytes are its
``mamba2_cache_params.mamba_cache_per_req``, the replay's block its Mamba
chunk (the checkpoint grid at page 1), and at every budget and ratio the
slots and KV tokens are what ``KVCacheConfigurator._handle_max_mamba_cache``
then ``DefaultPoolConfigurator.calculate_pool_sizes`` make of it (called on
stand-ins holding only what they read: no speculative decoding, one
pipeline stage, no fused draft), SGLang refusing to start where the slots
come to none. The least slots a request needs, and the running request's
tracking slots, are ``_calculate_mamba_ratio``'s and
``get_mamba_tracking_slots``' under the cache mode SGLang's default server
arguments resolve to (``_mamba_radix_cache_resolution``).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from junction.audit.sglang.env import publish_server_args, sglang
from junction.reference.replay.layouts import (
    SGLANG_SLOTS_PER_REQUEST,
    SGLANG_TRACKING_SLOTS,
    Layout,
    layout_of,
    sglang_pools,
)
from junction.reference.replay.models import catalog_fields, memory_model

HYBRIDS = ("qwen3-next-80b-a3b", "nemotron-h-8b")
ARCHITECTURES = {"qwen3_next": "Qwen3NextForCausalLM", "nemotron_h": "NemotronHForCausalLM"}
# The checkpoints' config.json files name two fields SGLang's classes read with no
# default, which the catalog files leave to transformers' defaults: Qwen3-Next's
# full_attention_interval (transformers' layer_types: every 4th layer full) and
# Nemotron-H's n_groups (the class's mamba_n_groups, 8).
QWEN3_NEXT_INTERVAL = 4
DTYPES = ({}, {"mamba_ssm_dtype": "bfloat16"}, {"mamba_ssm_dtype": "float16"})
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


def _fields(model: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    return {**catalog_fields(model), **(extra or {})}


def _sglang_config(fields: dict[str, Any]) -> Any:
    """SGLang's config class of a model, built from its raw ``config.json`` fields."""
    family = fields["model_type"]
    if family == "qwen3_next":
        config = importlib.import_module("sglang.srt.configs.qwen3_next").Qwen3NextConfig(**fields)
        if not hasattr(config, "full_attention_interval"):
            config.full_attention_interval = QWEN3_NEXT_INTERVAL
    else:
        module = importlib.import_module("sglang.srt.configs.nemotron_h")
        config = module.NemotronHConfig(**fields)
        if not hasattr(config, "n_groups"):
            config.n_groups = config.mamba_n_groups
    config.architectures = [ARCHITECTURES[family]]
    return config


def _layout(model: str, ratio: float = 0.9, extra: dict[str, str] | None = None) -> Layout:
    fields = _fields(model, extra)
    return layout_of("sglang", memory_model(model, fields), fields, ratio=ratio)


@pytest.mark.parametrize("extra", DTYPES, ids=["config", "bfloat16", "float16"])
@pytest.mark.parametrize("model", HYBRIDS)
def test_a_slot_and_the_grid_are_sglangs(model: str, extra: dict[str, str], context: Any) -> None:
    config = _sglang_config(_fields(model, extra))
    layout = _layout(model, extra=extra)
    assert layout.slot_bytes == config.mamba2_cache_params.mamba_cache_per_req
    assert len(config.mamba2_cache_params.layers) == layout.model.state_layers
    with warnings.catch_warnings():  # FLA's note that Triton is absent on a CPU machine
        warnings.simplefilter("ignore", UserWarning)
        fla = importlib.import_module("sglang.kernels.ops.attention.fla.chunk_delta_h")
    assert layout.block_size == getattr(config, "mamba_chunk_size", fla.CHUNK_SIZE)
    kv_layers = len(config.full_attention_layer_ids)
    assert layout.block_bytes == layout.block_size * layout.model.kv_bytes_per_token * kv_layers


def test_a_bfloat16_qwen3_next_slot_is_sglangs_figure(context: Any) -> None:
    bf16 = {"mamba_ssm_dtype": "bfloat16"}
    config = _sglang_config(_fields("qwen3-next-80b-a3b", bf16))
    assert config.mamba2_cache_params.mamba_cache_per_req == 39_518_208
    assert _layout("qwen3-next-80b-a3b", extra=bf16).slot_bytes == 39_518_208


@pytest.mark.parametrize("model", HYBRIDS)
def test_the_least_slots_are_sglangs_under_its_default_server_args(
    model: str, context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SGLang's default server arguments (overlap schedule, triton linear attention,
    mamba_radix_cache_strategy auto) resolve to extra_buffer for the model; there a
    running request tracks in 2 slots and takes 5 from the pool, and
    ``resolve_max_num_reqs`` serves none with fewer."""
    overrides = importlib.import_module("sglang.srt.arg_groups.overrides")
    base = importlib.import_module("sglang.srt.arg_groups.model_override_base")
    sizing = importlib.import_module("sglang.srt.mem_cache.allocation_sizing")
    configurator = importlib.import_module("sglang.srt.mem_cache.kv_cache_configurator")
    config = _sglang_config(_fields(model))
    defaults = sglang().ServerArgs(model_path="dummy")
    monkeypatch.setattr(
        overrides, "model_config_of", lambda view: SimpleNamespace(hf_config=config)
    )
    resolved = {
        "disable_radix_cache": defaults.disable_radix_cache,
        "disable_overlap_schedule": defaults.disable_overlap_schedule,
        **overrides._mamba_radix_cache_resolution(defaults),
    }
    assert resolved["mamba_radix_cache_strategy"] == "extra_buffer"
    extra = base.mamba_extra_buffer_of(SimpleNamespace(**resolved))
    overlap = not resolved["disable_overlap_schedule"]
    assert sizing.get_mamba_tracking_slots(extra_buffer=extra, overlap=overlap) == (
        SGLANG_TRACKING_SLOTS
    )
    mamba = SimpleNamespace(enable_mamba_extra_buffer=extra, enable_mamba_extra_buffer_lazy=False)
    schedule = SimpleNamespace(
        disable_overlap_schedule=not overlap, max_running_requests=None, max_mamba_cache_size=0
    )
    monkeypatch.setattr(configurator, "get_exec", lambda: SimpleNamespace(mamba=mamba))
    monkeypatch.setattr(configurator, "get_schedule", lambda: schedule)
    monkeypatch.setattr(
        configurator,
        "get_memory",
        lambda: SimpleNamespace(disable_radix_cache=resolved["disable_radix_cache"]),
    )
    sizer = configurator.KVCacheConfigurator
    stand_in = SimpleNamespace(
        mambaish_config=config, model_config=SimpleNamespace(context_len=1 << 18), attn_dp_size=1
    )
    stand_in._calculate_mamba_ratio = lambda: sizer._calculate_mamba_ratio(stand_in)
    assert stand_in._calculate_mamba_ratio() == SGLANG_SLOTS_PER_REQUEST
    for slots in range(1, 3 * SGLANG_SLOTS_PER_REQUEST):
        schedule.max_mamba_cache_size = slots
        if slots < SGLANG_SLOTS_PER_REQUEST:
            with pytest.raises(RuntimeError, match="too small to serve any requests"):
                sizer.resolve_max_num_reqs(stand_in, 1 << 20)
        else:
            assert sizer.resolve_max_num_reqs(stand_in, 1 << 20) == slots // 5


@pytest.mark.parametrize("model", HYBRIDS)
def test_slots_and_tokens_are_sglangs_at_every_budget(model: str, context: Any) -> None:
    configurator = importlib.import_module("sglang.srt.mem_cache.kv_cache_configurator")
    pools = importlib.import_module("sglang.srt.model_executor.pool_configurator")
    params = _sglang_config(_fields(model)).mamba2_cache_params
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
