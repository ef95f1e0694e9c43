"""Loading SGLang 0.5.23 on a CPU-only machine, or saying why it is not there.

SGLang is installed ``--no-deps`` beside vLLM 0.33.0. Two things stand
between that install and an import of its unified radix cache on CPU: its
multimodal configs import ``torchvision`` (whose wheel links CUDA), for
which a stub stands in, and its components read the scheduler's runtime
context, for which a ``ServerArgs`` of a dummy model is published with the
Mamba chunk size preset. Why one loader, on first use (as ``upstream.vllm_0_33.env``):
the rest of the project, and ``mypy``, must not need SGLang; a missing
install is a reason tests print when they skip, another version an error.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import logging
import os
import sys
import types
import warnings
from typing import Any

from junction.upstream import EngineMissing, Pin

__all__ = [
    "PIN",
    "PINNED_VERSION",
    "SglangMissing",
    "SglangModules",
    "publish_server_args",
    "sglang",
    "sglang_missing_reason",
]

PINNED_VERSION = "0.5.23"
PIN = Pin("sglang", "SGLang", PINNED_VERSION, "audit-sglang")


class SglangMissing(EngineMissing):
    """SGLang is not installed; the message says how to install it."""


class SglangModules(types.SimpleNamespace):
    """The SGLang classes the audit uses (typed ``Any``: SGLang ships no usable types)."""

    torch: Any
    UnifiedRadixCache: Any
    CacheInitParams: Any
    ComponentType: Any
    MatchPrefixParams: Any
    InsertParams: Any
    EvictParams: Any
    RadixKey: Any
    HybridReqToTokenPool: Any
    ReqToTokenPool: Any
    HybridLinearKVPool: Any
    MHATokenToKVPool: Any
    SWAKVPool: Any
    TokenToKVPoolAllocator: Any
    SWATokenToKVPoolAllocator: Any
    Mamba2CacheParams: Any
    Mamba2StateShape: Any
    ServerArgs: Any
    publish: Any
    envs: Any
    track_entry: Any  # ScheduleBatch._mamba_radix_cache_v2_req_prepare_for_extend
    prefill_chunk_grid: Any  # schedule_policy.mamba_prefill_chunk_grid
    floor_chunked_tokens: Any  # PrefillAdder.floor_chunked_tokens


def sglang_missing_reason() -> str | None:
    """Why the SGLang audit cannot run here, or ``None`` when SGLang is installed."""
    return PIN.missing_reason()


class _Placeholder(type):
    """A stub attribute: a class whose every attribute is another placeholder."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder(name, (), {})


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder(name, (), {})


_TORCHVISION = (
    "torchvision",
    "torchvision.io",
    "torchvision.ops",
    "torchvision.transforms",
    "torchvision.transforms.functional",
    "torchvision.transforms.v2",
    "torchvision.transforms.v2.functional",
)


def _stub_torchvision() -> None:
    """Install the torchvision stub unless a real torchvision is importable."""
    if "torchvision" in sys.modules or importlib.util.find_spec("torchvision") is not None:
        return
    for name in _TORCHVISION:
        module = _StubModule(name)
        module.__path__ = []
        module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        sys.modules[name] = module
    setattr(sys.modules["torchvision"], "__version__", "0.0.0")  # noqa: B010 (a module attribute)


@functools.cache
def sglang() -> SglangModules:
    """Import SGLang 0.5.23 once; raises :class:`SglangMissing` when absent.

    Raises ``RuntimeError`` when another SGLang version is installed.
    """
    PIN.require(SglangMissing)
    _stub_torchvision()
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("SGLANG_LOGGING_LEVEL", "ERROR")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        modules = SglangModules(
            torch=importlib.import_module("torch"),
            **_classes(
                ("sglang.srt.mem_cache.unified_radix_cache", "UnifiedRadixCache"),
                ("sglang.srt.mem_cache.cache_init_params", "CacheInitParams"),
                ("sglang.srt.mem_cache.unified_cache.components.base", "ComponentType"),
                ("sglang.srt.mem_cache.base_prefix_cache", "MatchPrefixParams"),
                ("sglang.srt.mem_cache.base_prefix_cache", "InsertParams"),
                ("sglang.srt.mem_cache.base_prefix_cache", "EvictParams"),
                ("sglang.srt.mem_cache.radix_cache", "RadixKey"),
                ("sglang.srt.mem_cache.memory_pool", "HybridReqToTokenPool"),
                ("sglang.srt.mem_cache.memory_pool", "ReqToTokenPool"),
                ("sglang.srt.mem_cache.memory_pool", "HybridLinearKVPool"),
                ("sglang.srt.mem_cache.memory_pool", "MHATokenToKVPool"),
                ("sglang.srt.mem_cache.swa_memory_pool", "SWAKVPool"),
                ("sglang.srt.mem_cache.allocator", "TokenToKVPoolAllocator"),
                ("sglang.srt.mem_cache.allocator.swa", "SWATokenToKVPoolAllocator"),
                ("sglang.srt.configs.mamba_utils", "Mamba2CacheParams"),
                ("sglang.srt.configs.mamba_utils", "Mamba2StateShape"),
                ("sglang.srt.server_args", "ServerArgs"),
                ("sglang.srt.runtime_context", "publish"),
                ("sglang.srt.environ", "envs"),
            ),
        )
        batch = importlib.import_module("sglang.srt.managers.schedule_batch").ScheduleBatch
        modules.track_entry = batch._mamba_radix_cache_v2_req_prepare_for_extend
        policy = importlib.import_module("sglang.srt.managers.schedule_policy")
        modules.prefill_chunk_grid = policy.mamba_prefill_chunk_grid
        modules.floor_chunked_tokens = policy.PrefillAdder.floor_chunked_tokens
    # SGLang logs every cache it builds at INFO; the audit reports what matters.
    logging.getLogger("sglang").setLevel(logging.ERROR)
    return modules


def _classes(*names: tuple[str, str]) -> dict[str, Any]:
    return {name: getattr(importlib.import_module(module), name) for module, name in names}


def publish_server_args(page_size: int, mamba_chunk_size: int, max_states_per_path: int) -> None:
    """Publish the scheduler's runtime context for a cache of this page and chunk size,
    keeping at most ``max_states_per_path`` Mamba states per path (-1: no cap).

    The dummy model has no configuration to resolve, so the Mamba chunk size
    (``mamba_cache_chunk_size()``: the checkpoint grid's factor) is preset.
    """
    arguments = (page_size, mamba_chunk_size, max_states_per_path)
    # Publishing resolves every server argument (about 25 ms): skip it when the
    # context already holds these (it is process-wide: the last one published).
    if _published.get("scheduler") == arguments:
        return
    modules = sglang()
    server_args = modules.ServerArgs(
        model_path="dummy", page_size=page_size, mamba_max_states_per_path=max_states_per_path
    )
    server_args._mamba_cache_chunk_size = mamba_chunk_size
    modules.publish(server_args, role="scheduler")
    _published["scheduler"] = arguments


_published: dict[str, tuple[int, int, int]] = {}
