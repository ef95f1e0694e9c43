"""Where an engine keeps a hybrid model's states, and what an HBM budget becomes there.

- ``vllm`` (vLLM 0.33.0): every group, states included, shares one pool of
  equal pages (``models``).
- ``sglang`` (SGLang 0.5.23): the states in a pool of their own, a share
  ``r / (1 + r)`` of the budget (``mem_cache/kv_cache_configurator.py``,
  ``KVCacheConfigurator._handle_max_mamba_cache``), the rest KV tokens at
  page 1 (``model_executor/pool_configurator.py``,
  ``DefaultPoolConfigurator.calculate_pool_sizes``), a slot in SGLang's state
  dtypes (``configs/mamba_utils.py``, ``mamba2_state_dtype``), in the
  ``extra_buffer`` cache mode SGLang resolves by default: the running
  request's two ping-pong slots charged, the replay's block its checkpoint
  grid (``runtime_context.mamba_checkpoint_grid``).
  ``tests/audit/sglang/test_layouts.py`` checks it against those functions.
- ``per-request-slot`` (tpu-inference before #3422, or with speculative decoding):
  a state slot per running request (``max_num_seqs + 1``, #3413), no prefix
  caching for hybrid models (#3358): every hit 0; vLLM's blocks of the rest.

What the replay keeps of SGLang's cache and leaves out: docs/hbm.md,
"Engines' layouts"; why: docs/design/engine-layouts.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs

from junction.core import GroupSpec

from .config_fields import Fields, GatedDeltaNetState, Mamba2State, ModelConfigError
from .configs import read_config
from .dtypes import BYTES
from .models import GIB, MemoryModel

__all__ = [
    "LAYOUTS",
    "MAX_NUM_SEQS",
    "SGLANG_RATIO",
    "SGLANG_SLOTS_PER_REQUEST",
    "SGLANG_TRACKING_SLOTS",
    "Layout",
    "Pools",
    "layout_of",
    "sglang_pools",
]

LAYOUTS = ("vllm", "sglang", "per-request-slot")
SGLANG_RATIO = 0.9  # ScheduleArgs.mamba_full_memory_ratio's fallback
# The overlap schedule (on by default) with the triton linear-attention backend resolves
# mamba_radix_cache_strategy "auto" to extra_buffer (arg_groups/overrides.py,
# _mamba_radix_cache_resolution): a running request holds its state and a ping-pong pair
# of tracked states (get_mamba_tracking_slots(extra_buffer=True, overlap=True)) from the
# state pool (memory_pool.py, _alloc_ping_pong_buffer).
SGLANG_TRACKING_SLOTS = 2
# KVCacheConfigurator._calculate_mamba_ratio there: 3 + the tracking slots;
# resolve_max_num_reqs serves no request with fewer slots.
SGLANG_SLOTS_PER_REQUEST = 3 + SGLANG_TRACKING_SLOTS
SGLANG_PAGE = 1  # ScheduleArgs.page_size resolved without a backend asking more
FLA_CHUNK = 64  # sglang.kernels.ops.attention.fla.chunk_delta_h.CHUNK_SIZE
NEMOTRON_H_CHUNK = 256  # sglang.srt.configs.nemotron_h.DEFAULT_MAMBA_CHUNK_SIZE
# vLLM's default max_num_seqs below 70 GiB a device (1024 on H100, H200, B200:
# engine/arg_utils.py, EngineArgs.get_batch_defaults).
MAX_NUM_SEQS = 256
_SSM_DTYPES = ("float32", "bfloat16", "float16")  # mamba2_state_dtype's dtype_map


@attrs.frozen
class Pools:
    """A budget laid out: the replay's block pool (its null block among them) and,
    where states live apart, their pool's slots."""

    blocks: int
    state_slots: int | None = None


