"""The simulator's model presets equal what vLLM 0.33.0 derives from each family's config.

Each family's transformers config class is built offline (its defaults, or
the published sizes where the defaults are another model's), and vLLM's own
code chooses the block sizes: ``AttentionBackend.get_preferred_block_size``
from ``CacheConfig.DEFAULT_BLOCK_SIZE`` (phase 1 of
``Platform.update_block_size_for_backend``), and for Mamba hybrids
``Platform._align_hybrid_block_size`` (phase 2: the smallest attention block
whose page holds one Mamba state, kernel-aligned; align mode gives Mamba the
same block). Two stand-ins, because the modules they replace do not import
on a CPU-only install (they import ``einops`` and ``compressed_tensors``,
which the ``audit`` extra does not install): the FlashAttention backend
(``vllm/v1/attention/backends/flash_attn.py``: kernel blocks
``[MultipleOf(16)]`` off XPU and the FA4 special cases, ``customize_spec``
the identity), and each model class's two state classmethods, restated as
one call each of vLLM's ``MambaStateShapeCalculator`` /
``MambaStateDtypeCalculator`` (``NemotronHForCausalLM`` and
``Qwen3NextForCausalLM``, tensor parallel 1, no speculative tokens).
"""

from __future__ import annotations

import types
from typing import Any

import pytest

from junction.core import GroupSpec
from junction.reference.simulator.geometries import GEOMETRIES, PRESETS


def _backend() -> Any:
    from vllm.v1.attention.backend import AttentionBackend, MultipleOf

    class FlashAttention(AttentionBackend):
        @classmethod
        def get_supported_kernel_block_sizes(cls, kv_cache_spec: Any = None) -> list[Any]:
            return [MultipleOf(16)]

    return FlashAttention


def _mamba_block(hf: Any, model: Any) -> int:
    """vLLM's ``_align_hybrid_block_size`` on ``hf``, bf16, align mode; the attention block."""
    import torch
    from vllm.config.cache import CacheConfig
    from vllm.model_executor.models.registry import ModelRegistry
    from vllm.platforms.interface import Platform

    backend = _backend()
    cache = CacheConfig(mamba_cache_mode="align", enable_prefix_caching=True)
    cache.block_size = backend.get_preferred_block_size(CacheConfig.DEFAULT_BLOCK_SIZE)
    config = types.SimpleNamespace(
        cache_config=cache,
        model_config=types.SimpleNamespace(
            hf_config=hf,
            hf_text_config=hf,
            dtype=torch.bfloat16,
            use_mla=False,
            architecture=type(model).__name__,
            get_num_kv_heads=lambda parallel: hf.num_key_value_heads,
            get_head_size=lambda: hf.head_dim,
        ),
        parallel_config=types.SimpleNamespace(tensor_parallel_size=1),
        compilation_config=types.SimpleNamespace(static_forward_context={}),
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ModelRegistry, "resolve_model_cls", lambda *a, **k: (model, "stand-in"))
        patch.setattr(Platform, "_find_non_ssm_backends", classmethod(lambda cls, c: [backend]))
        Platform._align_hybrid_block_size(config, backend)
    assert cache.mamba_block_size == cache.block_size  # align mode: Mamba takes the same
    return int(cache.block_size)


class _NemotronH:
    @classmethod
    def get_mamba_state_shape_from_config(cls, config: Any) -> Any:
        from vllm.model_executor.layers.mamba.mamba_utils import MambaStateShapeCalculator

        hf = config.model_config.hf_config
        return MambaStateShapeCalculator.mamba2_state_shape(
            intermediate_size=hf.mamba_num_heads * hf.mamba_head_dim,
            tp_world_size=1,
            n_groups=hf.n_groups,
            num_heads=hf.mamba_num_heads,
            head_dim=hf.mamba_head_dim,
            state_size=hf.ssm_state_size,
            conv_kernel=hf.conv_kernel,
            num_spec=0,
        )

    @classmethod
    def get_mamba_state_dtype_from_config(cls, config: Any) -> Any:
        from vllm.model_executor.layers.mamba.mamba_utils import MambaStateDtypeCalculator

        cache = config.cache_config
        return MambaStateDtypeCalculator.mamba2_state_dtype(
            config.model_config.dtype, cache.mamba_cache_dtype, cache.mamba_ssm_cache_dtype
        )


class _Qwen3Next:
    @classmethod
    def get_mamba_state_shape_from_config(cls, config: Any) -> Any:
        from vllm.model_executor.layers.mamba.mamba_utils import MambaStateShapeCalculator

        hf = config.model_config.hf_text_config
        return MambaStateShapeCalculator.gated_delta_net_state_shape(
            1,
            hf.linear_num_key_heads,
            hf.linear_num_value_heads,
            hf.linear_key_head_dim,
            hf.linear_value_head_dim,
            hf.linear_conv_kernel_dim,
            0,
        )

    @classmethod
    def get_mamba_state_dtype_from_config(cls, config: Any) -> Any:
        from vllm.model_executor.layers.mamba.mamba_utils import MambaStateDtypeCalculator

        cache = config.cache_config
        return MambaStateDtypeCalculator.gated_delta_net_state_dtype(
            config.model_config.dtype, cache.mamba_cache_dtype, cache.mamba_ssm_cache_dtype
        )


def _derived(name: str) -> tuple[GroupSpec, ...]:
    import transformers

    if name == "nemotron-h":  # the defaults are Nemotron-H 8B's per-layer sizes
        block = _mamba_block(transformers.NemotronHConfig(), _NemotronH())
        return (GroupSpec.full(block), GroupSpec.mamba(block))
    if name == "qwen3-next":  # the defaults are Qwen3-Next-80B-A3B's
        hf = transformers.Qwen3NextConfig()
        assert hf.layer_types.count("linear_attention") == 36
        assert hf.layer_types.count("full_attention") == 12
        block = _mamba_block(hf, _Qwen3Next())
        return (GroupSpec.full(block), GroupSpec.mamba(block))
    from vllm.config.cache import CacheConfig

    block = _backend().get_preferred_block_size(CacheConfig.DEFAULT_BLOCK_SIZE)
    if name == "gpt-oss":  # the defaults are gpt-oss-120b's
        hf = transformers.GptOssConfig()
        assert hf.layer_types.count("sliding_attention") == 18
    else:  # Gemma 3 27B's published sizes
        hf = transformers.Gemma3TextConfig(num_hidden_layers=62, sliding_window=1024)
        assert hf.layer_types.count("sliding_attention") == 52
    return (GroupSpec.full(block), GroupSpec.sliding_window(block, hf.sliding_window))


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_a_preset_is_what_vllm_derives(name: str) -> None:
    assert GEOMETRIES[name].groups == _derived(name)
