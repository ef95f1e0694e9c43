"""The memory model: the catalog, a user's config.json, malformed ones, and vLLM 0.33.0.

Where vLLM is installed (the audit extra) each catalog model's state bytes
come from vLLM's own state calculators, its block from vLLM's
``_align_hybrid_block_size`` (the presets' audit, ``tests/audit/test_presets.py``)
and its groups and block bytes from vLLM's grouping of per-layer specs.
"""

from __future__ import annotations

import json
import os
import types
from pathlib import Path
from typing import Any

import pytest

from junction.command import dispatch as main
from junction.reference.replay.models import (
    CATALOG,
    GIB,
    MemoryModel,
    ModelConfigError,
    catalog_model,
    load_model_config,
)
from junction.reference.simulator.geometries import PRESETS

PRESET_MODELS = {
    "qwen3-next": "qwen3-next-80b-a3b",
    "nemotron-h": "nemotron-h-8b",
    "gpt-oss": "gpt-oss-120b",
    "gemma3": "gemma-3-27b",
}


def test_the_catalog_has_hybrid_and_attention_only_models() -> None:
    models = [catalog_model(name) for name in CATALOG]
    assert len(models) >= 8
    assert any(m.state_layers for m in models) and any(m.window_layers for m in models)
    assert any(not m.state_layers and not m.window_layers for m in models)


@pytest.mark.parametrize("preset", sorted(PRESET_MODELS))
def test_a_preset_family_has_the_presets_block(preset: str) -> None:
    model = catalog_model(PRESET_MODELS[preset])
    assert {g.block_size for g in model.groups()} == {g.block_size for g in PRESETS[preset].groups}
    assert {g.kind for g in model.groups()} == {g.kind for g in PRESETS[preset].groups}


def test_qwen3_next_by_hand() -> None:
    """12 gated attention layers (2 KV heads x 256) and 36 Gated DeltaNet layers."""
    model = catalog_model("qwen3-next-80b-a3b")
    assert model.kv_bytes_per_token == 2 * 2 * 256 * 2
    assert model.state_bytes == 2 * (3 * (2 * 16 * 128 + 32 * 128) + 32 * 128 * 128)
    assert model.block_size == 544  # 16 x cdiv(1,097,728, 16 x 2,048)
    assert model.group_counts() == (1, 0, 3)
    assert model.blocks(8) == 8 * GIB // (12 * 544 * 2048)