@attrs.frozen
class Layout:
    """One layout of one model: the replay's groups and hash unit, whether a hit
    can be reused, and how a budget becomes pools (:meth:`pools`)."""

    name: str
    model: MemoryModel
    groups: tuple[GroupSpec, ...]
    block_size: int
    caching: bool
    block_bytes: int  # the replay's block of the block pool (sglang: its tokens' cells)
    slot_bytes: int  # a state pool's slot (0: no state pool)
    ratio: float | None = None  # sglang's mamba_full_memory_ratio
    running_slots: int = 0  # per-request-slot: max_num_seqs + 1 slots kept apart
    tracking_slots: int = 0  # sglang: the state pool's slots the running request tracks in

    def pools(self, gib: float) -> Pools:
        """``gib`` GiB as this layout's pools."""
        if self.name == "vllm":
            return Pools(self.model.blocks(gib))
        if self.name == "sglang":
            assert self.ratio is not None
            cell = self.block_bytes // self.block_size
            slots, tokens = sglang_pools(gib, self.slot_bytes, cell, self.ratio)
            return Pools(tokens // self.block_size + 1, slots)
        spare = gib * GIB - self.running_slots * self.slot_bytes
        return Pools(max(math.floor(spare / self.block_bytes), 0))

    def describe(self, gib: float) -> str:
        """``gib`` GiB in this layout's words."""
        pools = self.pools(gib)
        if pools.state_slots is None:
            return f"{gib:g} GiB = {pools.blocks:,} blocks"
        return f"{gib:g} GiB = {pools.blocks - 1:,} KV blocks + {pools.state_slots:,} state slots"

    def replay_slots(self, pools: Pools) -> int | None:
        """The replay's state pool of ``pools``: the engine's, less the slots the
        running request tracks in (arrivals are sequential: one request runs,
        and nothing is allocated between requests, so they are charged throughout)."""
        if pools.state_slots is None:
            return None
        return pools.state_slots - self.tracking_slots

    @property
    def text(self) -> str:
        """The layout in words (after the model's name)."""
        model = self.model
        if self.name == "vllm":
            return model.layout
        if self.name == "sglang":
            return (
                f"SGLang 0.5.23: KV pages of {SGLANG_PAGE} token counted in blocks of "
                f"{self.block_size} (its checkpoint grid), {self.block_bytes / 2**20:.2f} MiB; "
                f"states in a pool of their own, {self.slot_bytes / 2**20:.2f} MiB a slot, "
                f"{self.tracking_slots} of them the running request's ping-pong pair "
                f"(extra_buffer; --mamba-full-memory-ratio {self.ratio:g})"
            )
        return (
            f"one state slot per running request ({self.running_slots} x "
            f"{self.slot_bytes / 2**20:.2f} MiB), no prefix caching (every hit 0: "
            f"tpu-inference before #3422 or with speculative decoding, #3413); attention "
            f"in blocks of {self.block_size} tokens, {self.block_bytes / 2**20:.2f} MiB"
        )


def sglang_pools(gib: float, slot_bytes: int, cell_bytes: int, ratio: float) -> tuple[int, int]:
    """SGLang's state slots and KV tokens of a budget of ``gib`` GiB, in its own
    arithmetic (floats of GiB as it computes them): ``_handle_max_mamba_cache``,
    then ``DefaultPoolConfigurator.calculate_pool_sizes`` at page 1; the tokens
    0 where the states leave none."""
    share = gib * ratio / (1 + ratio) * (1 << 30)
    slots = int((share - slot_bytes) // slot_bytes)
    rest = gib - (slots + 1) * slot_bytes / (1 << 30)
    available = max(int(rest * (1 << 30)), 0)
    return slots, available // cell_bytes // SGLANG_PAGE * SGLANG_PAGE


def _sglang_slot_bytes(
    state: GatedDeltaNetState | Mamba2State, layers: int, ssm_dtype: str | None
) -> int:
    """One SGLang state slot: every state layer's conv part in bfloat16 and temporal
    part in ``ssm_dtype`` (float32 unless the config names one)."""
    per_layer = BYTES["bfloat16"] * state.conv_elements()
    per_layer += BYTES[ssm_dtype or "float32"] * state.ssm_elements()
    return per_layer * layers


def _sglang_ssm_dtype(name: str, fields: Mapping[str, Any]) -> str | None:
    """The ``mamba_ssm_dtype`` SGLang's ``mamba2_state_dtype`` reads for every state
    model: ``text_config``'s where it names the field (even null), else the root's;
    ``None`` (float32) where neither does. A value it does not know (SGLang warns
    and takes float32) is refused."""
    read = Fields(name, fields)
    text = read.raw("text_config", None)
    if isinstance(text, dict) and "mamba_ssm_dtype" in text:
        read = read.text()
    value = read.raw("mamba_ssm_dtype", None)
    if value is not None and value not in _SSM_DTYPES:
        raise read.error("mamba_ssm_dtype", value, f"must be one of {', '.join(_SSM_DTYPES)}")
    return None if value is None else str(value)


def _sglang_chunk(name: str, fields: Mapping[str, Any], model_type: str) -> int:
    """The model's Mamba chunk size as SGLang's config classes resolve it."""
    if model_type != "nemotron_h":
        return FLA_CHUNK  # Gated DeltaNet: no mamba_chunk_size on the config
    read = Fields(name, fields)
    legacy = read.optional_int("chunk_size", None)
    chunk = read.optional_int("mamba_chunk_size", None)
    return chunk or legacy or NEMOTRON_H_CHUNK


def layout_of(
    name: str,
    model: MemoryModel,
    fields: Mapping[str, Any],
    *,
    ratio: float = SGLANG_RATIO,
    max_num_seqs: int = MAX_NUM_SEQS,
) -> Layout:
    """``model`` (read from ``fields``) laid out as ``name`` (``ratio``: sglang's
    ``--mamba-full-memory-ratio``; ``max_num_seqs``: per-request-slot's running
    requests); :class:`ModelConfigError` for a model the layout cannot hold (one line)."""
    if name == "vllm":
        return Layout(name, model, model.groups(), model.block_size, True, model.block_bytes, 0)
    if not model.state_layers:
        raise ModelConfigError(
            model.name, "--layout", name, "needs a model with state layers (only vllm without)"
        )
    shape = read_config(model.name, fields)
    assert shape.state is not None
    full, window, _ = model.group_counts()
    if name == "sglang":
        if model.window_layers:
            raise ModelConfigError(
                model.name, "--layout", name, "SGLang's Mamba + window pools: not modelled"
            )
        ssm = _sglang_ssm_dtype(model.name, fields)
        slot = _sglang_slot_bytes(shape.state, model.state_layers, ssm)
        grid = math.lcm(_sglang_chunk(model.name, fields, shape.model_type), SGLANG_PAGE)
        cell = model.kv_bytes_per_token * model.full_layers
        groups = (GroupSpec.full(grid), GroupSpec.mamba(grid))
        return Layout(
            name,
            model,
            groups,
            grid,
            True,
            cell * grid,
            slot,
            ratio,
            tracking_slots=SGLANG_TRACKING_SLOTS,
        )
    # per-request-slot: vLLM's attention groups and block, the states outside the pool.
    attention = model.groups()[: full + window]
    return Layout(
        name,
        model,
        attention,
        model.block_size,
        False,
        model.block_bytes,
        model.state_bytes * model.state_layers,
        running_slots=max_num_seqs + 1,
    )
