"""Loading vLLM 0.33.0 on a CPU-only machine, or saying why it is not there.

vLLM is installed without its GPU-only dependencies (``make audit-setup``:
``pip install --no-deps`` of the pins in the ``audit`` extra). Importing it is
slow (several seconds), so it happens once, on first use, and never at import
time: the rest of the project, and ``mypy``, must not need vLLM.

Why one loader: the drop-in and the audit reach vLLM through :func:`vllm`,
which either returns the handful of modules they read or raises
:class:`VllmMissing` with the reason tests print when they skip. A vLLM of
another version is not "missing": what this package knows is about 0.33.0,
so it is an error.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import types
import warnings
from typing import Any

from ..pins import Pin
from ..releases import VllmMissing

__all__ = ["PIN", "PINNED_VERSION", "VllmModules", "load_modules", "vllm", "vllm_missing_reason"]

PINNED_VERSION = "0.33.0"
PIN = Pin("vllm", "vLLM", PINNED_VERSION, "audit")


class VllmModules(types.SimpleNamespace):
    """The vLLM modules the drop-in and the audit read (attributes typed
    ``Any``: vLLM ships incomplete types, so their users convert at the boundary)."""

    interface: Any  # vllm.v1.kv_cache_interface
    managers: Any  # vllm.v1.core.single_type_kv_cache_manager
    coordinator: Any  # vllm.v1.core.kv_cache_coordinator
    manager: Any  # vllm.v1.core.kv_cache_manager
    scheduler: Any  # vllm.v1.core.sched.scheduler
    utils: Any  # vllm.v1.core.kv_cache_utils
    request: Any  # vllm.v1.request
    sampling: Any  # vllm.sampling_params
    hashing: Any  # vllm.utils.hashing
    torch: Any


def vllm_missing_reason() -> str | None:
    """Why vLLM 0.33.0 cannot be loaded here, or ``None`` when vLLM is installed."""
    return PIN.missing_reason()


@functools.cache
def vllm() -> VllmModules:
    """Import vLLM 0.33.0 once; raises :class:`VllmMissing` when absent.

    Raises ``RuntimeError`` when another vLLM version is installed.
    """
    PIN.require(VllmMissing)
    return load_modules()


@functools.cache
def load_modules() -> VllmModules:
    """vLLM's modules, imported once, whatever its version: :func:`vllm` once
    the pin is checked (a release whose modules are 0.33.0's checks its own)."""
    # Quiet: vLLM logs its platform detection; requests warns about an
    # optional charset detector nobody here needs.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        modules = VllmModules(
            torch=importlib.import_module("torch"),
            interface=importlib.import_module("vllm.v1.kv_cache_interface"),
            managers=importlib.import_module("vllm.v1.core.single_type_kv_cache_manager"),
            coordinator=importlib.import_module("vllm.v1.core.kv_cache_coordinator"),
            manager=importlib.import_module("vllm.v1.core.kv_cache_manager"),
            scheduler=importlib.import_module("vllm.v1.core.sched.scheduler"),
            utils=importlib.import_module("vllm.v1.core.kv_cache_utils"),
            request=importlib.import_module("vllm.v1.request"),
            sampling=importlib.import_module("vllm.sampling_params"),
            hashing=importlib.import_module("vllm.utils.hashing"),
        )
    # Without vLLM's logging configuration its warnings reach the root
    # logger's last-resort handler; the audit reports what matters itself.
    logging.getLogger("vllm").setLevel(logging.ERROR)
    # Block hashes chain from NONE_HASH, which vLLM derives once per process.
    modules.utils.init_none_hash(modules.hashing.sha256)
    return modules
