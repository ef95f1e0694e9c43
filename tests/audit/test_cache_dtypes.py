"""Each catalog model's cache dtypes, page, block and blocks at a budget are vLLM 0.33.0's own.

For every catalog model (and variants exercising each dtype rule and the
families beside the catalog), under the user's choices of ``--kv-dtype`` and
``--state-dtype``, vLLM's own code runs from the family's transformers
config: the model's dtype (``_get_and_verify_dtype``, ``auto``), the model's
own config hook (``MODELS_CONFIG_MAP[architecture]``: Nemotron-H's float32
SSM state, Qwen3.5's ``mamba_ssm_dtype``), the float-KV check
(``VllmConfig._reject_mismatched_float_kv_cache``), the hybrid set-up
(``HybridAttentionMambaModelConfig``), the block
(``Platform._align_hybrid_block_size`` with the model class's state
calculators), each layer's spec (``Attention.get_kv_cache_spec``,
``MambaBase.get_kv_cache_spec``), the groups (``get_kv_cache_groups``), the
layout (``resolve_kv_cache_layout``) and the blocks of a budget
(``get_kv_cache_config_from_groups``). The memory model must give the same
dtypes, state bytes, block, page, groups, bytes per block and blocks at
3, 12, 20 and 48 GiB, and refuse what vLLM refuses.

Stood in: a CUDA platform with bf16 (its supported dtypes), no weights
(vLLM reads a dtype the config leaves out from them: float32 without), the
FlashAttention backend (kernel blocks ``MultipleOf(16)``, as
``test_presets``), the engine's ``VllmConfig`` (a namespace holding what
these functions read), each layer (a namespace holding what its
constructor computes), and for Qwen3.5, whose model module imports
torchvision (not in the ``audit`` extra), Qwen3-Next's class, whose two
state classmethods make the same calculator calls.
"""

from __future__ import annotations

import json
import types
from typing import Any

import pytest

from junction.reference.replay.configs import read_config
from junction.reference.replay.models import (
    CATALOG,
    CATALOG_DIRECTORY,
    GIB,
    MemoryModel,
    ModelConfigError,
    shape_layout,
)
from tests.audit.test_presets import _backend
from tests.replay.test_config_readers import by_transformers

BUDGETS_GIB = (3, 12, 20, 48)
# The architecture a family's checkpoints name (vLLM's config hooks are keyed by it).
ARCHITECTURES = {
    "gemma3": "Gemma3ForConditionalGeneration",
    "gemma3_text": "Gemma3ForCausalLM",
    "gemma4_text": "Gemma4ForCausalLM",
    "gpt_oss": "GptOssForCausalLM",
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "nemotron_h": "NemotronHForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen3_5": "Qwen3_5ForConditionalGeneration",
    "qwen3_5_moe_text": "Qwen3_5MoeForCausalLM",
    "qwen3_next": "Qwen3NextForCausalLM",
}
# The model class whose state classmethods size a state (Qwen3.5's stood in).
STATE_CLASSES = {
    "NemotronHForCausalLM": "NemotronHForCausalLM",
    "Qwen3NextForCausalLM": "Qwen3NextForCausalLM",
    "Qwen3_5ForConditionalGeneration": "Qwen3NextForCausalLM",
    "Qwen3_5MoeForCausalLM": "Qwen3NextForCausalLM",
}
CHOICES = [("auto", "auto"), ("fp8", "auto"), ("auto", "bfloat16"), ("auto", "float32")]
VARIANTS: list[tuple[str, dict[str, Any], tuple[str, str]]] = [
    (
        "float32 weights",
        {"model_type": "llama", "num_hidden_layers": 4, "dtype": "float32"},
        ("auto", "auto"),
    ),
    (
        "float16 weights",
        {"model_type": "llama", "num_hidden_layers": 4, "dtype": "float16"},
        ("float16", "auto"),
    ),
    (
        "float16 Gemma 3",
        {"model_type": "gemma3_text", "num_hidden_layers": 12, "torch_dtype": "float16"},
        ("auto", "auto"),
    ),
    (
        "Nemotron-H, its SSM dtype auto",
        {
            "model_type": "nemotron_h",
            "hybrid_override_pattern": "M-M*",
            "mamba_ssm_cache_dtype": "auto",
        },
        ("auto", "auto"),
    ),
    (
        "Nemotron-H, float16",
        {"model_type": "nemotron_h", "hybrid_override_pattern": "M-M*-", "dtype": "float16"},
        ("fp8_e5m2", "auto"),
    ),
    (
        "Qwen3.5, float32 SSM",
        {
            "model_type": "qwen3_5",
            "text_config": {"num_hidden_layers": 8, "mamba_ssm_dtype": "float32"},
        },
        ("auto", "auto"),
    ),
    (
        "Qwen3.5 MoE, chosen SSM",
        {"model_type": "qwen3_5_moe_text", "num_hidden_layers": 8, "mamba_ssm_dtype": "float32"},
        ("fp8", "float16"),
    ),
    (
        "Gemma 4, one page size",
        {"model_type": "gemma4_text", "num_hidden_layers": 12, "global_head_dim": 256},
        ("auto", "auto"),
    ),
]
REFUSED: list[tuple[str, dict[str, Any], tuple[str, str]]] = [
    (
        "bf16 KV, fp16 model",
        {"model_type": "llama", "num_hidden_layers": 2, "dtype": "float16"},
        ("bfloat16", "auto"),
    ),
    (
        "fp16 KV, fp32 model",
        {"model_type": "qwen3", "num_hidden_layers": 2, "dtype": "float32"},
        ("float16", "auto"),
    ),
]


