"""The memory model: the catalog, a user's config.json and dtype choices, malformed ones.

Worked by hand here; ``tests/audit/test_cache_dtypes.py`` checks every catalog
model's dtypes, page, block, groups and blocks at a budget against vLLM
0.33.0's own code where vLLM is installed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from junction.command import dispatch as main
from junction.reference.replay.models import (
    CATALOG,
    GIB,
    ModelConfigError,
    catalog_model,
    load_model_config,
    memory_model,
)
from junction.reference.simulator.geometries import PRESETS

# A preset and the catalog model and --state-dtype of its blocks: the nemotron-h
# preset's blocks of 528 are vLLM's with a bf16 SSM state, where vLLM's own
# choice for Nemotron-H, float32, makes them 1,040.
PRESET_MODELS = {
    "qwen3-next": ("qwen3-next-80b-a3b", "auto"),
    "nemotron-h": ("nemotron-h-8b", "bfloat16"),
    "gpt-oss": ("gpt-oss-120b", "auto"),
    "gemma3": ("gemma-3-27b", "auto"),
}


def test_the_catalog_has_hybrid_and_attention_only_models() -> None:
    models = [catalog_model(name) for name in CATALOG]
    assert len(models) >= 8
    assert any(m.state_layers for m in models) and any(m.window_layers for m in models)
    assert any(not m.state_layers and not m.window_layers for m in models)


@pytest.mark.parametrize("preset", sorted(PRESET_MODELS))
def test_a_preset_family_has_the_presets_block(preset: str) -> None:
    name, state_dtype = PRESET_MODELS[preset]
    model = catalog_model(name, state_dtype=state_dtype)
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


def test_nemotron_h_8b_by_hand() -> None:
    """4 attention layers (8 KV heads x 128) and 24 Mamba-2 layers whose SSM state vLLM
    keeps in float32 (its NemotronH config hook), the conv state in bf16."""
    model = catalog_model("nemotron-h-8b")
    conv, ssm = 3 * (128 * 64 + 2 * 8 * 128), 128 * 64 * 128
    assert (model.dtypes.conv, model.dtypes.ssm) == ("bfloat16", "float32")
    assert model.state_bytes == 2 * conv + 4 * ssm == 4_255_744
    assert model.block_size == 1040  # 16 x cdiv(4,255,744, 16 x 4,096)
    assert model.group_counts() == (1, 0, 6) and model.group_size == 4
    assert model.blocks(3) == 3 * GIB // (4 * 1040 * 4096) == 189
    chosen = catalog_model("nemotron-h-8b", state_dtype="bfloat16")
    assert (chosen.state_bytes, chosen.block_size, chosen.blocks(3)) == (2_158_592, 528, 372)
    assert "state conv bfloat16 + SSM float32" in model.layout


def test_a_kv_dtype_of_your_choice() -> None:
    auto, fp8 = catalog_model("llama-3.1-8b"), catalog_model("llama-3.1-8b", kv_dtype="fp8")
    assert (auto.kv_bytes_per_token, fp8.kv_bytes_per_token) == (2 * 8 * 128 * 2, 2 * 8 * 128)
    assert fp8.blocks(3) == 2 * auto.blocks(3) and "KV cache fp8" in fp8.layout
    # A hybrid's block must hold a state: at half the bytes a token, about twice the tokens.
    fp8_hybrid = catalog_model("qwen3-next-80b-a3b", kv_dtype="fp8_e4m3")
    assert fp8_hybrid.block_size == 1072  # 16 x cdiv(1,097,728, 16 x 1,024)


@pytest.mark.parametrize(
    ("fields", "choice", "model", "kv"),
    [
        ({"model_type": "llama", "dtype": "float32"}, "auto", "bfloat16", "bfloat16"),
        ({"model_type": "llama", "dtype": "float16"}, "float16", "float16", "float16"),
        ({"model_type": "gemma3_text", "torch_dtype": "half"}, "auto", "bfloat16", "bfloat16"),
        ({"model_type": "gemma3", "dtype": "float16"}, "fp8", "bfloat16", "fp8"),
    ],
)
def test_the_model_runs_in_the_dtype_vllm_chooses(
    fields: dict[str, Any], choice: str, model: str, kv: str
) -> None:
    dtypes = memory_model("config.json", fields, kv_dtype=choice).dtypes
    assert (dtypes.model, dtypes.kv) == (model, kv)


@pytest.mark.parametrize(
    ("kv", "state", "option"),
    [
        ("float32", "auto", "--kv-dtype"),
        ("auto", "fp8", "--state-dtype"),
        ("float16", "auto", "--kv-dtype"),
    ],
)
def test_a_choice_vllm_refuses_is_one_line_naming_the_option(
    kv: str, state: str, option: str
) -> None:
    with pytest.raises(ModelConfigError) as raised:
        catalog_model("nemotron-h-8b", kv_dtype=kv, state_dtype=state)
    assert raised.value.field == option
    assert str(raised.value).startswith(f"nemotron-h-8b: {option}: must be ")
    assert "\n" not in str(raised.value)


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
