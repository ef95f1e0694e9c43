"""A model's KV-cache memory as vLLM 0.33.0 lays it out, from its ``config.json``.

The file is read by its family's reader (``configs``: its transformers config
class's defaults fill what the file leaves out, without importing
transformers; every field read is checked), its cache dtypes resolved as vLLM
resolves them, the user's choices included (``dtypes``). From it, as vLLM's
own calculators do (tensor parallel 1): the bytes per token of each attention
layer, the bytes of each state layer's state, the block (16 tokens, or with
state layers the smallest multiple of 16 whose attention page holds a state),
and the groups of ``group_size`` layers sharing one pool.
:meth:`MemoryModel.groups` is that layout as a geometry's groups, so the
replay counts blocks as vLLM does; ``tests/audit/test_cache_dtypes.py``
checks each catalog model's page, block and blocks at a budget against
vLLM's own code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from junction.core import GroupSpec, cdiv
from junction.reference.workloads.files import InputFileError, NotJSON, read_json

from .configs import ModelConfigError, ModelShape, read_config
from .dtypes import BYTES, CacheDtypes, cache_dtypes

__all__ = [
    "CATALOG",
    "GIB",
    "MemoryModel",
    "ModelConfigError",
    "catalog_fields",
    "catalog_model",
    "file_fields",
    "load_model_config",
    "memory_model",
    "shape_layout",
]

GIB = 2**30
KERNEL_BLOCK = 16  # FlashAttention's kernel block (MultipleOf(16)) and vLLM's default
# The catalog: catalog/NAME.json, package data (its README records each file's source).
CATALOG_DIRECTORY = Path(__file__).resolve().parent / "catalog"
CATALOG = tuple(sorted(path.stem for path in CATALOG_DIRECTORY.glob("*.json")))


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
    dtypes: CacheDtypes
    state_bytes: int  # per state layer, one state
    block_size: int

    @property
    def kv_bytes_per_token(self) -> int:
        """Per attention layer and token: K and V."""
        return 2 * self.kv_heads * self.head_dim * BYTES[self.dtypes.kv]

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
                raise ModelConfigError(
                    self.name, "sliding_window", None, "needed by sliding layers"
                )
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
            f"{_count(self.group_size, 'layer')} each); {self.dtypes.describe(bool(state))}"
        )

    def describe(self, gib: float) -> str:
        """``gib`` GiB as blocks of the shared pool."""
        return f"{gib:g} GiB = {self.blocks(gib):,} blocks"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def shape_layout(
    name: str, shape: ModelShape, kv_dtype: str = "auto", state_dtype: str = "auto"
) -> MemoryModel:
    """The memory model of a resolved config: vLLM 0.33.0's page and block from its sizes,
    under ``--kv-dtype`` and ``--state-dtype`` (:func:`dtypes.cache_dtypes`)."""
    dtypes = cache_dtypes(name, shape, kv_dtype, state_dtype)
    kinds = shape.layer_types
    windowed, stateful = kinds.count("sliding_attention"), kinds.count("linear_attention")
    kv_bytes = 2 * shape.kv_heads * shape.head_dim * BYTES[dtypes.kv]
    state_bytes = 0
    if stateful and shape.state is not None:
        state_bytes = BYTES[dtypes.conv] * shape.state.conv_elements()
        state_bytes += BYTES[dtypes.ssm] * shape.state.ssm_elements()
    block = KERNEL_BLOCK
    if state_bytes:
        # vLLM's Platform._align_hybrid_block_size: the smallest multiple of the
        # kernel block whose attention page holds one state.
        block = max(KERNEL_BLOCK, KERNEL_BLOCK * cdiv(state_bytes, KERNEL_BLOCK * kv_bytes))
    return MemoryModel(
        name=name,
        full_layers=kinds.count("full_attention"),
        window_layers=windowed,
        window=shape.sliding_window if windowed else None,
        state_layers=stateful,
        kv_heads=shape.kv_heads,
        head_dim=shape.head_dim,
        dtypes=dtypes,
        state_bytes=state_bytes,
        block_size=block,
    )


def memory_model(
    name: str, fields: Mapping[str, Any], kv_dtype: str = "auto", state_dtype: str = "auto"
) -> MemoryModel:
    """The memory model of a config's fields (a parsed ``config.json``), named ``name``
    in errors; raises :class:`ModelConfigError` naming the field (or option) at fault."""
    return shape_layout(name, read_config(name, fields), kv_dtype, state_dtype)


def file_fields(path: Path) -> dict[str, Any]:
    """A ``config.json`` file's fields, read as every input is (``workloads.files``:
    a regular file, capped); one-line errors name the file."""
    source = str(path)
    try:
        fields = read_json(path)
    except NotJSON as error:
        rule = f"must be JSON ({error.detail})"
        raise ModelConfigError(source, "json", "JSONDecodeError", rule) from None
    except InputFileError as error:
        raise ModelConfigError(source, "file", source, str(error)) from None
    if not isinstance(fields, dict):
        raise ModelConfigError(source, "json", type(fields).__name__, "must be an object")
    return fields


def load_model_config(path: Path, kv_dtype: str = "auto", state_dtype: str = "auto") -> MemoryModel:
    """:func:`memory_model` of a ``config.json`` file, named by its path in errors."""
    return memory_model(str(path), file_fields(path), kv_dtype, state_dtype)


def catalog_fields(name: str) -> dict[str, Any]:
    """The fields of the catalog's ``name`` (one of :data:`CATALOG`), named ``name``
    in errors."""
    if name not in CATALOG:
        raise ModelConfigError(name, "model", name, f"must be one of {', '.join(CATALOG)}")
    return file_fields(CATALOG_DIRECTORY / f"{name}.json")


def catalog_model(name: str, kv_dtype: str = "auto", state_dtype: str = "auto") -> MemoryModel:
    """The memory model of the catalog's ``name`` (one of :data:`CATALOG`), named
    ``name`` in errors."""
    return memory_model(name, catalog_fields(name), kv_dtype, state_dtype)
