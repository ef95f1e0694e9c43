"""A model's ``config.json`` read into what its KV-cache layout depends on, without transformers.

One reader per supported ``model_type`` fills each field the file leaves out
with the default its transformers 5.20.2 config class fills in (the class and
field are named beside each default), derives what the class derives (the
layer types from a pattern, an interval or a switch; the head size from the
hidden size) and checks every field it reads: its type (a bool is not an
int), its range, and the agreement of a layer pattern with the layer count.
A field at fault is refused in one line naming it, its value and the rule.
``tests/replay/test_config_readers.py`` checks, where transformers is
installed, that each reader gives exactly what the class gives.
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from junction.core import InvalidArgument

__all__ = [
    "FAMILIES",
    "MAX_LAYERS",
    "MAX_SIZE",
    "GatedDeltaNetState",
    "Mamba2State",
    "ModelConfigError",
    "ModelShape",
    "read_config",
]

# No published decoder has more than a few hundred layers; the limit refuses an
# absurd count before any per-layer list is built.
MAX_LAYERS = 1024
# Heads, head sizes, windows, kernels and state sizes: far above any published
# model's, low enough that the layout's arithmetic stays small.
MAX_SIZE = 2**24
DTYPES = ("bfloat16", "float16", "half", "float32", "float")
_FULL, _SLIDING, _STATE = "full_attention", "sliding_attention", "linear_attention"
# transformers' remap of legacy names (configuration_utils._LEGACY_LAYER_TYPE_REMAP).
_LEGACY = {"attention": _FULL, "mamba": _STATE}
_NO_CACHE = ("mlp", "moe")  # nemotron_h's layers without a cache
_UNSET = object()


def _short(value: object) -> str:
    """``value``'s repr, cut to a few dozen characters (a 10**30 or a 1,000-entry list)."""
    shown = reprlib.Repr()
    shown.maxstring, shown.maxother, shown.maxlist, shown.maxlong = 40, 40, 4, 24
    return shown.repr(value)


class ModelConfigError(InvalidArgument):
    """A config field the memory model refuses: ``SOURCE: FIELD: RULE, got VALUE``, one line."""

    def __init__(self, source: str, field: str, value: object, rule: str) -> None:
        super().__init__(field, value, rule)
        got = "" if value is _UNSET else f", got {_short(value)}"
        self.args = (f"{source}: {field}: {rule}{got}",)
        self.source, self.field = source, field

    def __reduce__(self) -> Any:
        return type(self), (self.source, self.field, self.value, self.rule)


@attrs.frozen
class GatedDeltaNetState:
    """One Gated DeltaNet layer's state sizes (Qwen3-Next)."""

    conv_kernel: int
    key_heads: int
    value_heads: int
    key_dim: int
    value_dim: int

    def elements(self) -> int:
        """The conv state's and the recurrent state's elements, as vLLM's
        ``MambaStateShapeCalculator.gated_delta_net_state_shape`` (TP 1)."""
        conv = (self.conv_kernel - 1) * (
            2 * self.key_heads * self.key_dim + self.value_heads * self.value_dim
        )
        return conv + self.value_heads * self.key_dim * self.value_dim


@attrs.frozen
class Mamba2State:
    """One Mamba-2 layer's state sizes (Nemotron-H)."""

    conv_kernel: int
    heads: int
    head_dim: int
    groups: int
    state_size: int

    def elements(self) -> int:
        """As vLLM's ``MambaStateShapeCalculator.mamba2_state_shape`` (TP 1)."""
        conv = (self.conv_kernel - 1) * (
            self.heads * self.head_dim + 2 * self.groups * self.state_size
        )
        return conv + self.heads * self.head_dim * self.state_size


@attrs.frozen
class ModelShape:
    """What a model's cache layout depends on, every default filled in."""

    model_type: str
    # One per layer, transformers' names: full_attention, sliding_attention,
    # linear_attention (a state), mlp or moe (no cache).
    layer_types: tuple[str, ...]
    kv_heads: int
    head_dim: int
    sliding_window: int | None  # None where no layer slides
    dtype: str
    state: GatedDeltaNetState | Mamba2State | None  # None where no layer keeps a state


