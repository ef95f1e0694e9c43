"""Malformed and catalog-adjacent model configs: each is laid out or refused in one line.

Each row of ``MALFORMED`` is a ``config.json`` the memory model must refuse
(negative, zero, non-integer and huge layer counts; layer patterns
inconsistent with the count; unknown and missing model types; missing and
mistyped fields, dtypes among them). All rows go through the library
(``load_model_config``); a few go through the command in a subprocess, which
must end with exit status 2 and one line on standard error, no traceback.
``ADJACENT`` holds configs of the families beside the catalog's (Gemma 4,
Qwen3.5, quantized checkpoints): through the command, each is either laid
out (exit 0) or refused in one line naming the field whose value the layout
cannot express.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from junction.command import dispatch as main
from junction.reference.replay.models import ModelConfigError, load_model_config
from tests.cli.in_process import run_in_process

_PATTERN_52 = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"

# (id, fields, the field the one line must name)
MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("negative layers", {"model_type": "nemotron_h", "num_hidden_layers": -3}, "num_hidden_layers"),
    ("zero layers", {"model_type": "llama", "num_hidden_layers": 0}, "num_hidden_layers"),
    (
        "negative layers, linear",
        {"model_type": "qwen3_next", "num_hidden_layers": -4},
        "num_hidden_layers",
    ),
    ("fractional layers", {"model_type": "llama", "num_hidden_layers": 12.5}, "num_hidden_layers"),
    ("float layers", {"model_type": "mistral", "num_hidden_layers": 32.0}, "num_hidden_layers"),
    ("bool layers", {"model_type": "qwen3", "num_hidden_layers": True}, "num_hidden_layers"),
    ("string layers", {"model_type": "gpt_oss", "num_hidden_layers": "36"}, "num_hidden_layers"),
    (
        "huge layers",
        {"model_type": "qwen3_next", "num_hidden_layers": 400_000_000},
        "num_hidden_layers",
    ),
    (
        "huge layers, gemma",
        {"model_type": "gemma3_text", "num_hidden_layers": 10**30},
        "num_hidden_layers",
    ),
    (
        "pattern shorter than the count",
        {"model_type": "nemotron_h", "num_hidden_layers": 10, "hybrid_override_pattern": "M-M*"},
        "hybrid_override_pattern",
    ),
    (
        "pattern longer than the count",
        {
            "model_type": "nemotron_h",
            "num_hidden_layers": 51,
            "hybrid_override_pattern": _PATTERN_52,
        },
        "hybrid_override_pattern",
    ),
    (
        "pattern's unknown letter",
        {"model_type": "nemotron_h", "hybrid_override_pattern": "M-X*"},
        "hybrid_override_pattern",
    ),
    (
        "pattern not a string",
        {"model_type": "nemotron_h", "hybrid_override_pattern": 5},
        "hybrid_override_pattern",
    ),
    (
        "pattern without attention",
        {"model_type": "nemotron_h", "num_hidden_layers": 4, "hybrid_override_pattern": "M-M-"},
        "hybrid_override_pattern",
    ),
    (
        "layer types against the count",
        {"model_type": "qwen3_next", "num_hidden_layers": 4, "layer_types": ["full_attention"] * 3},
        "layer_types",
    ),
    (
        "layer types against the count, gemma",
        {
            "model_type": "gemma3_text",
            "num_hidden_layers": 2,
            "layer_types": ["sliding_attention"] * 6,
        },
        "layer_types",
    ),
    (
        "unknown layer type",
        {"model_type": "gpt_oss", "num_hidden_layers": 2, "layer_types": ["chunked_attention"] * 2},
        "layer_types",
    ),
    (
        "state layers where none are sized",
        {
            "model_type": "gemma3_text",
            "num_hidden_layers": 2,
            "layer_types": ["full_attention", "linear_attention"],
        },
        "layer_types",
    ),
    (
        "layer types not a list",
        {"model_type": "gpt_oss", "layer_types": "full_attention"},
        "layer_types",
    ),
    (
        "interval zero",
        {"model_type": "qwen3_next", "full_attention_interval": 0},
        "full_attention_interval",
    ),
    (
        "interval negative",
        {"model_type": "qwen3_next", "full_attention_interval": -2},
        "full_attention_interval",
    ),
    (
        "interval bool",
        {"model_type": "qwen3_next", "full_attention_interval": True},
        "full_attention_interval",
    ),
    (
        "window pattern zero",
        {"model_type": "gemma3_text", "sliding_window_pattern": 0},
        "sliding_window_pattern",
    ),
    ("unknown type", {"model_type": "qwen3-next"}, "model_type"),
    ("far unknown type", {"model_type": "bert"}, "model_type"),
    ("missing type", {"num_hidden_layers": 4}, "model_type"),
    ("mistyped type", {"model_type": 7}, "model_type"),
    (
        "mistyped KV heads",
        {"model_type": "llama", "num_key_value_heads": "eight"},
        "num_key_value_heads",
    ),
    ("zero heads", {"model_type": "llama", "num_attention_heads": 0}, "num_attention_heads"),
    (
        "heads not a multiple of KV heads",
        {"model_type": "llama", "num_key_value_heads": 5},
        "num_key_value_heads",
    ),
    (
        "hidden size not a multiple of heads",
        {"model_type": "llama", "hidden_size": 4097},
        "hidden_size",
    ),
    ("negative head size", {"model_type": "mistral", "head_dim": -128}, "head_dim"),
    ("null head size, not nullable", {"model_type": "qwen3", "head_dim": None}, "head_dim"),
    (
        "null KV heads, not nullable",
        {"model_type": "gpt_oss", "num_key_value_heads": None},
        "num_key_value_heads",
    ),
    (
        "zero window",
        {"model_type": "gpt_oss", "num_hidden_layers": 3, "sliding_window": 0},
        "sliding_window",
    ),
    ("string window", {"model_type": "mistral", "sliding_window": "4096"}, "sliding_window"),
    ("missing window", {"model_type": "gemma3_text", "sliding_window": None}, "sliding_window"),
    ("unknown dtype", {"model_type": "llama", "dtype": "int3"}, "dtype"),
    ("mistyped dtype", {"model_type": "llama", "torch_dtype": 16}, "torch_dtype"),
    ("mistyped switch", {"model_type": "qwen3", "use_sliding_window": "yes"}, "use_sliding_window"),
    (
        "negative window layers",
        {"model_type": "qwen3", "max_window_layers": -1},
        "max_window_layers",
    ),
    (
        "zero conv kernel",
        {"model_type": "qwen3_next", "linear_conv_kernel_dim": 0},
        "linear_conv_kernel_dim",
    ),
    (
        "bool value heads",
        {"model_type": "qwen3_next", "linear_num_value_heads": True},
        "linear_num_value_heads",
    ),
    (
        "negative Mamba heads",
        {"model_type": "nemotron_h", "mamba_num_heads": -1},
        "mamba_num_heads",
    ),
    ("zero state size", {"model_type": "nemotron_h", "ssm_state_size": 0}, "ssm_state_size"),
    ("text config not an object", {"model_type": "gemma3", "text_config": "x"}, "text_config"),
    (
        "text config's negative layers",
        {"model_type": "gemma3", "text_config": {"num_hidden_layers": -1}},
        "text_config.num_hidden_layers",
    ),
    (
        "unknown SSM dtype",
        {"model_type": "nemotron_h", "mamba_ssm_cache_dtype": "int8"},
        "mamba_ssm_cache_dtype",
    ),
    (
        "null SSM dtype",
        {"model_type": "nemotron_h", "mamba_ssm_cache_dtype": None},
        "mamba_ssm_cache_dtype",
    ),
    (
        "mistyped SSM dtype, Qwen3.5",
        {"model_type": "qwen3_5", "text_config": {"mamba_ssm_dtype": 32}},
        "text_config.mamba_ssm_dtype",
    ),
    (
        "text config's legacy dtype",
        {"model_type": "qwen3_5_moe", "text_config": {"torch_dtype": "fp8"}},
        "text_config.torch_dtype",
    ),
    (
        "unknown bidirectional mode",
        {"model_type": "gemma4_text", "use_bidirectional_attention": "yes"},
        "use_bidirectional_attention",
    ),
]

# Configs beside the catalog's: (id, fields, the field refused, or None: laid out).
_GEMMA4_31B = {
    "num_hidden_layers": 60,
    "num_attention_heads": 32,
    "num_key_value_heads": 16,
    "num_global_key_value_heads": 4,
    "head_dim": 256,
    "global_head_dim": 512,
    "attention_k_eq_v": True,
    "sliding_window": 1024,
    "dtype": "bfloat16",
}
ADJACENT: list[tuple[str, dict[str, Any], str | None]] = [
    (
        "Gemma 4 31B",
        {
            "architectures": ["Gemma4ForConditionalGeneration"],
            "model_type": "gemma4",
            "text_config": {"model_type": "gemma4_text", **_GEMMA4_31B},
            "vision_config": {"model_type": "gemma4_vision"},
        },
        "text_config.global_head_dim",
    ),
    ("Gemma 4 text defaults", {"model_type": "gemma4_text"}, "global_head_dim"),
    (
        "Gemma 4, one head size, two KV head counts",
        {**_GEMMA4_31B, "model_type": "gemma4_text", "global_head_dim": 256},
        "num_global_key_value_heads",
    ),
    (
        "Gemma 4 with shared KV layers",
        {"model_type": "gemma4_text", "global_head_dim": 256, "num_kv_shared_layers": 20},
        "num_kv_shared_layers",
    ),
    (
        "Gemma 4 per-layer sizes",
        {"model_type": "gemma4_text", "per_layer_config": {"5": {"head_dim": 512}}},
        "per_layer_config",
    ),
    (
        "Gemma 4, one page size",
        {"model_type": "gemma4_text", "num_hidden_layers": 12, "global_head_dim": 256},
        None,
    ),
    (
        "Qwen3.5 27B",
        {
            "architectures": ["Qwen3_5ForConditionalGeneration"],
            "model_type": "qwen3_5",
            "text_config": {
                "model_type": "qwen3_5_text",
                "num_hidden_layers": 64,
                "num_attention_heads": 24,
                "num_key_value_heads": 4,
                "head_dim": 256,
                "linear_num_value_heads": 48,
                "mamba_ssm_dtype": "float32",
                "dtype": "bfloat16",
            },
            "vision_config": {"depth": 27},
        },
        None,
    ),
    ("Qwen3.5 MoE text", {"model_type": "qwen3_5_moe_text", "num_hidden_layers": 8}, None),
    (
        "FP8 checkpoint",
        {"model_type": "qwen3", "quantization_config": {"quant_method": "fp8"}},
        "quantization_config",
    ),
    (
        "compressed-tensors checkpoint",
        {"model_type": "llama", "compression_config": {"kv_cache_scheme": {"num_bits": 8}}},
        "compression_config",
    ),
]

# Through the command, in a subprocess: the four cases.
THROUGH_THE_COMMAND = (
    "negative layers",
    "pattern shorter than the count",
    "huge layers",
    "unknown type",
)


def _write(tmp_path: Path, fields: dict[str, Any]) -> Path:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(fields))
    return config


@pytest.mark.parametrize(
    ("fields", "field"), [row[1:] for row in MALFORMED], ids=[row[0] for row in MALFORMED]
)
def test_a_malformed_config_is_refused_in_one_line_naming_the_field(
    tmp_path: Path, fields: dict[str, Any], field: str
) -> None:
    config = _write(tmp_path, fields)
    with pytest.raises(ModelConfigError) as raised:
        load_model_config(config)
    message = str(raised.value)
    assert raised.value.field == field
    assert message.startswith(f"{config}: {field}: ")
    assert "\n" not in message and len(message) < 300 + len(str(config)), message


def test_an_unknown_type_names_the_closest_supported_ones(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError) as raised:
        load_model_config(_write(tmp_path, {"model_type": "qwen3-next"}))
    assert "qwen3_next" in str(raised.value)
    assert "nemotron_h" not in str(raised.value)


@pytest.mark.parametrize("name", THROUGH_THE_COMMAND)
def test_the_command_refuses_it_in_one_line_with_status_2(tmp_path: Path, name: str) -> None:
    fields, field = next(row[1:] for row in MALFORMED if row[0] == name)
    config = _write(tmp_path, fields)
    argv = [sys.executable, "-m", "junction", "hbm", "--model-config", str(config)]
    done = subprocess.run(
        [*argv, "--requests", "5", "--hbm", "8"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 2, done
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and f": {field}: " in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("fields", "field"), [row[1:] for row in ADJACENT], ids=[row[0] for row in ADJACENT]
)
def test_an_adjacent_config_is_laid_out_or_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fields: dict[str, Any], field: str | None
) -> None:
    config = _write(tmp_path, fields)
    argv = ["hbm", "--model-config", str(config), "--requests", "5", "--hbm", "8"]
    ended = run_in_process(main, argv, capsys)
    if field is None:
        assert ended.code == 0 and "8 GiB = " in ended.out, ended
        return
    assert (ended.code, ended.out) == (2, ""), ended
    assert ended.err.count("\n") == 1 and f"{config}: {field}: " in ended.err, ended.err
