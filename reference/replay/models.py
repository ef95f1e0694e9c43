"""A model's KV-cache memory as vLLM 0.33.0 lays it out, from its ``config.json``.

The file is read through its transformers config class (its defaults fill
what the file leaves out; nothing is fetched). From it, as vLLM's own
calculators do (tensor parallel 1, cache dtype ``auto``): the bytes per
token of each attention layer, the bytes of each state layer's state, the
block (16 tokens, or with state layers the smallest multiple of 16 whose
attention page holds a state), and the groups of ``group_size`` layers
sharing one pool. :meth:`MemoryModel.groups` is that layout as a geometry's
groups, so the replay counts blocks as vLLM does; ``tests/replay/test_models.py``
checks each catalog model against vLLM's own functions.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from junction.core import GroupSpec, JunctionError, cdiv

__all__ = ["GIB", "MemoryModel", "ModelConfigError", "load_model_config", "memory_model"]

GIB = 2**30
KERNEL_BLOCK = 16  # FlashAttention's kernel block (MultipleOf(16)) and vLLM's default
_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4}
_STATE_FAMILIES = ("qwen3_next", "nemotron_h")
# The catalog: catalog/NAME.json, package data (its README records each file's source).
CATALOG_DIRECTORY = Path(__file__).resolve().parent / "catalog"
CATALOG = tuple(sorted(path.stem for path in CATALOG_DIRECTORY.glob("*.json")))


class ModelConfigError(JunctionError, ValueError):
    """A model config the memory model cannot read: one line naming the file and the field."""

    def __init__(self, source: str, field: str, problem: str) -> None:
        super().__init__(f"{source}: {field}: {problem}")
        self.source, self.field, self.problem = source, field, problem


@attrs.frozen
class MemoryModel:
    """What one model's KV cache takes, per kind of layer, and vLLM's groups of it."""

    name: str
    full_layers: int
    window_layers: int
    window: int | None
    state_layers: int
    kv_heads: int
    head_dim: int
    dtype_bytes: int
    state_bytes: int  # per state layer, one state
    block_size: int

    @property
    def kv_bytes_per_token(self) -> int:
        """Per attention layer and token: K and V."""
        return 2 * self.kv_heads * self.head_dim * self.dtype_bytes

    @property
    def page_bytes(self) -> int:
        """One layer's page: a block of an attention layer (a state is padded to it)."""
        return self.kv_bytes_per_token * self.block_size

    @property
    def group_size(self) -> int:
        """Layers per vLLM group (``_get_kv_cache_groups_uniform_page_size``)."""
        counts = [n for n in (self.full_layers, self.window_layers, self.state_layers) if n]
        fewest, most = min(counts), max(counts)
        return most if most < fewest * 1.5 else fewest

    def group_counts(self) -> tuple[int, int, int]:
        """vLLM groups of full attention, sliding window and state layers."""
        size = self.group_size
        return (
            cdiv(self.full_layers, size),
            cdiv(self.window_layers, size),
            cdiv(self.state_layers, size),
        )

    @property
    def block_bytes(self) -> int:
        """Bytes of one block of the shared pool: a page for each layer of a group."""
        return self.group_size * self.page_bytes

    def blocks(self, gib: float) -> int:
        """Blocks of a pool of ``gib`` GiB (the null block among them)."""
        return math.floor(gib * GIB / self.block_bytes)

    def groups(self) -> tuple[GroupSpec, ...]:
        """One group per vLLM group: full attention, then sliding window, then state."""
        full, window, state = self.group_counts()
        size = self.block_size
        specs = [GroupSpec.full(size)] * full
        if window:
            if self.window is None:
                raise ModelConfigError(self.name, "sliding_window", "missing for sliding layers")
            specs += [GroupSpec.sliding_window(size, self.window)] * window
        return (*specs, *[GroupSpec.mamba(size)] * state)

    @property
    def layout(self) -> str:
        """The blocks and groups, in words."""
        full, window, state = self.group_counts()
        kinds = [
            f"{count} {kind}"
            for count, kind in (
                (full, "full attention"),
                (window, f"sliding window {self.window}"),
                (state, "state"),
            )
            if count
        ]
        return (
            f"blocks of {self.block_size} tokens, {self.block_bytes / 2**20:.2f} MiB, shared by "
            f"{_count(sum((full, window, state)), 'group')} ({', '.join(kinds)}; "
            f"{_count(self.group_size, 'layer')} each)"
        )

    def describe(self, gib: float) -> str:
        """``gib`` GiB as blocks of the shared pool."""
        return f"{gib:g} GiB = {self.blocks(gib):,} blocks"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _positive(source: str, config: Any, field: str) -> int:
    value = getattr(config, field, None)
    if type(value) is not int or value < 1:
        raise ModelConfigError(source, field, f"must be a positive int, got {value!r}")
    return value


def _dtype_bytes(source: str, config: Any) -> int:
    dtype = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None) or "bfloat16"
    name = str(dtype).removeprefix("torch.")
    if name not in _DTYPE_BYTES:
        raise ModelConfigError(source, "dtype", f"{dtype!r} is not one of {sorted(_DTYPE_BYTES)}")
    return _DTYPE_BYTES[name]