class _Fields:
    """A config's fields, each read once, checked, or its class's default."""

    def __init__(self, source: str, fields: Mapping[str, Any], prefix: str = "") -> None:
        self.source, self.fields, self.prefix = source, fields, prefix

    def error(self, name: str, value: object, rule: str) -> ModelConfigError:
        return ModelConfigError(self.source, self.prefix + name, value, rule)

    def given(self, name: str) -> bool:
        return self.fields.get(name) is not None

    def raw(self, name: str, default: object) -> Any:
        # An explicit null is null, as transformers keeps it (then the class's rule for None).
        return self.fields.get(name, default)

    def integer(self, name: str, default: object, low: int = 1, high: int = MAX_SIZE) -> int:
        value = self.raw(name, default)
        if type(value) is not int or not low <= value <= high:
            raise self.error(name, value, f"must be an int from {low} to {high:,}")
        return value

    def optional_int(self, name: str, default: object, high: int = MAX_SIZE) -> int | None:
        return None if self.raw(name, default) is None else self.integer(name, default, high=high)

    def switch(self, name: str, default: bool) -> bool:
        value = self.raw(name, default)
        if value is None:
            return False
        if type(value) is not bool:
            raise self.error(name, value, "must be true or false")
        return value

    def layers(self, default: int) -> int:
        return self.integer("num_hidden_layers", default, high=MAX_LAYERS)


def _dtype(fields: _Fields, outer: _Fields | None = None) -> str:
    """``dtype``, else the legacy ``torch_dtype`` (``PreTrainedConfig.__post_init__``
    keeps ``dtype`` when both are given), else the wrapper's, else bf16."""
    for source in (fields, outer):
        if source is None:
            continue
        for name in ("dtype", "torch_dtype"):
            if source.given(name):
                value = source.raw(name, None)
                if value not in DTYPES:
                    raise source.error(name, value, f"must be one of {', '.join(DTYPES)}")
                return str(value)
    return "bfloat16"  # PreTrainedConfig.dtype is None; the checkpoints' weights are bf16


@attrs.frozen
class _Attention:
    """A family's attention defaults: its config class's field defaults."""

    layers: int
    heads: int
    kv_heads: int | None  # None: as many as the heads
    head_dim: int | None  # None: hidden_size // num_attention_heads
    hidden: int
    window: int | None = None
    # The fields the class types ``int | None``: given null, the class derives them
    # (``__post_init__``); elsewhere a null is refused, as the class refuses it.
    nullable: tuple[str, ...] = ()


def _attention(fields: _Fields, defaults: _Attention) -> tuple[int, int]:
    """KV heads and head size; a null ``num_key_value_heads`` is the heads, a null
    ``head_dim`` ``hidden_size // num_attention_heads`` (each class's ``__post_init__``)."""
    heads = fields.integer("num_attention_heads", defaults.heads)
    kv_heads = _maybe(fields, "num_key_value_heads", defaults.kv_heads, defaults) or heads
    if heads % kv_heads:
        rule = f"must divide num_attention_heads ({heads})"
        raise fields.error("num_key_value_heads", kv_heads, rule)
    head_dim = _maybe(fields, "head_dim", defaults.head_dim, defaults)
    if head_dim is None:
        hidden = fields.integer("hidden_size", defaults.hidden)
        if hidden % heads:
            rule = f"must be a multiple of num_attention_heads ({heads}) when head_dim is not given"
            raise fields.error("hidden_size", hidden, rule)
        head_dim = hidden // heads
    return kv_heads, head_dim


def _maybe(fields: _Fields, name: str, default: int | None, defaults: _Attention) -> int | None:
    if name in defaults.nullable:
        return fields.optional_int(name, default)
    return fields.integer(name, default)


def _layer_types(
    fields: _Fields, name: str, layers: int | None, allowed: tuple[str, ...]
) -> list[str]:
    """The given per-layer list ``name``: legacy names remapped, each allowed, one per layer."""
    value = fields.raw(name, None)
    if not isinstance(value, list) or not all(isinstance(kind, str) for kind in value):
        raise fields.error(name, value, "must be a list of layer type names")
    if not 1 <= len(value) <= MAX_LAYERS:
        raise fields.error(name, value, f"must have 1 to {MAX_LAYERS:,} entries")
    kinds = [_LEGACY.get(str(kind), str(kind)) for kind in value]
    unknown = sorted({kind for kind in kinds if kind not in allowed})
    if unknown:
        rule = f"entries must be among {', '.join(allowed)} (not {', '.join(unknown)})"
        raise fields.error(name, value, rule)
    if layers is not None and len(kinds) != layers:
        raise fields.error(
            name, value, f"must have one entry per layer ({layers} num_hidden_layers)"
        )
    return kinds


