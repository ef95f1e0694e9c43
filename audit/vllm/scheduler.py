"""A real vLLM 0.33.0 ``Scheduler`` for a core geometry, run without a model.

Built as vLLM's own scheduler tests build one: a ``VllmConfig`` for a small
OPT configuration written locally, the CPU platform, a real ``KVCacheConfig``
with one group per core group, prefix caching on, Mamba in align mode. A
step is ``schedule()`` then ``update_from_output`` with one sampled token
per request past its prefill. EAGLE, lookahead hashes and internal prefill
checkpoints are set as vLLM's tests set them (no draft model). Importing
this module selects vLLM's CPU platform for the process (unless
``VLLM_TARGET_DEVICE`` names one); the drop-in never imports it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from junction.core import HybridGeometry
from junction.upstream.vllm_0_33.env import vllm
from junction.upstream.vllm_0_33.specs import kv_cache_config

__all__ = ["build_scheduler", "make_request", "model_output", "serve", "step"]

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")

_ARCHITECTURES = ["OPTForCausalLM"]  # as opt-125m's published config.json


@functools.cache
def _model_dir() -> Path:
    """A folder holding an OPT model's ``config.json`` (written once per process)."""
    from transformers import OPTConfig  # vLLM's dependency; slow to import, needed once

    folder = Path(tempfile.mkdtemp(prefix="junction-opt-"))
    OPTConfig(dtype="float16", architectures=_ARCHITECTURES).save_pretrained(folder)
    return folder


@functools.cache
def _config_modules() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import importlib
    import types

    return types.SimpleNamespace(
        config=importlib.import_module("vllm.config"),
        structured=importlib.import_module("vllm.v1.structured_output"),
        outputs=importlib.import_module("vllm.v1.outputs"),
    )


def build_scheduler(
    geometry: HybridGeometry,
    *,
    num_blocks: int,
    max_num_batched_tokens: int = 8192,
    max_num_seqs: int = 16,
    max_model_len: int = 2048,
    hash_lookahead_tokens: int = 0,
    prefill_checkpoint_alignment: int | None = None,
    kv_transfer_config: Any = None,
) -> Any:
    """vLLM's ``Scheduler`` for ``geometry`` with ``num_blocks`` blocks per group;
    with ``hash_lookahead_tokens`` (EAGLE without the drop, ``geometry.use_eagle``
    off), a backend writing one internal checkpoint per prefill on tiles of
    ``prefill_checkpoint_alignment`` tokens, and the KV connector a
    ``KVTransferConfig`` names (bound to the scheduler's final cache manager)."""
    v = vllm()
    c = _config_modules()
    cfg = c.config
    mamba = [g.block_size for g in geometry.groups if g.kind.name == "MAMBA"]
    block_size = mamba[0] if mamba else geometry.groups[0].block_size
    model_config = cfg.ModelConfig(
        model=str(_model_dir()),
        trust_remote_code=True,
        dtype="float16",
        seed=42,
        skip_tokenizer_init=True,
        max_model_len=max_model_len,
    )
    vllm_config = cfg.VllmConfig(
        scheduler_config=cfg.SchedulerConfig(
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=max_num_batched_tokens,
            max_model_len=max_model_len,
            enable_chunked_prefill=True,
            is_encoder_decoder=False,
            watermark=0.0,
        ),
        model_config=model_config,
        cache_config=cfg.CacheConfig(
            block_size=block_size,
            enable_prefix_caching=True,
            mamba_cache_mode="align",
        ),
        kv_transfer_config=kv_transfer_config,
    )
    vllm_config.cache_config.num_gpu_blocks = num_blocks
    config = kv_cache_config(geometry.groups, num_blocks, geometry.retention_interval)
    if prefill_checkpoint_alignment is not None:
        groups = config.kv_cache_groups
        for index, group in enumerate(groups):
            if isinstance(group.kv_cache_spec, v.interface.MambaSpec):
                spec = dataclasses.replace(
                    group.kv_cache_spec,
                    num_prefill_checkpoint_blocks=1,
                    prefill_checkpoint_alignment=prefill_checkpoint_alignment,
                )
                groups[index] = dataclasses.replace(group, kv_cache_spec=spec)
    v.managers.register_all_kvcache_specs(vllm_config)
    scheduler = v.scheduler.Scheduler(
        vllm_config=vllm_config,
        kv_cache_config=config,
        structured_output_manager=c.structured.StructuredOutputManager(vllm_config),
        block_size=geometry.scheduler_block_size,
        hash_block_size=geometry.hash_block_size,
        log_stats=False,
    )
    if geometry.use_eagle or hash_lookahead_tokens:
        scheduler.use_eagle = True
        scheduler.use_eagle_block_drop = not hash_lookahead_tokens
        scheduler.num_hash_lookahead_tokens = hash_lookahead_tokens
        scheduler.kv_cache_manager = v.manager.KVCacheManager(
            kv_cache_config=config,
            max_model_len=scheduler.max_model_len,
            enable_caching=True,
            use_eagle=scheduler.use_eagle_block_drop,
            num_hash_lookahead_tokens=hash_lookahead_tokens,
            log_stats=False,
            scheduler_block_size=geometry.scheduler_block_size,
            hash_block_size=geometry.hash_block_size,
            watermark=0.0,
        )
        if scheduler.connector is not None:
            scheduler.connector.bind_kv_cache_manager(scheduler.kv_cache_manager)
    return scheduler


def make_request(
    request_id: str,
    tokens: Sequence[int],
    hash_block_size: int,
    max_tokens: int,
    hash_lookahead_tokens: int = 0,
) -> Any:
    """A vLLM ``Request`` generating ``max_tokens`` tokens, hashed as the
    scheduler hashes (``hash_lookahead_tokens`` past each unit)."""
    v = vllm()
    params = v.sampling.SamplingParams(ignore_eos=True, max_tokens=max_tokens)
    params.update_from_generation_config({}, 50256)
    hasher = v.utils.get_request_block_hasher(
        hash_block_size, v.hashing.sha256, hash_lookahead_tokens
    )
    return v.request.Request(
        request_id=request_id,
        prompt_token_ids=list(tokens),
        sampling_params=params,
        pooling_params=None,
        block_hasher=hasher,
    )


def model_output(scheduler_output: Any, scheduler: Any, token: int = 7) -> Any:
    """What a model returns for a step: one token per request past its prefill."""
    c = _config_modules()
    ids = list(scheduler_output.num_scheduled_tokens)
    sampled = []
    for rid in ids:
        request = scheduler.requests[rid]
        done = request.num_computed_tokens + scheduler_output.num_scheduled_tokens[rid]
        sampled.append([token] if done >= request.num_tokens else [])
    return c.outputs.ModelRunnerOutput(
        req_ids=ids,
        req_id_to_index={rid: k for k, rid in enumerate(ids)},
        sampled_token_ids=sampled,
        logprobs=None,
        prompt_logprobs_dict={},
        pooler_output=[],
    )


def step(scheduler: Any) -> Any:
    """One engine step: schedule, then the model's output for it. Returns the schedule."""
    scheduled = scheduler.schedule()
    scheduler.update_from_output(scheduled, model_output(scheduled, scheduler))
    return scheduled


def serve(scheduler: Any, request: Any, max_steps: int = 1000) -> None:
    """Add ``request`` and step until the scheduler holds no request."""
    scheduler.add_request(request)
    for _ in range(max_steps):
        if not scheduler.requests:
            return
        step(scheduler)
    raise RuntimeError(f"request {request.request_id} still running after {max_steps} steps")