def _state_bytes(source: str, config: Any, dtype: int) -> int:
    family = config.model_type
    if family == "qwen3_next":
        kernel = _positive(source, config, "linear_conv_kernel_dim")
        key_heads = _positive(source, config, "linear_num_key_heads")
        value_heads = _positive(source, config, "linear_num_value_heads")
        key_dim = _positive(source, config, "linear_key_head_dim")
        value_dim = _positive(source, config, "linear_value_head_dim")
        conv = (kernel - 1) * (2 * key_heads * key_dim + value_heads * value_dim)
        return dtype * (conv + value_heads * key_dim * value_dim)
    if family == "nemotron_h":
        kernel = _positive(source, config, "conv_kernel")
        heads = _positive(source, config, "mamba_num_heads")
        head_dim = _positive(source, config, "mamba_head_dim")
        groups = _positive(source, config, "n_groups")
        state = _positive(source, config, "ssm_state_size")
        conv = (kernel - 1) * (heads * head_dim + 2 * groups * state)
        return dtype * (conv + heads * head_dim * state)
    raise ModelConfigError(
        source,
        "model_type",
        f"{family!r} has state layers the memory model does not size "
        f"(it sizes {', '.join(_STATE_FAMILIES)})",
    )


def _config_error(name: str, family: str, error: Exception) -> ModelConfigError:
    """transformers' refusal of a config as one line naming the field it names."""
    text = str(error)
    named = re.match(r"Validation error for field '([^']+)':\s*(.*)", text, re.DOTALL)
    if named:
        return ModelConfigError(name, named[1], named[2].strip().splitlines()[0])
    problem = next((line.strip() for line in text.splitlines() if line.strip()), "")
    field = "model_type" if isinstance(error, ValueError) and family in text else "config"
    return ModelConfigError(name, field, problem or type(error).__name__)


def memory_model(name: str, fields: Mapping[str, Any]) -> MemoryModel:
    """The memory model of a config's fields (a parsed ``config.json``), named ``name``
    in errors; raises :class:`ModelConfigError` naming the field at fault."""
    import transformers  # the audit extra; only here

    family = fields.get("model_type")
    if not isinstance(family, str):
        raise ModelConfigError(name, "model_type", f"must be a string, got {family!r}")
    try:
        rest = {key: value for key, value in fields.items() if key != "model_type"}
        config = transformers.AutoConfig.for_model(family, **rest)
    except Exception as error:
        raise _config_error(name, family, error) from None
    config = config.get_text_config()
    layers = _positive(name, config, "num_hidden_layers")
    heads = _positive(name, config, "num_attention_heads")
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    if type(kv_heads) is not int or kv_heads < 1:
        raise ModelConfigError(
            name, "num_key_value_heads", f"must be a positive int, got {kv_heads!r}"
        )
    head_dim = getattr(config, "head_dim", None)
    if head_dim is None:
        head_dim = _positive(name, config, "hidden_size") // heads
    if type(head_dim) is not int or head_dim < 1:
        raise ModelConfigError(name, "head_dim", f"must be a positive int, got {head_dim!r}")
    dtype = _dtype_bytes(name, config)
    kinds = list(getattr(config, "layer_types", None) or [])
    if kinds and len(kinds) != layers:
        raise ModelConfigError(
            name, "layer_types", f"has {len(kinds)} entries for {layers} num_hidden_layers"
        )
    window = getattr(config, "sliding_window", None)
    if not kinds:
        sliding = window is not None and getattr(config, "use_sliding_window", True)
        kinds = ["sliding_attention" if sliding else "full_attention"] * layers
    full = sum(kind in ("full_attention", "attention") for kind in kinds)
    windowed = kinds.count("sliding_attention")
    state = kinds.count("linear_attention")
    if not full + windowed:
        raise ModelConfigError(name, "layer_types", "no attention layer: nothing to look up")
    if windowed and (type(window) is not int or window < 1):
        raise ModelConfigError(name, "sliding_window", f"must be a positive int, got {window!r}")
    kv_bytes = 2 * kv_heads * head_dim * dtype
    state_bytes = _state_bytes(name, config, dtype) if state else 0
    block = KERNEL_BLOCK
    if state_bytes:
        block = max(KERNEL_BLOCK, KERNEL_BLOCK * cdiv(state_bytes, KERNEL_BLOCK * kv_bytes))
    return MemoryModel(
        name=name,
        full_layers=full,
        window_layers=windowed,
        window=window if windowed else None,
        state_layers=state,
        kv_heads=kv_heads,
        head_dim=head_dim,
        dtype_bytes=dtype,
        state_bytes=state_bytes,
        block_size=block,
    )


def load_model_config(path: Path) -> MemoryModel:
    """:func:`memory_model` of a ``config.json`` file (one-line errors name the field)."""
    source = str(path)
    try:
        fields = json.loads(path.read_text())
    except OSError as error:
        raise ModelConfigError(source, "file", error.strerror or str(error)) from None
    except json.JSONDecodeError as error:
        raise ModelConfigError(source, "json", f"{error.msg} at line {error.lineno}") from None
    if not isinstance(fields, dict):
        raise ModelConfigError(source, "json", "must be an object")
    return memory_model(source, fields)


def catalog_model(name: str) -> MemoryModel:
    """The memory model of the catalog's ``name`` (one of :data:`CATALOG`)."""
    if name not in CATALOG:
        raise ModelConfigError(name, "model", f"not in the catalog ({', '.join(CATALOG)})")
    return attrs.evolve(load_model_config(CATALOG_DIRECTORY / f"{name}.json"), name=name)