def _shape(
    fields: _Fields,
    family: str,
    kinds: list[str],
    kinds_field: str,
    defaults: _Attention,
    window: int | None,
    state: GatedDeltaNetState | Mamba2State | None = None,
) -> ModelShape:
    """The shape of a family's resolved fields: a cache to look up, a window where one slides."""
    if not any(kind in (_FULL, _SLIDING) for kind in kinds):
        raise fields.error(
            kinds_field, fields.raw(kinds_field, None), "no attention layer: nothing to look up"
        )
    sliding = _SLIDING in kinds
    if sliding and window is None:
        raise fields.error(
            "sliding_window", None, "a positive int is needed by the sliding_attention layers"
        )
    kv_heads, head_dim = _attention(fields, defaults)
    return ModelShape(
        model_type=family,
        layer_types=tuple(kinds),
        kv_heads=kv_heads,
        head_dim=head_dim,
        sliding_window=window if sliding else None,
        dtype=_dtype(fields),
        state=state if _STATE in kinds else None,
    )


_ATTENTION = (_FULL, _SLIDING)


def _plain(
    defaults: _Attention,
    default_kinds: Callable[[_Fields, int, int | None], list[str]] | None = None,
) -> Callable[[_Fields, str], ModelShape]:
    """A reader of an attention-only family: ``layer_types`` if given, else ``default_kinds``
    (the class's ``__post_init__``), else every layer sliding where a ``sliding_window`` is set."""

    def read(fields: _Fields, family: str) -> ModelShape:
        layers = fields.layers(defaults.layers)
        window = fields.optional_int("sliding_window", defaults.window)
        if fields.given("layer_types"):
            kinds = _layer_types(fields, "layer_types", layers, _ATTENTION)
        elif default_kinds is not None:
            kinds = default_kinds(fields, layers, window)
        else:
            slides = window is not None and fields.switch("use_sliding_window", True)
            kinds = [_SLIDING if slides else _FULL] * layers
        return _shape(fields, family, kinds, "layer_types", defaults, window)

    return read


def _every(period: int, first: str, last: str, layers: int) -> list[str]:
    """Layer ``i`` is ``last`` where ``(i + 1) % period == 0``, else ``first``."""
    return [first if (i + 1) % period else last for i in range(layers)]


def _read_qwen3(fields: _Fields, family: str) -> ModelShape:
    # Qwen3Config: 32 layers, 32 heads, num_key_value_heads 32, head_dim 128,
    # hidden_size 4096, sliding_window 4096 (kept only with use_sliding_window);
    # num_key_value_heads may be null.
    defaults = _Attention(32, 32, 32, 128, 4096, window=4096, nullable=("num_key_value_heads",))
    layers = fields.layers(defaults.layers)
    window = fields.optional_int("sliding_window", defaults.window)
    if not fields.switch("use_sliding_window", False):  # Qwen3Config.use_sliding_window: False
        window = None
    if fields.given("layer_types"):
        kinds = _layer_types(fields, "layer_types", layers, _ATTENTION)
    else:
        # Qwen3Config.__post_init__: with a window, the layers from max_window_layers
        # (default 28) on slide.
        since = fields.integer("max_window_layers", 28, low=0, high=MAX_LAYERS)
        kinds = [_SLIDING if window is not None and i >= since else _FULL for i in range(layers)]
    return _shape(fields, family, kinds, "layer_types", defaults, window)


def _read_qwen3_next(fields: _Fields, family: str) -> ModelShape:
    # Qwen3NextConfig: 48 layers, 16 heads, num_key_value_heads 2, head_dim 256,
    # hidden_size 2048; without layer_types, every full_attention_interval-th
    # layer (default 4) is full attention, the rest Gated DeltaNet (__post_init__).
    defaults = _Attention(layers=48, heads=16, kv_heads=2, head_dim=256, hidden=2048)
    layers = fields.layers(defaults.layers)
    if fields.given("layer_types"):
        kinds, kinds_field = (
            _layer_types(fields, "layer_types", layers, (*_ATTENTION, _STATE)),
            "layer_types",
        )
    else:
        interval = fields.integer("full_attention_interval", 4, high=MAX_LAYERS)
        kinds, kinds_field = _every(interval, _STATE, _FULL, layers), "full_attention_interval"
    state = GatedDeltaNetState(
        # Qwen3NextConfig: linear_conv_kernel_dim 4, linear_num_key_heads 16,
        # linear_num_value_heads 32, linear_key_head_dim 128, linear_value_head_dim 128.
        conv_kernel=fields.integer("linear_conv_kernel_dim", 4),
        key_heads=fields.integer("linear_num_key_heads", 16),
        value_heads=fields.integer("linear_num_value_heads", 32),
        key_dim=fields.integer("linear_key_head_dim", 128),
        value_dim=fields.integer("linear_value_head_dim", 128),
    )
    window = fields.optional_int("sliding_window", None)  # not a Qwen3NextConfig field
    return _shape(fields, family, kinds, kinds_field, defaults, window, state)