def _catalog(name: str) -> dict[str, Any]:
    fields: dict[str, Any] = json.loads((CATALOG_DIRECTORY / f"{name}.json").read_text())
    return fields


def _ours(fields: dict[str, Any], kv: str, state: str) -> MemoryModel:
    return shape_layout("config.json", read_config("config.json", fields), kv, state)


class _Layout:
    """vLLM's cache of one config under one choice of dtypes: its specs, groups and blocks."""

    def __init__(self, fields: dict[str, Any], kv: str, state: str) -> None:
        import torch
        import transformers
        from vllm.config import model as model_config_module
        from vllm.config.cache import CacheConfig
        from vllm.config.vllm import VllmConfig
        from vllm.model_executor.models.config import (
            MODELS_CONFIG_MAP,
            HybridAttentionMambaModelConfig,
        )
        from vllm.platforms.interface import Platform
        from vllm.transformers_utils import model_arch_config_convertor as convertor

        logs: Any = transformers.logging
        logs.set_verbosity_error()  # mistral's layer_types warn, as they should
        rest = dict(fields)
        family = rest.pop("model_type")
        hf = transformers.AutoConfig.for_model(family, **rest)
        text = hf.get_text_config()
        shape = by_transformers(transformers, fields)
        self.kinds, self.window = shape.layer_types, shape.sliding_window
        self.backend = backend = _backend()
        cuda = types.SimpleNamespace(
            supported_dtypes=[torch.bfloat16, torch.float16, torch.float32],
            is_cpu=lambda: False,
            get_device_name=lambda: "a CUDA GPU with bf16",
            get_device_capability=lambda: None,
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(model_config_module, "current_platform", cuda)
            # No weights to read a dtype from (vLLM then takes float32), and no hub.
            patch.setattr(convertor, "get_safetensors_params_metadata", lambda *a, **k: {})
            dtype = model_config_module._get_and_verify_dtype(
                "config.json", hf, "auto", is_pooling_model=False
            )
        architecture = ARCHITECTURES[family]
        self.cache = cache = CacheConfig(
            cache_dtype=kv,
            mamba_cache_dtype=state,
            mamba_ssm_cache_dtype=state,
            enable_prefix_caching=True,
        )
        cache.block_size = backend.get_preferred_block_size(CacheConfig.DEFAULT_BLOCK_SIZE)
        hybrid = "linear_attention" in self.kinds
        self.model_config = types.SimpleNamespace(
            hf_config=hf,
            hf_text_config=text,
            dtype=dtype,
            use_mla=False,
            architecture=architecture,
            is_hybrid=hybrid,
            max_model_len=8192,
            model_impl="auto",
            runner_type="generate",
            convert_type="none",
            get_num_kv_heads=lambda parallel: shape.kv_heads,
            get_head_size=lambda: shape.head_dim,
            model_arch_config=_ArchConfig(shape.head_dim, len(self.kinds)),
        )
        self.config = types.SimpleNamespace(
            cache_config=cache,
            model_config=self.model_config,
            parallel_config=types.SimpleNamespace(
                tensor_parallel_size=1, decode_context_parallel_size=1
            ),
            scheduler_config=types.SimpleNamespace(
                enable_chunked_prefill=True, disable_hybrid_kv_cache_manager=False
            ),
            compilation_config=types.SimpleNamespace(
                static_forward_context={},
                cudagraph_capture_sizes=None,
                max_cudagraph_capture_size=None,
            ),
            attention_config=types.SimpleNamespace(
                hisparse_config=None, backend=None, flash_attn_version=None
            ),
            structured_outputs_config=types.SimpleNamespace(reasoning_parser=""),
            speculative_config=None,
            num_speculative_tokens=0,
            kv_transfer_config=None,
        )
        hook = MODELS_CONFIG_MAP.get(architecture)
        if hook is not None:
            hook.verify_and_update_config(self.config)
        VllmConfig._reject_mismatched_float_kv_cache(self.config)
        self.state_class: Any = None
        if hybrid:
            from vllm.model_executor.models.registry import ModelRegistry

            HybridAttentionMambaModelConfig.verify_and_update_config(self.config)
            self.state_class, _ = ModelRegistry.resolve_model_cls(
                STATE_CLASSES[architecture], model_config=self.model_config
            )
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(
                    ModelRegistry,
                    "resolve_model_cls",
                    lambda *a, **k: (self.state_class, architecture),
                )
                patch.setattr(
                    Platform, "_find_non_ssm_backends", classmethod(lambda cls, c: [backend])
                )
                Platform._align_hybrid_block_size(self.config, backend)
        self.specs = self._specs()
        self._group()

    def _attention_spec(self, window: int | None) -> Any:
        from vllm.model_executor.layers.attention.attention import Attention
        from vllm.utils.torch_utils import kv_cache_dtype_str_to_dtype
        from vllm.v1.attention.backend import AttentionType

        heads, size = self.model_config.get_num_kv_heads(None), self.model_config.get_head_size()
        layer = types.SimpleNamespace(
            attn_type=AttentionType.DECODER,
            kv_cache_dtype=self.cache.cache_dtype,
            sliding_window=window,
            attn_backend=self.backend,
            num_kv_heads=heads,
            head_size=size,
            head_size_v=size,
            kv_cache_torch_dtype=kv_cache_dtype_str_to_dtype(
                self.cache.cache_dtype, self.model_config
            ),
        )
        return Attention.get_kv_cache_spec(layer, self.config)

    def _state_spec(self) -> Any:
        from vllm.model_executor.layers.mamba.abstract import MambaBase
        from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum

        layer = types.SimpleNamespace(
            get_state_shape=lambda: self.state_class.get_mamba_state_shape_from_config(self.config),
            get_state_dtype=lambda: self.state_class.get_mamba_state_dtype_from_config(self.config),
            mamba_type=MambaAttentionBackendEnum.MAMBA2,
            is_kv_cache_tp_replicated=False,
        )
        return MambaBase.get_kv_cache_spec(layer, self.config)

    def _specs(self) -> dict[str, Any]:
        specs: dict[str, Any] = {}
        for i, kind in enumerate(self.kinds):
            if kind == "full_attention":
                specs[f"layers.{i}"] = self._attention_spec(None)
            elif kind == "sliding_attention":
                specs[f"layers.{i}"] = self._attention_spec(self.window)
            elif kind == "linear_attention":
                specs[f"layers.{i}"] = self._state_spec()
        return specs

    def _group(self) -> None:
        from vllm.v1.attention.backends.utils import (
            get_supported_kv_cache_layouts,
            resolve_kv_cache_layout,
        )
        from vllm.v1.core import kv_cache_planning as planning

        supported = [[layout.name for layout in get_supported_kv_cache_layouts([self.backend])]]
        layout = resolve_kv_cache_layout(self.config, supported, self.specs.values())
        self.cache.kv_cache_layout = layout.name
        self.groups = planning.get_kv_cache_groups(self.config, self.specs)
        self.bytes_per_block = planning._get_kv_cache_bytes_per_block(self.groups, layout)

    def blocks(self, gib: int) -> int:
        from vllm.v1.core import kv_cache_planning as planning

        config = planning.get_kv_cache_config_from_groups(self.config, self.groups, gib * GIB)
        return int(config.num_blocks)


class _ArchConfig:
    """vLLM's per-layer architecture view, read by Gemma 4's config hook (one head size)."""

    def __init__(self, head_size: int, layers: int) -> None:
        self.head_size, self.total_num_hidden_layers = head_size, layers

    def __getitem__(self, layer: int) -> Any:
        return types.SimpleNamespace(head_size=self.head_size)


def _name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def _check(ours: MemoryModel, theirs: _Layout) -> None:
    from vllm.v1.kv_cache_interface import (
        FullAttentionSpec,
        MambaSpec,
        SlidingWindowSpec,
    )

    specs = list(theirs.specs.values())
    stored = {"fp8": "uint8", "fp8_e4m3": "uint8", "fp8_e5m2": "uint8"}
    assert ours.dtypes.model == _name(theirs.model_config.dtype)
    attention = {_name(s.dtype) for s in specs if not isinstance(s, MambaSpec)}
    assert attention == {stored.get(ours.dtypes.kv, ours.dtypes.kv)}
    states = {s for s in specs if isinstance(s, MambaSpec)}
    if states:
        assert {tuple(map(_name, s.dtypes)) for s in states} == {
            (ours.dtypes.conv, ours.dtypes.ssm)
        }
        assert {s.real_page_size_bytes for s in states} == {ours.state_bytes}
    assert theirs.cache.block_size == ours.block_size
    assert {s.page_size_bytes for s in specs} == {ours.page_bytes}
    kinds = [type(g.kv_cache_spec) for g in theirs.groups]
    counts = tuple(kinds.count(kind) for kind in (FullAttentionSpec, SlidingWindowSpec, MambaSpec))
    assert counts == ours.group_counts()
    assert max(len(g.layer_names) for g in theirs.groups) == ours.group_size
    assert theirs.bytes_per_block == ours.block_bytes
    assert [theirs.blocks(gib) for gib in BUDGETS_GIB] == [ours.blocks(gib) for gib in BUDGETS_GIB]


@pytest.mark.parametrize(("kv", "state"), CHOICES, ids=[f"kv-{k}-state-{s}" for k, s in CHOICES])
@pytest.mark.parametrize("name", CATALOG)
def test_a_catalog_model_is_laid_out_as_vllm_lays_it_out(name: str, kv: str, state: str) -> None:
    fields = _catalog(name)
    _check(_ours(fields, kv, state), _Layout(fields, kv, state))


@pytest.mark.parametrize(
    ("fields", "choice"), [row[1:] for row in VARIANTS], ids=[row[0] for row in VARIANTS]
)
def test_a_dtype_rule_is_vllms(fields: dict[str, Any], choice: tuple[str, str]) -> None:
    _check(_ours(fields, *choice), _Layout(fields, *choice))


@pytest.mark.parametrize(
    ("fields", "choice"), [row[1:] for row in REFUSED], ids=[row[0] for row in REFUSED]
)
def test_a_choice_vllm_refuses_is_refused(fields: dict[str, Any], choice: tuple[str, str]) -> None:
    with pytest.raises(ValueError, match="kv_cache_dtype"):
        _Layout(fields, *choice)
    with pytest.raises(ModelConfigError) as raised:
        _ours(fields, *choice)
    assert raised.value.field == "--kv-dtype"


def test_nemotron_h_8b_at_3_gib_is_vllms_own_count() -> None:
    """The issue's numbers: a float32 SSM state of 4,255,744 bytes, blocks of 1,040, 189 blocks."""
    theirs = _Layout(_catalog("nemotron-h-8b"), "auto", "auto")
    assert theirs.blocks(3) == 189 and theirs.cache.block_size == 1040
    assert theirs.cache.mamba_ssm_cache_dtype == "float32"
    ours = _ours(_catalog("nemotron-h-8b"), "auto", "auto")
    assert (ours.state_bytes, ours.block_size, ours.blocks(3)) == (4_255_744, 1040, 189)
