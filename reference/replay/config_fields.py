"""A ``config.json``'s fields read and checked, and the shape a family's reader resolves them to.

Every field is read once through :class:`Fields`: its type (a bool is not an
int), its range, or the default of the family's transformers config class
where the file leaves it out. A field at fault is a :class:`ModelConfigError`,
one line naming it, its value and the rule. The family readers
(``configs``) build a :class:`ModelShape` from them with :func:`shape`.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any

import attrs

from junction.core import InvalidArgument

__all__ = [
    "DTYPES",
    "FULL",
    "MAMBA_DTYPES",
    "MAX_LAYERS",
    "MAX_SIZE",
    "NO_CACHE",
    "SLIDING",
    "STATE",
    "Attention",
    "Fields",
    "GatedDeltaNetState",
    "Mamba2State",
    "ModelConfigError",
    "ModelShape",
    "attention",
    "config_dtype",
    "every",
    "layer_types",
    "mamba_dtype",
    "shape",
]

# No published decoder has more than a few hundred layers; the limit refuses an
# absurd count before any per-layer list is built.
MAX_LAYERS = 1024
# Heads, head sizes, windows, kernels and state sizes: far above any published
# model's, low enough that the layout's arithmetic stays small.
MAX_SIZE = 2**24
DTYPES = ("bfloat16", "float16", "half", "float32", "float")
MAMBA_DTYPES = ("auto", "float32", "float16", "bfloat16")  # vLLM's MambaDType
FULL, SLIDING, STATE = "full_attention", "sliding_attention", "linear_attention"
# transformers' remap of legacy names (configuration_utils._LEGACY_LAYER_TYPE_REMAP).
_LEGACY = {"attention": FULL, "mamba": STATE}
NO_CACHE = ("mlp", "moe")  # nemotron_h's layers without a cache
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
    """One Gated DeltaNet layer's state sizes (Qwen3-Next, Qwen3.5)."""

    conv_kernel: int
    key_heads: int
    value_heads: int
    key_dim: int
    value_dim: int

    def conv_elements(self) -> int:
        """As vLLM's ``MambaStateShapeCalculator.gated_delta_net_state_shape`` (TP 1)."""
        return (self.conv_kernel - 1) * (
            2 * self.key_heads * self.key_dim + self.value_heads * self.value_dim
        )

    def ssm_elements(self) -> int:
        """The recurrent state's elements, as the same calculator."""
        return self.value_heads * self.key_dim * self.value_dim


@attrs.frozen
class Mamba2State:
    """One Mamba-2 layer's state sizes (Nemotron-H)."""

    conv_kernel: int
    heads: int
    head_dim: int
    groups: int
    state_size: int

    def conv_elements(self) -> int:
        """As vLLM's ``MambaStateShapeCalculator.mamba2_state_shape`` (TP 1)."""
        return (self.conv_kernel - 1) * (
            self.heads * self.head_dim + 2 * self.groups * self.state_size
        )

    def ssm_elements(self) -> int:
        """The SSM state's elements, as the same calculator."""
        return self.heads * self.head_dim * self.state_size


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
    dtype: str  # the config's, as vLLM reads it (config_dtype)
    state: GatedDeltaNetState | Mamba2State | None  # None where no layer keeps a state
    # The SSM state dtype the config asks vLLM for, where the family's vLLM
    # config hook reads one (``dtypes``); None where it reads none.
    ssm_dtype: str | None = None


class Fields:
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

    def text(self) -> Fields:
        """``text_config``'s fields, a wrapper's text model (its defaults if absent or null)."""
        text = self.raw("text_config", None)
        if text is None:
            text = {}
        if not isinstance(text, dict):
            raise self.error("text_config", text, "must be an object (the text model's fields)")
        return Fields(self.source, text, f"{self.prefix}text_config.")


def config_dtype(*sources: Fields) -> str:
    """The first of ``sources`` giving ``dtype``, else the legacy ``torch_dtype``
    (``PreTrainedConfig.__post_init__`` keeps ``dtype`` when both are given), as vLLM
    reads it (a wrapper first, then its text config); bf16 where none gives one."""
    for source in sources:
        for name in ("dtype", "torch_dtype"):
            if source.given(name):
                value = source.raw(name, None)
                if value not in DTYPES:
                    raise source.error(name, value, f"must be one of {', '.join(DTYPES)}")
                return str(value)
    # vLLM reads the weights' dtype then; every checkpoint here stores bf16, and a
    # float32 one would run in bf16 all the same (dtypes).
    return "bfloat16"


def mamba_dtype(fields: Fields, name: str, default: str | None) -> str | None:
    """A config's SSM state dtype ``name`` (one of vLLM's MambaDType), or ``default``."""
    value = fields.raw(name, default)
    if value is None and default is None:
        return None
    if value not in MAMBA_DTYPES:
        raise fields.error(name, value, f"must be one of {', '.join(MAMBA_DTYPES)}")
    return str(value)


@attrs.frozen
class Attention:
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


def attention(fields: Fields, defaults: Attention) -> tuple[int, int]:
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


def _maybe(fields: Fields, name: str, default: int | None, defaults: Attention) -> int | None:
    if name in defaults.nullable:
        return fields.optional_int(name, default)
    return fields.integer(name, default)


def layer_types(
    fields: Fields, name: str, layers: int | None, allowed: tuple[str, ...]
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


def every(period: int, first: str, last: str, layers: int) -> list[str]:
    """Layer ``i`` is ``last`` where ``(i + 1) % period == 0``, else ``first``."""
    return [first if (i + 1) % period else last for i in range(layers)]


def shape(
    fields: Fields,
    family: str,
    kinds: list[str],
    kinds_field: str,
    defaults: Attention,
    window: int | None,
    state: GatedDeltaNetState | Mamba2State | None = None,
    ssm_dtype: str | None = None,
) -> ModelShape:
    """The shape of a family's resolved fields: a cache to look up, a window where one slides."""
    if not any(kind in (FULL, SLIDING) for kind in kinds):
        raise fields.error(
            kinds_field, fields.raw(kinds_field, None), "no attention layer: nothing to look up"
        )
    sliding = SLIDING in kinds
    if sliding and window is None:
        raise fields.error(
            "sliding_window", None, "a positive int is needed by the sliding_attention layers"
        )
    kv_heads, head_dim = attention(fields, defaults)
    return ModelShape(
        model_type=family,
        layer_types=tuple(kinds),
        kv_heads=kv_heads,
        head_dim=head_dim,
        sliding_window=window if sliding else None,
        dtype=config_dtype(fields),
        state=state if STATE in kinds else None,
        ssm_dtype=ssm_dtype if STATE in kinds else None,
    )