# NemotronHConfig._pattern_to_list.
_PATTERN = {"M": _STATE, "E": "moe", "*": _FULL, "-": "mlp"}
_NEMOTRON_KINDS = (_FULL, _STATE, *_NO_CACHE)


def _read_nemotron_h(fields: _Fields, family: str) -> ModelShape:
    # NemotronHConfig: 32 heads, num_key_value_heads 8, head_dim 128, hidden_size
    # 4096. Its layers are layers_block_type (alias layer_types), else the
    # hybrid_override_pattern's letters, else four layers (linear_attention,
    # moe, full_attention, mlp). The class ignores num_hidden_layers; here,
    # given, it must agree with them.
    defaults = _Attention(layers=0, heads=32, kv_heads=8, head_dim=128, hidden=4096)
    count = fields.optional_int("num_hidden_layers", None, high=MAX_LAYERS)
    named = next((n for n in ("layers_block_type", "layer_types") if fields.given(n)), None)
    if named is not None:
        kinds, kinds_field = _layer_types(fields, named, count, _NEMOTRON_KINDS), named
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
        kinds, kinds_field = [_STATE, "moe", _FULL, "mlp"], "num_hidden_layers"
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
    window = fields.optional_int("sliding_window", None)  # NemotronHConfig.sliding_window: None
    return _shape(fields, family, kinds, kinds_field, defaults, window, state)


def _gemma3_kinds(fields: _Fields, layers: int, window: int | None) -> list[str]:
    # Gemma3TextConfig.__post_init__: sliding_window_pattern (default 6).
    period = fields.integer("sliding_window_pattern", 6, high=MAX_LAYERS)
    return _every(period, _SLIDING, _FULL, layers)


def _gpt_oss_kinds(fields: _Fields, layers: int, window: int | None) -> list[str]:
    return _every(2, _SLIDING, _FULL, layers)  # GptOssConfig.__post_init__: alternating


_GEMMA3_LAYERS = _plain(
    # Gemma3TextConfig: 26 layers, 8 heads, num_key_value_heads 4, head_dim 256,
    # hidden_size 2304, sliding_window 4096.
    _Attention(layers=26, heads=8, kv_heads=4, head_dim=256, hidden=2304, window=4096),
    _gemma3_kinds,
)


def _read_gemma3_text(fields: _Fields, family: str) -> ModelShape:
    # Gemma3TextConfig.__post_init__: bidirectional attention (use_bidirectional_attention,
    # default False) makes the window sliding_window // 2 + 1.
    bidirectional = fields.switch("use_bidirectional_attention", False)
    shape = _GEMMA3_LAYERS(fields, family)
    if bidirectional and shape.sliding_window is not None:
        return attrs.evolve(shape, sliding_window=shape.sliding_window // 2 + 1)
    return shape


def _read_gemma3(fields: _Fields, family: str) -> ModelShape:
    """Gemma3Config: its text_config (a Gemma3TextConfig, defaults if absent) is the model."""
    text = fields.raw("text_config", None)
    if text is None:
        text = {}
    if not isinstance(text, dict):
        raise fields.error("text_config", text, "must be an object (a Gemma3TextConfig's fields)")
    inner = _Fields(fields.source, text, "text_config.")
    shape = _read_gemma3_text(inner, "gemma3_text")
    return attrs.evolve(shape, model_type=family, dtype=_dtype(inner, fields))


READERS: dict[str, Callable[[_Fields, str], ModelShape]] = {
    # GptOssConfig: 36 layers, 64 heads, num_key_value_heads 8, head_dim 64,
    # hidden_size 2880, sliding_window 128.
    "gpt_oss": _plain(_Attention(36, 64, 8, 64, 2880, window=128), _gpt_oss_kinds),
    "gemma3": _read_gemma3,
    "gemma3_text": _read_gemma3_text,
    # LlamaConfig: 32 layers, 32 heads, num_key_value_heads None, head_dim None
    # (both may be null), hidden_size 4096; no sliding_window field.
    "llama": _plain(
        _Attention(32, 32, None, None, 4096, nullable=("num_key_value_heads", "head_dim"))
    ),
    # MistralConfig: 32 layers, 32 heads, num_key_value_heads 8, head_dim None
    # (may be null), hidden_size 4096, sliding_window 4096.
    "mistral": _plain(_Attention(32, 32, 8, None, 4096, window=4096, nullable=("head_dim",))),
    "nemotron_h": _read_nemotron_h,
    "qwen3": _read_qwen3,
    "qwen3_next": _read_qwen3_next,
}
FAMILIES = tuple(sorted(READERS))


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
    return READERS[family](_Fields(source, fields), family)