def test_a_config_of_your_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    fields = {
        "model_type": "qwen3",
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "hidden_size": 2048,
    }
    config.write_text(json.dumps(fields))
    model = load_model_config(config)
    assert (model.full_layers, model.kv_bytes_per_token) == (28, 2 * 8 * 128 * 2)
    argv = ["hbm", "--model-config", str(config), "--hbm", "1,4", "--requests", "20"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (
        "1 GiB = 585 blocks" in out
    )  # 2**30 // (28 layers x 16 tokens x 4,096 B) and "hit rate, lru eviction; pool in GiB" in out


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"model_type": "llama", "num_key_value_heads": "eight"}, "num_key_value_heads"),
        ({"num_hidden_layers": 4}, "model_type"),
        ({"model_type": "no-such-family"}, "model_type"),
        ({"model_type": "llama", "dtype": "int3"}, "dtype"),
        ({"model_type": "gpt_oss", "num_hidden_layers": 3, "sliding_window": 0}, "sliding_window"),
    ],
)
def test_a_malformed_config_is_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fields: dict[str, Any], field: str
) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(fields))
    with pytest.raises(ModelConfigError) as raised:
        load_model_config(config)
    assert raised.value.field == field
    assert main(["hbm", "--model-config", str(config), "--requests", "1"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f": {field}: " in error


def test_a_file_that_is_not_json(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text("{not json")
    with pytest.raises(ModelConfigError, match=r"config.json: json: .* at line 1"):
        load_model_config(config)


# -- against vLLM 0.33.0 ---------------------------------------------------------------


def _vllm() -> None:
    try:
        import vllm  # noqa: F401
    except ImportError:
        if os.environ.get("JUNCTION_REQUIRE_VLLM"):
            raise
        pytest.skip("vLLM 0.33.0 (the audit extra) is not installed")


def _hf(name: str) -> Any:
    import transformers

    fields = json.loads(
        (
            Path(__file__).resolve().parents[2] / "reference/replay/catalog" / f"{name}.json"
        ).read_text()
    )
    family = fields.pop("model_type")
    return transformers.AutoConfig.for_model(family, **fields).get_text_config()


def _vllm_state(model: MemoryModel, hf: Any) -> Any:
    """vLLM's MambaSpec of one state layer of ``hf`` (bf16, cache dtypes auto, TP 1)."""
    import torch
    from vllm.model_executor.layers.mamba.mamba_utils import (
        MambaStateDtypeCalculator,
        MambaStateShapeCalculator,
    )
    from vllm.v1.kv_cache_interface import MambaSpec

    if hf.model_type == "qwen3_next":
        shapes = MambaStateShapeCalculator.gated_delta_net_state_shape(
            1,
            hf.linear_num_key_heads,
            hf.linear_num_value_heads,
            hf.linear_key_head_dim,
            hf.linear_value_head_dim,
            hf.linear_conv_kernel_dim,
            0,
        )
        dtypes = MambaStateDtypeCalculator.gated_delta_net_state_dtype(
            torch.bfloat16, "auto", "auto"
        )
    else:
        shapes = MambaStateShapeCalculator.mamba2_state_shape(
            intermediate_size=hf.mamba_num_heads * hf.mamba_head_dim,
            tp_world_size=1,
            n_groups=hf.n_groups,
            num_heads=hf.mamba_num_heads,
            head_dim=hf.mamba_head_dim,
            state_size=hf.ssm_state_size,
            conv_kernel=hf.conv_kernel,
            num_spec=0,
        )
        dtypes = MambaStateDtypeCalculator.mamba2_state_dtype(torch.bfloat16, "auto", "auto")
    return MambaSpec(shapes=shapes, dtypes=dtypes, block_size=model.block_size)


@pytest.mark.parametrize("name", CATALOG)
def test_the_layout_is_what_vllm_derives(name: str) -> None:
    _vllm()
    import torch
    from vllm.v1.core import kv_cache_planning as planning
    from vllm.v1.kv_cache_interface import (
        FullAttentionSpec,
        MambaSpec,
        SlidingWindowSpec,
    )

    model, hf = catalog_model(name), _hf(name)
    block, dtype = model.block_size, torch.bfloat16
    specs: dict[str, Any] = {}
    for i in range(model.full_layers):
        specs[f"full.{i}"] = FullAttentionSpec(
            block_size=block, num_kv_heads=model.kv_heads, head_size=model.head_dim, dtype=dtype
        )
    for i in range(model.window_layers):
        specs[f"window.{i}"] = SlidingWindowSpec(
            block_size=block,
            num_kv_heads=model.kv_heads,
            head_size=model.head_dim,
            dtype=dtype,
            sliding_window=model.window,
        )
    if model.state_layers:
        state = _vllm_state(model, hf)
        assert state.page_size_bytes == model.state_bytes
        from tests.audit.test_presets import _mamba_block, _NemotronH, _Qwen3Next

        stand_in = _Qwen3Next() if hf.model_type == "qwen3_next" else _NemotronH()
        assert _mamba_block(hf, stand_in) == block
        for i in range(model.state_layers):
            specs[f"state.{i}"] = MambaSpec(
                shapes=state.shapes,
                dtypes=state.dtypes,
                block_size=block,
                page_size_padded=model.page_bytes,
            )
    if len({type(s) for s in specs.values()}) == 1 and not model.window_layers:
        groups = [types.SimpleNamespace(layer_names=list(specs))]
    else:
        groups = planning._get_kv_cache_groups_uniform_page_size(specs)
    kinds = [specs[g.layer_names[0]] for g in groups]
    counts = (
        sum(type(k) is FullAttentionSpec for k in kinds),
        sum(type(k) is SlidingWindowSpec for k in kinds),
        sum(type(k) is MambaSpec for k in kinds),
    )
    assert counts == model.group_counts()
    assert max(len(g.layer_names) for g in groups) == model.group_size
    assert {s.page_size_bytes for s in specs.values()} == {model.page_bytes}
