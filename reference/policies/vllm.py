"""vLLM's retention formulas as named compatibility policies.

* ``vllm-0.33`` (:class:`VllmPolicy`): vLLM 0.33.0, proven equal to vLLM's
  own mask, boundaries and split by ``make audit-vllm``. It hands the mask
  what vLLM's ``cache_blocks`` hands it, boundaries that floor to 0 included
  (``core.reachable_boundaries`` leaves those out), and splits on the Mamba
  block, which may be finer than ``L`` (docs/findings.md).
* ``vllm-pr47782`` (:class:`VllmPR47782Policy`): as merged in PR #47782, whose
  last cacheable position puts the only state one token past every lookup
  (vLLM #50409).

Both model vLLM's default configuration unless a ``VllmSplitOptions``
says otherwise, and reuse ``core``'s mask and split (they *are* vLLM 0.33's):
what differs is which positions they are handed, on which grid. What vLLM
0.33.0's scheduler derives (its replayed boundaries, its split's settings) is
read from vLLM 0.33.0's package, ``junction.upstream.vllm_0_33.scheduler``,
which the audit's stand-in scheduler reads too.
"""

from __future__ import annotations

from collections.abc import Sequence

from junction.core import (
    GroupSpec,
    HybridGeometry,
    OffGridInterval,
    PrefillCheckpoints,
    floor_to,
    prefill_end,
    segment_boundaries,
)
from junction.reference.engine.finish import FinishReason
from junction.reference.engine.policy import RequestView
from junction.upstream.vllm_0_33.scheduler import (
    VLLM_DEFAULT_SPLIT,
    SplitSettings,
    VllmSplitOptions,
    replay_boundaries,
)

from .bound import chunk_splitter, group_mask

__all__ = ["VllmPR47782Policy", "VllmPolicy", "VllmSplitOptions"]


class VllmPolicy:
    """vLLM 0.33.0's boundaries, mask and split (the split with ``split_options``)."""

    name = "vllm-0.33"
    fixed_boundaries = True  # vLLM's boundaries: the prompt's, the junction's, the group's

    def __init__(self, split_options: VllmSplitOptions = VLLM_DEFAULT_SPLIT) -> None:
        self.split_options = split_options

    def checkpoint_positions(
        self, geometry: HybridGeometry, request: RequestView
    ) -> tuple[int, ...]:
        alignment = geometry.alignment_tokens
        positions = {
            floor_to(x, alignment)
            for group in geometry.groups
            for x in self.reachable_boundaries(geometry, group, request)
        }
        end = prefill_end(request.num_prompt_tokens, request.num_tokens)
        positions.update(segment_boundaries(geometry.retention_interval, end))
        positions.discard(0)
        return tuple(sorted(positions))

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> tuple[int, ...]:
        boundaries = list(
            replay_boundaries(
                request.num_prompt_tokens, geometry.scheduler_block_size, geometry.use_eagle
            )
        )
        junction = request.shared_prefix_boundary
        if junction:
            boundaries.append(junction)
            # Only an EAGLE group's manager adds the junction's EAGLE landing
            # (vLLM's per-manager ``use_eagle``), though the drop of any EAGLE
            # group lands every group's hit there.
            if group.eagle_lookup(geometry.use_eagle):
                boundaries.append(junction - group.block_size)
        # vLLM hands its mask ``J - B`` even when negative, where it marks
        # nothing; the Policy protocol takes positions >= 0, so drop them.
        return tuple(x for x in boundaries if x >= 0)

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> list[bool] | None:
        # vLLM's form of an off-grid interval; a geometry's R is a multiple of L,
        # on every group's grid, where the two forms agree.
        return group_mask(
            geometry.alignment_tokens,
            group,
            geometry.use_eagle,
            geometry.retention_interval,
            OffGridInterval.FLOORED_INTERVAL,
        ).reachable_block_mask(start_block, end_block, boundaries)

    def last_cacheable(self, geometry: HybridGeometry, request: RequestView) -> int | None:
        """``None``: the split's own (vLLM 0.33) formula."""
        return None

    def split(
        self,
        geometry: HybridGeometry,
        request: RequestView,
        num_new_tokens: int,
        max_prefill_tokens: int,
    ) -> int:
        settings = SplitSettings.configured(geometry, self.split_options)
        partial = settings.mamba_partial_cache_hit
        alignment = settings.mamba_prefill_checkpoint_alignment
        unit = settings.hash_block_size if partial else settings.block_size
        splitter = chunk_splitter(
            settings.mamba_block_size,
            settings.hash_block_size,
            settings.use_eagle_block_drop,
            geometry.partial_hits,
            max_prefill_tokens,
            settings.num_hash_lookahead_tokens,
            settings.mamba_shared_prefix_checkpoint,
            None if alignment is None else PrefillCheckpoints(alignment, unit, True),
        )
        return splitter.split(
            num_computed_tokens=request.num_computed_tokens,
            num_new_tokens=num_new_tokens,
            num_prompt_tokens=request.num_prompt_tokens,
            num_tokens=request.num_tokens,
            shared_prefix_boundary=request.shared_prefix_boundary,
            last_cacheable=self.last_cacheable(geometry, request),
        )


class VllmPR47782Policy(VllmPolicy):
    """PR #47782's last cacheable position: ``N - N mod b`` (minus ``b`` with EAGLE)."""

    name = "vllm-pr47782"

    def last_cacheable(self, geometry: HybridGeometry, request: RequestView) -> int | None:
        block = geometry.mamba_block_size
        position = floor_to(request.num_tokens, block)
        return max(position - block, 0) if geometry.use_eagle else position


class VllmPR50551Policy(VllmPolicy):
    """vLLM PR #50551 (open) on top of vLLM 0.33.0: with
    ``VLLM_PREFIX_CACHE_RETAIN_DECODE_CHECKPOINTS=1`` a decoding request privately
    pins "the latest materialized, scheduler-aligned decode checkpoint" and
    publishes it on finish: ``floor_L(c)`` for ``c`` computed tokens, whatever
    EAGLE or partial hits make the next turn's lookup land on (where the core's
    ``decode_checkpoint`` is ``floor_G`` of each group's whole blocks less its
    drop). The reference engine pins and publishes it as it does the default
    policy's (``keeps_decode_checkpoints``), on a stopped finish only: the PR
    publishes after ``FINISHED_STOPPED`` (a stop token or string), never on a
    length-capped finish, an abort or a preemption."""

    name = "vllm-pr50551"
    keeps_decode_checkpoints = True
    decode_checkpoint_finishes = frozenset({FinishReason.STOPPED})

    def decode_checkpoints(self, geometry: HybridGeometry, request: RequestView) -> tuple[int, ...]:
        position = floor_to(request.num_computed_tokens, geometry.scheduler_block_size)
        return (position,) if position else ()
