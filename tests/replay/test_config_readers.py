"""The config readers give exactly what transformers 5.20.2's config classes give.

``reference/replay/configs.py`` reads a ``config.json`` without transformers,
writing each class's defaults and derivations down. Here each catalog model
and variants that exercise every default and derivation (nulls, legacy names,
patterns, intervals, switches) are read both ways: by the reader, and by the
family's transformers class (``AutoConfig.for_model``, offline), whose result
is taken field by field as the memory model read it before the readers. The
two shapes and the two memory models must be equal. transformers is in the
audit extra (``make setup``); without it these tests skip, unless
``--require-vllm`` (CI) makes that an error.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from junction.reference.replay.configs import (
    FAMILIES,
    GatedDeltaNetState,
    Mamba2State,
    ModelConfigError,
    ModelShape,
    read_config,
)
from junction.reference.replay.models import CATALOG, CATALOG_DIRECTORY, shape_layout

_PATTERN_52 = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
_GEMMA_27B = {
    "num_hidden_layers": 62,
    "sliding_window": 1024,
    "hidden_size": 5376,
    "num_attention_heads": 32,
    "num_key_value_heads": 16,
    "head_dim": 128,
}

# Published sizes: Qwen3.5 27B's text model (64 layers, every 4th full attention,
# 48 value heads, a float32 SSM state) and Gemma 4 31B's (60 layers, full-attention
# layers of head size 512 with 4 KV heads beside sliding ones of 256 with 16).
_QWEN3_5_27B = {
    "num_hidden_layers": 64,
    "hidden_size": 5120,
    "num_attention_heads": 24,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "linear_num_value_heads": 48,
    "mamba_ssm_dtype": "float32",
    "dtype": "bfloat16",
}
_GEMMA4_31B = {
    "num_hidden_layers": 60,
    "hidden_size": 5376,
    "num_attention_heads": 32,
    "num_key_value_heads": 16,
    "num_global_key_value_heads": 4,
    "head_dim": 256,
    "global_head_dim": 512,
    "attention_k_eq_v": True,
    "sliding_window": 1024,
}

VARIANTS: list[dict[str, Any]] = [
    {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 16, "head_dim": None},
    {"model_type": "llama", "num_key_value_heads": None, "torch_dtype": "float16"},
    {"model_type": "llama", "num_hidden_layers": 3, "dtype": "float32", "torch_dtype": "float16"},
    {
        "model_type": "llama",
        "num_hidden_layers": 2,
        "layer_types": ["sliding_attention", "attention"],
        "sliding_window": 512,
    },
    {"model_type": "mistral", "sliding_window": None},
    {"model_type": "mistral", "use_sliding_window": False, "num_key_value_heads": 4},
    {
        "model_type": "mistral",
        "num_hidden_layers": 4,
        "sliding_window": 1024,
        "layer_types": ["sliding_attention", "full_attention"] * 2,
    },
    {"model_type": "qwen3"},
    {"model_type": "qwen3", "num_key_value_heads": None, "num_attention_heads": 16},
    {
        "model_type": "qwen3",
        "num_hidden_layers": 24,
        "use_sliding_window": True,
        "sliding_window": 1024,
        "max_window_layers": 20,
    },
    {"model_type": "qwen3", "use_sliding_window": True, "sliding_window": None},
    {"model_type": "qwen3", "use_sliding_window": True, "num_hidden_layers": 30},
    {"model_type": "qwen3", "use_sliding_window": False, "max_window_layers": 0},
    {"model_type": "gpt_oss", "num_hidden_layers": 7, "sliding_window": 256},
    {"model_type": "gpt_oss", "head_dim": 128, "num_key_value_heads": 16},
    {"model_type": "gemma3_text"},
    {"model_type": "gemma3_text", "num_hidden_layers": 10, "sliding_window_pattern": 4},
    {"model_type": "gemma3_text", "use_bidirectional_attention": True},
    {"model_type": "gemma3"},
    {"model_type": "gemma3", "torch_dtype": "float32", "text_config": _GEMMA_27B},
    {"model_type": "gemma3", "text_config": {**_GEMMA_27B, "dtype": "float16"}},
    {"model_type": "gemma3", "dtype": "float32", "text_config": {"dtype": "float16"}},
    {"model_type": "qwen3_next"},
    {"model_type": "qwen3_next", "num_hidden_layers": 12, "full_attention_interval": 3},
    {"model_type": "qwen3_next", "num_hidden_layers": 5, "full_attention_interval": 2},
    {
        "model_type": "qwen3_next",
        "num_hidden_layers": 4,
        "layer_types": ["linear_attention", "attention", "mamba", "full_attention"],
    },
    {
        "model_type": "qwen3_next",
        "linear_num_value_heads": 16,
        "linear_conv_kernel_dim": 3,
        "linear_key_head_dim": 64,
        "linear_value_head_dim": 96,
        "linear_num_key_heads": 8,
    },
    {"model_type": "nemotron_h"},
    {"model_type": "nemotron_h", "hybrid_override_pattern": "M*M-E*"},
    {"model_type": "nemotron_h", "num_hidden_layers": 52, "hybrid_override_pattern": _PATTERN_52},
    {"model_type": "nemotron_h", "layers_block_type": ["mamba", "attention", "mlp", "moe"]},
    {"model_type": "nemotron_h", "layer_types": ["full_attention", "linear_attention"]},
    {
        "model_type": "nemotron_h",
        "hybrid_override_pattern": "M-*",
        "mamba_d_conv": 3,
        "mamba_n_groups": 4,
        "mamba_num_heads": 64,
        "mamba_head_dim": 32,
        "ssm_state_size": 16,
    },
    {"model_type": "nemotron_h", "hybrid_override_pattern": "M*", "mamba_ssm_cache_dtype": "auto"},
    {
        "model_type": "nemotron_h",
        "hybrid_override_pattern": "M*",
        "mamba_ssm_cache_dtype": "bfloat16",
    },
    {"model_type": "qwen3_5_text"},
    {"model_type": "qwen3_5_text", "num_hidden_layers": 8, "mamba_ssm_dtype": "float32"},
    {"model_type": "qwen3_5_text", "num_hidden_layers": 6, "full_attention_interval": 3},
    {"model_type": "qwen3_5", "text_config": _QWEN3_5_27B},
    {"model_type": "qwen3_5", "dtype": "float16", "text_config": {"num_hidden_layers": 4}},
    {
        "model_type": "qwen3_5_moe",
        "text_config": {"num_hidden_layers": 8, "mamba_ssm_dtype": "float32"},
    },
    {"model_type": "qwen3_5_moe_text", "linear_num_value_heads": 64},
    {"model_type": "gemma4_text", "global_head_dim": 256},
    {
        "model_type": "gemma4_text",
        "num_hidden_layers": 8,
        "global_head_dim": 128,
        "head_dim": 128,
        "use_bidirectional_attention": "all",
        "layer_types": ["sliding_attention"] * 8,
    },
    {
        "model_type": "gemma4",
        "text_config": {
            "num_hidden_layers": 12,
            "global_head_dim": 256,
            "attention_k_eq_v": True,
            "num_global_key_value_heads": 4,
        },
    },
]

# Configs whose attention layers transformers resolves to pages of two sizes (or
# layers sharing another's cache): the reader refuses them, naming the field.
REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"model_type": "gemma4_text"}, "global_head_dim"),
    ({"model_type": "gemma4", "text_config": _GEMMA4_31B}, "text_config.global_head_dim"),
    (
        {
            "model_type": "gemma4_text",
            "global_head_dim": 256,
            "attention_k_eq_v": True,
            "num_global_key_value_heads": 2,
        },
        "num_global_key_value_heads",
    ),
]


def _catalog(name: str) -> dict[str, Any]:
    fields: dict[str, Any] = json.loads((CATALOG_DIRECTORY / f"{name}.json").read_text())
    return fields


CASES = [_catalog(name) for name in CATALOG] + VARIANTS
IDS = list(CATALOG) + [f"{v['model_type']}-{i}" for i, v in enumerate(VARIANTS)]


@pytest.fixture(scope="module")
def transformers(pytestconfig: pytest.Config) -> Any:
    try:
        import transformers
    except ImportError:
        if pytestconfig.getoption("--require-vllm") or pytestconfig.getoption("--require-all"):
            pytest.fail("--require-vllm is given but transformers (the audit extra) is missing")
        pytest.skip("transformers (the audit extra, `make setup`) is not installed")
    logs: Any = transformers.logging
    logs.set_verbosity_error()  # mistral's layer_types warn, as they should
    return transformers


def _attention_sizes(text: Any, kinds: list[str]) -> set[tuple[int, int]]:
    """The (KV heads, head size) pairs of the attention layers, per layer where the
    class makes them per-layer attributes (Gemma 4's full-attention layers)."""
    heads = text.num_attention_heads
    try:
        getattr(text, "head_dim", None), getattr(text, "num_key_value_heads", None)
        layers = [text] * len(kinds)
    except RuntimeError:  # transformers' AmbiguousGlobalPerLayerAttributeError
        layers = list(text.per_layer_config)
    return {
        (
            getattr(layer, "num_key_value_heads", None) or heads,
            getattr(layer, "head_dim", None) or text.hidden_size // heads,
        )
        for layer, kind in zip(layers, kinds, strict=True)
        if kind in ("full_attention", "sliding_attention")
    }


def by_transformers(transformers: Any, fields: dict[str, Any]) -> ModelShape:
    """The shape as the family's transformers class resolves ``fields`` (the dtype as
    vLLM reads it: the config's, else its text config's)."""
    rest = dict(fields)
    family = rest.pop("model_type")
    config = transformers.AutoConfig.for_model(family, **rest)
    text = config.get_text_config()
    kinds = list(getattr(text, "layer_types", None) or [])
    window = getattr(text, "sliding_window", None)
    if not kinds:
        sliding = window is not None and getattr(text, "use_sliding_window", True)
        kinds = ["sliding_attention" if sliding else "full_attention"] * text.num_hidden_layers
    sizes = _attention_sizes(text, kinds)
    assert len(sizes) == 1, f"attention pages of {len(sizes)} sizes: {sizes}"
    ((kv_heads, head_dim),) = sizes
    dtype = config.dtype or text.dtype
    state: GatedDeltaNetState | Mamba2State | None = None
    ssm_dtype = None
    if "linear_attention" in kinds and family == "nemotron_h":
        state = Mamba2State(
            conv_kernel=text.conv_kernel,
            heads=text.mamba_num_heads,
            head_dim=text.mamba_head_dim,
            groups=text.n_groups,
            state_size=text.ssm_state_size,
        )
        ssm_dtype = text.mamba_ssm_cache_dtype
    elif "linear_attention" in kinds:
        state = GatedDeltaNetState(
            conv_kernel=text.linear_conv_kernel_dim,
            key_heads=text.linear_num_key_heads,
            value_heads=text.linear_num_value_heads,
            key_dim=text.linear_key_head_dim,
            value_dim=text.linear_value_head_dim,
        )
        if family != "qwen3_next":  # vLLM reads Qwen3.5's, not Qwen3-Next's
            ssm_dtype = getattr(text, "mamba_ssm_dtype", None)
    return ModelShape(
        model_type=family,
        layer_types=tuple(kinds),
        kv_heads=kv_heads,
        head_dim=head_dim,
        sliding_window=window if "sliding_attention" in kinds else None,
        dtype="bfloat16" if dtype is None else str(dtype).removeprefix("torch."),
        state=state,
        ssm_dtype=ssm_dtype,
    )


@pytest.mark.parametrize("fields", CASES, ids=IDS)
def test_the_reader_gives_what_the_transformers_class_gives(
    transformers: Any, fields: dict[str, Any]
) -> None:
    ours = read_config("config.json", fields)
    theirs = by_transformers(transformers, fields)
    assert ours == theirs
    assert shape_layout("m", ours) == shape_layout("m", theirs)


def test_every_family_is_among_the_cases() -> None:
    assert {fields["model_type"] for fields in CASES} == set(FAMILIES)


@pytest.mark.parametrize(("fields", "field"), REFUSED, ids=[f for _, f in REFUSED])
def test_a_config_of_two_page_sizes_is_refused_naming_the_field(
    transformers: Any, fields: dict[str, Any], field: str
) -> None:
    with pytest.raises(AssertionError, match="attention pages of 2 sizes"):
        by_transformers(transformers, fields)
    with pytest.raises(ModelConfigError) as raised:
        read_config("config.json", fields)
    assert raised.value.field == field
