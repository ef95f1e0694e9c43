"""vLLM 0.33.0's scheduler rules: the boundaries it replays, and the settings of its chunk split.

vLLM's ``Scheduler`` derives what ``_mamba_block_aligned_split`` reads from
its configuration (:meth:`SplitSettings.configured`, the rules of its
constructor: the split's three options, EAGLE, partial hits) and keeps the
mask's boundaries at ``replay_boundaries`` (:func:`replay_boundaries`). The
reference policy ``vllm-0.33`` restates vLLM by these rules, and the audit's
stand-in scheduler holds the same settings for vLLM's own method, so the two
cannot drift apart; the drop-in reads a live scheduler's settings as vLLM
derived them.
"""

from __future__ import annotations

import attrs

from junction.core import HybridGeometry, floor_to

__all__ = [
    "VLLM_DEFAULT_SPLIT",
    "SplitSettings",
    "VllmSplitOptions",
    "replay_boundaries",
]


def replay_boundaries(
    num_prompt_tokens: int, scheduler_block_size: int, use_eagle: bool
) -> tuple[int, ...]:
    """vLLM 0.33's ``replay_boundaries``: ``P - 1``; with EAGLE one block below
    the resend's and the extension's last aligned positions."""
    if not use_eagle:
        return (num_prompt_tokens - 1,)
    block = scheduler_block_size
    resend = floor_to(num_prompt_tokens - 1, block)
    extension = floor_to(num_prompt_tokens, block)
    return tuple(sorted({max(resend - block, 0), max(extension - block, 0)}))


@attrs.frozen
class VllmSplitOptions:
    """vLLM 0.33.0's three scheduler settings of the split, as vLLM names them.

    ``num_hash_lookahead_tokens`` (``>= 0``): vLLM's scheduler then turns the
    EAGLE block drop off. ``enable_mamba_shared_prefix_checkpoint``: the exact
    junction stop, which vLLM narrows to partial hits (``H < L``) under EAGLE.
    ``prefill_checkpoint_alignment`` (``None`` = no internal prefill
    checkpoint blocks): the backend writes the prefill's checkpoint inside a
    chunk, on the hash unit with partial hits, else on ``L``; the split keys
    it on the prefill's end, as vLLM's scheduler does
    (``PrefillCheckpoints.keyed_on_prefill_end``).
    """

    num_hash_lookahead_tokens: int = 0
    enable_mamba_shared_prefix_checkpoint: bool = False
    prefill_checkpoint_alignment: int | None = None


VLLM_DEFAULT_SPLIT = VllmSplitOptions()


@attrs.frozen
class SplitSettings:
    """What vLLM 0.33.0's ``Scheduler`` holds for its split, by vLLM's attribute names."""

    mamba_block_size: int  # ``cache_config.block_size``: align mode makes it the Mamba block
    block_size: int  # the scheduler block ``L``
    hash_block_size: int  # ``H``
    mamba_partial_cache_hit: bool  # partial hits with ``H < L``
    use_eagle_block_drop: bool  # EAGLE without lookahead hashes
    num_hash_lookahead_tokens: int
    mamba_shared_prefix_checkpoint: bool  # the exact junction stop, narrowed as vLLM narrows it
    mamba_prefill_checkpoint_alignment: int | None  # None: no internal prefill checkpoint blocks

    @classmethod
    def configured(
        cls, geometry: HybridGeometry, options: VllmSplitOptions = VLLM_DEFAULT_SPLIT
    ) -> SplitSettings:
        """The settings vLLM's scheduler derives for ``geometry`` with ``options``."""
        lookahead = options.num_hash_lookahead_tokens
        partial = geometry.partial_hits and geometry.hash_block_size < geometry.scheduler_block_size
        # Lookahead hashes prove the boundary token: vLLM drops no EAGLE block then.
        eagle_drop = geometry.use_eagle and not lookahead
        return cls(
            mamba_block_size=geometry.mamba_block_size,
            block_size=geometry.scheduler_block_size,
            hash_block_size=geometry.hash_block_size,
            mamba_partial_cache_hit=partial,
            use_eagle_block_drop=eagle_drop,
            num_hash_lookahead_tokens=lookahead,
            mamba_shared_prefix_checkpoint=(
                options.enable_mamba_shared_prefix_checkpoint and partial and eagle_drop
            ),
            mamba_prefill_checkpoint_alignment=options.prefill_checkpoint_alignment,
        )
