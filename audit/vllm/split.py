"""vLLM 0.33.0's chunk split, ``Scheduler._mamba_block_aligned_split``, on CPU.

A real ``Scheduler`` needs a full engine configuration, so the method is
called unbound on :class:`SchedulerStandIn`, which carries exactly the
attributes it reads (``__slots__``: reading anything else raises), with a
real ``vllm.v1.request.Request``, each set as vLLM's constructors set it
(``upstream.vllm_0_33.scheduler.SplitSettings``, which the ``vllm-0.33``
policy reads too): ``cache_config.block_size`` is the Mamba block,
``block_size`` ``L``, ``hash_block_size`` ``H``; ``mamba_partial_cache_hit``
is align mode with ``H < L`` and partial hits; ``use_eagle_block_drop`` is
EAGLE without lookahead hashes; the split's three settings come from a
``VllmSplitOptions``, ``mamba_shared_prefix_checkpoint`` only with partial
hits and an EAGLE group.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

from junction.core import HybridGeometry
from junction.upstream.vllm_0_33.env import vllm
from junction.upstream.vllm_0_33.scheduler import (
    VLLM_DEFAULT_SPLIT,
    SplitSettings,
    VllmSplitOptions,
)

__all__ = ["SchedulerStandIn", "make_request", "vllm_split"]

_ids = itertools.count()


class SchedulerStandIn:
    """The attributes ``Scheduler._mamba_block_aligned_split`` reads, and nothing else."""

    __slots__ = (
        "block_size",
        "cache_config",
        "hash_block_size",
        "mamba_has_prefill_checkpoint_blocks",
        "mamba_partial_cache_hit",
        "mamba_prefill_checkpoint_alignment",
        "mamba_shared_prefix_checkpoint",
        "max_num_scheduled_tokens",
        "num_hash_lookahead_tokens",
        "scheduler_config",
        "use_eagle_block_drop",
    )

    def __init__(
        self,
        geometry: HybridGeometry,
        max_num_scheduled_tokens: int,
        long_prefill_token_threshold: int = 0,
        options: VllmSplitOptions = VLLM_DEFAULT_SPLIT,
    ) -> None:
        settings = SplitSettings.configured(geometry, options)
        self.cache_config = SimpleNamespace(block_size=settings.mamba_block_size)
        self.scheduler_config = SimpleNamespace(
            long_prefill_token_threshold=long_prefill_token_threshold
        )
        self.block_size = settings.block_size
        self.hash_block_size = settings.hash_block_size
        self.mamba_partial_cache_hit = settings.mamba_partial_cache_hit
        self.use_eagle_block_drop = settings.use_eagle_block_drop
        self.num_hash_lookahead_tokens = settings.num_hash_lookahead_tokens
        alignment = settings.mamba_prefill_checkpoint_alignment
        self.mamba_has_prefill_checkpoint_blocks = alignment is not None
        self.mamba_prefill_checkpoint_alignment = alignment
        self.mamba_shared_prefix_checkpoint = settings.mamba_shared_prefix_checkpoint
        self.max_num_scheduled_tokens = max_num_scheduled_tokens

    def split(
        self,
        request: Any,
        num_new_tokens: int,
        num_new_local_computed_tokens: int = 0,
        num_external_computed_tokens: int = 0,
    ) -> int:
        """vLLM's own method, run on this stand-in."""
        method = vllm().scheduler.Scheduler._mamba_block_aligned_split
        return int(
            method(
                self,
                request,
                num_new_tokens,
                num_new_local_computed_tokens,
                num_external_computed_tokens,
            )
        )


def make_request(
    tokens: list[int],
    num_prompt_tokens: int,
    *,
    hash_block_size: int | None = None,
    max_tokens: int = 1 << 20,
) -> Any:
    """A real vLLM ``Request``: ``tokens[:P]`` prompt, the rest accepted output.

    With ``hash_block_size`` it carries vLLM's block hasher (sha256 chain).
    """
    v = vllm()
    hasher = (
        None
        if hash_block_size is None
        else v.utils.get_request_block_hasher(hash_block_size, v.hashing.sha256)
    )
    request = v.request.Request(
        f"audit-{next(_ids)}",
        list(tokens[:num_prompt_tokens]),
        v.sampling.SamplingParams(max_tokens=max_tokens),
        None,
        block_hasher=hasher,
    )
    output = list(tokens[num_prompt_tokens:])
    if output:
        request.append_output_token_ids(output)
    return request


def vllm_split(
    geometry: HybridGeometry,
    *,
    num_prompt_tokens: int,
    num_tokens: int,
    num_computed_tokens: int,
    shared_prefix_boundary: int,
    num_new_tokens: int,
    max_num_scheduled_tokens: int,
    long_prefill_token_threshold: int = 0,
    num_new_local_computed_tokens: int = 0,
    num_external_computed_tokens: int = 0,
    options: VllmSplitOptions = VLLM_DEFAULT_SPLIT,
) -> int:
    """vLLM's split for one request state (a fresh request and stand-in per call)."""
    request = make_request(list(range(num_tokens)), num_prompt_tokens)
    request.num_computed_tokens = num_computed_tokens
    request.shared_prefix_boundary = shared_prefix_boundary
    stand_in = SchedulerStandIn(
        geometry, max_num_scheduled_tokens, long_prefill_token_threshold, options
    )
    return stand_in.split(
        request, num_new_tokens, num_new_local_computed_tokens, num_external_computed_tokens
    )
