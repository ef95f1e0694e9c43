"""A model's ``config.json`` read into what its KV-cache layout depends on, without transformers.

One reader per supported ``model_type`` fills each field the file leaves out
with the default its transformers 5.20.2 config class fills in (the class and
field are named beside each default), derives what the class derives (the
layer types from a pattern, an interval or a switch; the head size from the
hidden size) and checks every field it reads (``config_fields``). A field at
fault, or one whose value the layout cannot express (Gemma 4's full-attention
layers of another head size than its sliding ones), is refused in one line
naming it, its value and the rule. ``tests/replay/test_config_readers.py``
checks, where transformers is installed, that each reader gives exactly
what the class gives.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .config_fields import (
    FULL,
    MAX_LAYERS,
    NO_CACHE,
    SLIDING,
    STATE,
    Attention,
    Fields,
    GatedDeltaNetState,
    Mamba2State,
    ModelConfigError,
    ModelShape,
    attention,
    config_dtype,
    every,
    layer_types,
    mamba_dtype,
    shape,
)

__all__ = [
    "FAMILIES",
    "GatedDeltaNetState",
    "Mamba2State",
    "ModelConfigError",
    "ModelShape",
    "read_config",
]

Reader = Callable[[Fields, str], ModelShape]
_ATTENTION = (FULL, SLIDING)


def _plain(
    defaults: Attention,
    default_kinds: Callable[[Fields, int, int | None], list[str]] | None = None,
) -> Reader:
    """A reader of an attention-only family: ``layer_types`` if given, else ``default_kinds``
    (the class's ``__post_init__``), else every layer sliding where a ``sliding_window`` is set."""

    def read(fields: Fields, family: str) -> ModelShape:
        layers = fields.layers(defaults.layers)
        window = fields.optional_int("sliding_window", defaults.window)
        if fields.given("layer_types"):
            kinds = layer_types(fields, "layer_types", layers, _ATTENTION)
        elif default_kinds is not None:
            kinds = default_kinds(fields, layers, window)
        else:
            slides = window is not None and fields.switch("use_sliding_window", True)
            kinds = [SLIDING if slides else FULL] * layers
        return shape(fields, family, kinds, "layer_types", defaults, window)

    return read


def _wrapped(text_family: str, read_text: Reader) -> Reader:
    """A multimodal family's reader: its ``text_config`` is the model; the dtype the
    wrapper's, else the text config's (as vLLM's ``get_torch_dtype`` reads them)."""

    def read(fields: Fields, family: str) -> ModelShape:
        inner = fields.text()
        text = read_text(inner, text_family)
        return attrs.evolve(text, model_type=family, dtype=config_dtype(fields, inner))

    return read


def _read_qwen3(fields: Fields, family: str) -> ModelShape:
    # Qwen3Config: 32 layers, 32 heads, num_key_value_heads 32, head_dim 128,
    # hidden_size 4096, sliding_window 4096 (kept only with use_sliding_window);
    # num_key_value_heads may be null.
    defaults = Attention(32, 32, 32, 128, 4096, window=4096, nullable=("num_key_value_heads",))
    layers = fields.layers(defaults.layers)
    window = fields.optional_int("sliding_window", defaults.window)
    if not fields.switch("use_sliding_window", False):  # Qwen3Config.use_sliding_window: False
        window = None
    if fields.given("layer_types"):
        kinds = layer_types(fields, "layer_types", layers, _ATTENTION)
    else:
        # Qwen3Config.__post_init__: with a window, the layers from max_window_layers
        # (default 28) on slide.
        since = fields.integer("max_window_layers", 28, low=0, high=MAX_LAYERS)
        kinds = [SLIDING if window is not None and i >= since else FULL for i in range(layers)]
    return shape(fields, family, kinds, "layer_types", defaults, window)


def _gated_deltanet(defaults: Attention, ssm_field: str | None) -> Reader:
    """A reader of a Gated DeltaNet hybrid (Qwen3-Next, Qwen3.5): ``layer_types``, else
    every ``full_attention_interval``-th layer (default 4) full attention, the rest
    Gated DeltaNet (``__post_init__``); the config's own SSM dtype ``ssm_field``."""

    def read(fields: Fields, family: str) -> ModelShape:
        layers = fields.layers(defaults.layers)
        if fields.given("layer_types"):
            kinds_field = "layer_types"
            kinds = layer_types(fields, kinds_field, layers, (*_ATTENTION, STATE))
        else:
            interval = fields.integer("full_attention_interval", 4, high=MAX_LAYERS)
            kinds, kinds_field = every(interval, STATE, FULL, layers), "full_attention_interval"
        state = GatedDeltaNetState(
            # Both classes: linear_conv_kernel_dim 4, linear_num_key_heads 16,
            # linear_num_value_heads 32, linear_key_head_dim 128, linear_value_head_dim 128.
            conv_kernel=fields.integer("linear_conv_kernel_dim", 4),
            key_heads=fields.integer("linear_num_key_heads", 16),
            value_heads=fields.integer("linear_num_value_heads", 32),
            key_dim=fields.integer("linear_key_head_dim", 128),
            value_dim=fields.integer("linear_value_head_dim", 128),
        )
        ssm = None if ssm_field is None else mamba_dtype(fields, ssm_field, None)
        window = fields.optional_int("sliding_window", None)  # not a field of either class
        return shape(fields, family, kinds, kinds_field, defaults, window, state, ssm)

    return read


# NemotronHConfig._pattern_to_list.
_PATTERN = {"M": STATE, "E": "moe", "*": FULL, "-": "mlp"}
_NEMOTRON_KINDS = (FULL, STATE, *NO_CACHE)


def _read_nemotron_h(fields: Fields, family: str) -> ModelShape:
    # NemotronHConfig: 32 heads, num_key_value_heads 8, head_dim 128, hidden_size
    # 4096. Its layers are layers_block_type (alias layer_types), else the
    # hybrid_override_pattern's letters, else four layers (linear_attention,
    # moe, full_attention, mlp). The class ignores num_hidden_layers; here,
    # given, it must agree with them.
    defaults = Attention(layers=0, heads=32, kv_heads=8, head_dim=128, hidden=4096)
    count = fields.optional_int("num_hidden_layers", None, high=MAX_LAYERS)
    named = next((n for n in ("layers_block_type", "layer_types") if fields.given(n)), None)
    if named is not None:
        kinds, kinds_field = layer_types(fields, named, count, _NEMOTRON_KINDS), named
    elif fields.given("hybrid_override_pattern"):
        kinds_field = "hybrid_override_pattern"
        pattern = fields.raw(kinds_field, None)
        if not isinstance(pattern, str) or not pattern or set(pattern) - set(_PATTERN):
            raise fields.error(
                kinds_field, pattern, f"must be a string of the letters {''.join(_PATTERN)}"
            )
        if len(pattern) > MAX_LAYERS or (count is not None and len(pattern) != count):
            limit = f"{count} num_hidden_layers" if count is not None else f"at most {MAX_LAYERS:,}"
            raise fields.error(kinds_field, pattern, f"must have one letter per layer ({limit})")
        kinds = [_PATTERN[letter] for letter in pattern]
    else:
        kinds, kinds_field = [STATE, "moe", FULL, "mlp"], "num_hidden_layers"
        if count is not None and count != len(kinds):
            rule = "must be 4 (NemotronHConfig's default layers) without hybrid_override_pattern"
            raise fields.error("num_hidden_layers", count, rule)
    # NemotronHConfig: conv_kernel 4 (legacy mamba_d_conv), mamba_num_heads 128,
    # mamba_head_dim 64, n_groups 8 (legacy mamba_n_groups), ssm_state_size 128;
    # a legacy name, given, wins (__post_init__).
    conv = "mamba_d_conv" if "mamba_d_conv" in fields.fields else "conv_kernel"
    groups = "mamba_n_groups" if "mamba_n_groups" in fields.fields else "n_groups"
    state = Mamba2State(
        conv_kernel=fields.integer(conv, 4),
        heads=fields.integer("mamba_num_heads", 128),
        head_dim=fields.integer("mamba_head_dim", 64),
        groups=fields.integer(groups, 8),
        state_size=fields.integer("ssm_state_size", 128),
    )
    # NemotronHConfig.mamba_ssm_cache_dtype: "float32", which vLLM's
    # NemotronHForCausalLMConfig also takes when the field is absent.
    ssm = mamba_dtype(fields, "mamba_ssm_cache_dtype", "float32")
    window = fields.optional_int("sliding_window", None)  # NemotronHConfig.sliding_window: None
    return shape(fields, family, kinds, kinds_field, defaults, window, state, ssm)


def _gemma3_kinds(fields: Fields, layers: int, window: int | None) -> list[str]:
    # Gemma3TextConfig.__post_init__: sliding_window_pattern (default 6).
    period = fields.integer("sliding_window_pattern", 6, high=MAX_LAYERS)
    return every(period, SLIDING, FULL, layers)


def _gpt_oss_kinds(fields: Fields, layers: int, window: int | None) -> list[str]:
    return every(2, SLIDING, FULL, layers)  # GptOssConfig.__post_init__: alternating


_GEMMA3_LAYERS = _plain(
    # Gemma3TextConfig: 26 layers, 8 heads, num_key_value_heads 4, head_dim 256,
    # hidden_size 2304, sliding_window 4096.
    Attention(layers=26, heads=8, kv_heads=4, head_dim=256, hidden=2304, window=4096),
    _gemma3_kinds,
)


def _read_gemma3_text(fields: Fields, family: str) -> ModelShape:
    # Gemma3TextConfig.__post_init__: bidirectional attention (use_bidirectional_attention,
    # default False) makes the window sliding_window // 2 + 1.
    bidirectional = fields.switch("use_bidirectional_attention", False)
    read = _GEMMA3_LAYERS(fields, family)
    if bidirectional and read.sliding_window is not None:
        return attrs.evolve(read, sliding_window=read.sliding_window // 2 + 1)
    return read


_ONE_PAGE = "the memory model lays out one attention page size"


def _read_gemma4_text(fields: Fields, family: str) -> ModelShape:
    # Gemma4TextConfig: 30 layers, 8 heads, num_key_value_heads 4, head_dim 256,
    # hidden_size 2304, sliding_window 512; without layer_types every 6th layer is
    # full attention, and the last one always is (__post_init__).
    defaults = Attention(layers=30, heads=8, kv_heads=4, head_dim=256, hidden=2304, window=512)
    if "per_layer_config" in fields.fields:
        value = fields.raw("per_layer_config", None)
        raise fields.error("per_layer_config", value, f"must be absent: {_ONE_PAGE}")
    layers = fields.layers(defaults.layers)
    window = fields.integer("sliding_window", defaults.window)
    if fields.given("layer_types"):
        kinds = layer_types(fields, "layer_types", layers, _ATTENTION)
    else:
        kinds = every(6, SLIDING, FULL, layers)
    kinds[-1] = FULL
    bidirectional = fields.raw("use_bidirectional_attention", None)
    if bidirectional not in (None, "all", "vision"):
        raise fields.error(
            "use_bidirectional_attention", bidirectional, "must be all, vision or null"
        )
    if bidirectional == "all":
        window = window // 2 + 1
    kv_heads, head_dim = attention(fields, defaults)
    # The full-attention layers' sizes (__post_init__'s per_layer_config): head
    # size global_head_dim (default 512); KV heads num_global_key_value_heads
    # where attention_k_eq_v (default False) and it is given.
    if fields.integer("global_head_dim", 512) != head_dim:
        rule = f"must equal head_dim ({head_dim}): {_ONE_PAGE}"
        raise fields.error("global_head_dim", fields.raw("global_head_dim", 512), rule)
    if fields.switch("attention_k_eq_v", False):
        heads = fields.optional_int("num_global_key_value_heads", None)
        if heads not in (None, kv_heads):
            rule = f"must equal num_key_value_heads ({kv_heads}) with attention_k_eq_v: {_ONE_PAGE}"
            raise fields.error("num_global_key_value_heads", heads, rule)
    if fields.integer("num_kv_shared_layers", 0, low=0, high=MAX_LAYERS):
        rule = "must be 0: layers reading another layer's KV cache are not laid out"
        raise fields.error("num_kv_shared_layers", fields.raw("num_kv_shared_layers", 0), rule)
    return shape(fields, family, kinds, "layer_types", defaults, window)


# The Qwen3.5 text classes; their SSM dtype field is read by vLLM's
# Qwen3_5ForConditionalGenerationConfig (mamba_ssm_dtype, no default).
_QWEN3_5_TEXT = _gated_deltanet(
    # Qwen3_5TextConfig: 32 layers, 16 heads, num_key_value_heads 4, head_dim 256, hidden 4096.
    Attention(layers=32, heads=16, kv_heads=4, head_dim=256, hidden=4096),
    "mamba_ssm_dtype",
)
_QWEN3_5_MOE_TEXT = _gated_deltanet(
    # Qwen3_5MoeTextConfig: 40 layers, 16 heads, num_key_value_heads 2, head_dim 256, hidden 2048.
    Attention(layers=40, heads=16, kv_heads=2, head_dim=256, hidden=2048),
    "mamba_ssm_dtype",
)

READERS: dict[str, Reader] = {
    # GptOssConfig: 36 layers, 64 heads, num_key_value_heads 8, head_dim 64,
    # hidden_size 2880, sliding_window 128.
    "gpt_oss": _plain(Attention(36, 64, 8, 64, 2880, window=128), _gpt_oss_kinds),
    "gemma3": _wrapped("gemma3_text", _read_gemma3_text),
    "gemma3_text": _read_gemma3_text,
    "gemma4": _wrapped("gemma4_text", _read_gemma4_text),
    "gemma4_text": _read_gemma4_text,
    # LlamaConfig: 32 layers, 32 heads, num_key_value_heads None, head_dim None
    # (both may be null), hidden_size 4096; no sliding_window field.
    "llama": _plain(
        Attention(32, 32, None, None, 4096, nullable=("num_key_value_heads", "head_dim"))
    ),
    # MistralConfig: 32 layers, 32 heads, num_key_value_heads 8, head_dim None
    # (may be null), hidden_size 4096, sliding_window 4096.
    "mistral": _plain(Attention(32, 32, 8, None, 4096, window=4096, nullable=("head_dim",))),
    "nemotron_h": _read_nemotron_h,
    "qwen3": _read_qwen3,
    "qwen3_5": _wrapped("qwen3_5_text", _QWEN3_5_TEXT),
    "qwen3_5_moe": _wrapped("qwen3_5_moe_text", _QWEN3_5_MOE_TEXT),
    "qwen3_5_moe_text": _QWEN3_5_MOE_TEXT,
    "qwen3_5_text": _QWEN3_5_TEXT,
    # Qwen3NextConfig: 48 layers, 16 heads, num_key_value_heads 2, head_dim 256,
    # hidden_size 2048; vLLM reads no SSM dtype of it.
    "qwen3_next": _gated_deltanet(
        Attention(layers=48, heads=16, kv_heads=2, head_dim=256, hidden=2048), None
    ),
}
FAMILIES = tuple(sorted(READERS))
# Where vLLM may take the KV cache's dtype and the weights' from the checkpoint.
_QUANTIZED = ("quantization_config", "compression_config")


def read_config(source: str, fields: Mapping[str, Any]) -> ModelShape:
    """The shape of a parsed ``config.json`` (``source`` names it in errors); raises
    :class:`ModelConfigError` naming the first field at fault."""
    family = fields.get("model_type")
    if not isinstance(family, str):
        raise ModelConfigError(source, "model_type", family, "must be a string")
    if family not in READERS:
        closest = difflib.get_close_matches(family, FAMILIES, n=3, cutoff=0.0)
        rule = f"is not one of the {len(FAMILIES)} supported (closest: {', '.join(closest)})"
        raise ModelConfigError(source, "model_type", family, rule)
    for name in _QUANTIZED:
        if fields.get(name) is not None:
            rule = "must be absent: a quantized checkpoint's cache dtypes are not laid out"
            raise ModelConfigError(source, name, fields[name], f"{rule} (choose --kv-dtype)")
    return READERS[family](Fields(source, fields), family)
