"""Findings about vLLM 0.33.0's mask on options its engine path reaches only through a connector.

vLLM's offloading connector calls ``reachable_block_mask`` with its own
alignment and the configured interval, which need not be a multiple of it:
an interval off the group's grid, which a geometry (and vLLM's coordinator)
rejects, so no harness scenario reaches it. A finding's counterexample is
therefore one call of the mask, re-run on the installed vLLM when
``docs/findings.md`` is written, judged from first principles: where a later
lookup lands (``reference.oracle``) and whether the blocks it reads were
kept.
"""

from __future__ import annotations

import attrs

from junction.core import GroupMask, GroupSpec, floor_to
from junction.reference.oracle.first_principles import oracle_blocks_needed

from .masks import vllm_group_mask

__all__ = ["MASK_FINDINGS", "MaskFinding", "MaskObservation", "mask_findings_markdown"]


@attrs.frozen
class MaskObservation:
    """What each side keeps on the finding's call, and what a later lookup needs."""

    landing: int  # where the later request's lookup lands (tokens)
    needed: tuple[int, ...]  # the blocks a resume there reads
    vllm_kept: tuple[int, ...]
    core_kept: tuple[int, ...]

    @property
    def vllm_serves(self) -> bool:
        return set(self.needed) <= set(self.vllm_kept)

    @property
    def core_serves(self) -> bool:
        return set(self.needed) <= set(self.core_kept)


@attrs.frozen
class MaskFinding:
    """A departure of vLLM's mask, with the call that shows it and a later request.

    ``shared_tokens``: a later request shares that many tokens with the one
    whose blocks ``[0, end_block)`` the call masks; under segment retention
    its lookup may land at the last segment boundary at or below it, floored
    to the alignment (the deepest position a lookup lands at in that segment).
    """

    key: str
    title: str
    upstream: str
    cause: str
    impact: str
    group: GroupSpec
    alignment_tokens: int
    retention_interval: int
    end_block: int
    shared_tokens: int

    def observe(self) -> MaskObservation:
        """Re-run the call on vLLM and on the core; needs vLLM."""
        spec, alignment, interval = self.group, self.alignment_tokens, self.retention_interval
        landing = floor_to(floor_to(self.shared_tokens, interval), alignment)
        needed = oracle_blocks_needed(
            spec.kind.value, landing, spec.block_size, spec.window, use_eagle=False
        )
        theirs = vllm_group_mask(spec, 0, self.end_block, alignment, False, interval)
        ours = GroupMask(alignment, spec, False, interval).reachable_block_mask(0, self.end_block)
        return MaskObservation(landing, tuple(sorted(needed)), _kept(theirs), _kept(ours))

    def call(self) -> str:
        spec = self.group
        return (
            f"`{spec.kind.value}` B={spec.block_size} W={spec.window}, "
            f"A={self.alignment_tokens}, R={self.retention_interval}, "
            f"blocks [0, {self.end_block})"
        )


def _kept(mask: list[bool] | None) -> tuple[int, ...]:
    if mask is None:
        raise ValueError("the finding's call must give a sparse mask on both sides")
    return tuple(i for i, kept in enumerate(mask) if kept)


MASK_FINDINGS: tuple[MaskFinding, ...] = (
    MaskFinding(
        "segment-off-alignment",
        "Segment runs off the alignment (the interval floored to the block)",
        "new",
        "`reachable_block_mask` keeps a run every `R // B` blocks (`per_segment = "
        "segment_tokens // block_size`, the Mamba manager likewise, dense below two "
        "blocks). When `R` is not a multiple of the alignment `A`, those runs end at "
        "multiples of `floor_B(R)`, many of them off `A`, where no lookup lands (and, when "
        "`R` is not a multiple of the block either, off the segment ends `k * R`). The "
        "offloading connector hands the mask its chunk alignment (the full-attention "
        "block times `blocks_per_chunk`) and the configured `R`, "
        "which the coordinator only requires to be a multiple of `L`",
        "a later request sharing a segment's worth of tokens misses the segment state "
        "the interval promised; the core keeps the run at `floor_A(k * R)` instead "
        "(`OffGridInterval.SEGMENT_ENDS`; vLLM's form is `FLOORED_INTERVAL`)",
        GroupSpec.sliding_window(16, 17),
        64,
        96,
        24,
        100,
    ),
)


def mask_findings_markdown() -> list[str]:
    """The section's lines for these findings (runs vLLM)."""
    lines = [
        "### Options: the mask called as the offloading connector calls it",
        "",
        "A later request sharing `k` tokens lands at the last segment boundary at or "
        "below `k`, floored to `A`; the blocks it reads there must be kept "
        "(`audit/vllm/mask_findings.py`).",
        "",
        "| finding | call | lands at | reads blocks | vLLM keeps | core keeps | upstream |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for finding in MASK_FINDINGS:
        seen = finding.observe()
        lines.append(
            f"| {finding.title} (`{finding.key}`) | {finding.call()}, k={finding.shared_tokens} "
            f"| {seen.landing} | {list(seen.needed)} | {list(seen.vllm_kept)} "
            f"({'serves' if seen.vllm_serves else 'misses'}) | {list(seen.core_kept)} "
            f"({'serves' if seen.core_serves else 'misses'}) | {finding.upstream} |"
        )
    lines.append("")
    for finding in MASK_FINDINGS:
        lines += [
            f"**{finding.title}** (`{finding.key}`). Cause: {finding.cause}. "
            f"Impact: {finding.impact}.",
            "",
        ]
    return lines
