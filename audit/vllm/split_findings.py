"""Findings about vLLM 0.33.0's split on options the audit's engine path leaves off.

With internal prefill checkpoints on, vLLM's scheduler
(``Scheduler._mamba_block_aligned_split``) and its backend
(``compute_mamba_prefill_checkpoints``) each decide whether a chunk writes
the checkpoint, and must agree. A finding's counterexample is one chunk:
vLLM's scheduler splits it (on :class:`.split.SchedulerStandIn`), vLLM's
backend helper says what it writes there, the core's split does the same
beside it, and the position a resend lands at comes from first principles.
One chunk, not a harness scenario: the engine path has no backend that
writes checkpoints. Re-run on the installed vLLM when ``docs/findings.md``
is written; the observation is a record, the text only its rendering.
"""

from __future__ import annotations

import importlib

import attrs

from junction.core import GroupSpec, HybridGeometry, PrefillCheckpoints, mamba_block_aligned_split
from junction.reference.oracle.first_principles import oracle_last_cacheable_position
from junction.upstream.vllm_0_33.scheduler import VllmSplitOptions
from junction.upstream.vllm_0_33.specs import vllm_geometry

from .split import SchedulerStandIn, make_request

__all__ = ["SPLIT_FINDINGS", "SplitFinding", "SplitObservation", "split_findings_markdown"]


@attrs.frozen
class SplitObservation:
    """Where each side's chunk ends, the Mamba states it leaves, and where a resend lands."""

    landing: int  # where a resend of the request's tokens lands (tokens)
    vllm_chunk: int  # tokens vLLM's scheduler schedules
    vllm_states: tuple[int, ...]  # positions whose Mamba state vLLM's chunk leaves
    core_chunk: int  # tokens the core's split schedules (keyed on the chunk's end)
    core_states: tuple[int, ...]
    compatibility_chunk: int  # the core's split in vLLM's form (keyed on the prefill's end)

    @property
    def vllm_serves(self) -> bool:
        return self.landing in self.vllm_states

    @property
    def core_serves(self) -> bool:
        return self.landing in self.core_states


@attrs.frozen
class SplitFinding:
    """A departure of vLLM's split, with the chunk that shows it.

    A request with ``num_prompt_tokens`` prompt tokens and ``num_tokens`` in
    all (accepted output included: a resumed request) has nothing computed;
    ``num_new_tokens`` is the budget for its chunk, and the backend's kernel
    tiles are ``tiles`` tokens.
    """

    key: str
    title: str
    upstream: str
    cause: str
    impact: str
    geometry: HybridGeometry
    tiles: int
    num_prompt_tokens: int
    num_tokens: int
    num_new_tokens: int

    @property
    def _unit(self) -> int:
        """The grid lookups land on, where the checkpoint lies (vLLM's ``ckpt_block_size``)."""
        geometry = self.geometry
        partial = geometry.hash_block_size < geometry.scheduler_block_size
        return (
            geometry.hash_block_size
            if partial and geometry.partial_hits
            else geometry.scheduler_block_size
        )

    def observe(self) -> SplitObservation:
        """Split the chunk on vLLM and on the core, and run vLLM's backend on each; needs vLLM."""
        geometry = self.geometry
        landing = oracle_last_cacheable_position(self.num_tokens, self._unit, geometry.use_eagle)
        request = make_request(list(range(self.num_tokens)), self.num_prompt_tokens)
        stand_in = SchedulerStandIn(
            geometry,
            self.num_new_tokens,
            options=VllmSplitOptions(prefill_checkpoint_alignment=self.tiles),
        )
        theirs = stand_in.split(request, self.num_new_tokens)
        ours, compatible = (self._core_split(keyed) for keyed in (False, True))
        return SplitObservation(
            landing, theirs, self._states(theirs), ours, self._states(ours), compatible
        )

    def _core_split(self, keyed_on_prefill_end: bool) -> int:
        geometry = self.geometry
        return mamba_block_aligned_split(
            num_computed_tokens=0,
            num_new_tokens=self.num_new_tokens,
            num_prompt_tokens=self.num_prompt_tokens,
            num_tokens=self.num_tokens,
            block_size=geometry.mamba_block_size,
            use_eagle=geometry.use_eagle,
            hash_block_size=geometry.hash_block_size,
            partial_hits=geometry.partial_hits,
            prefill_checkpoints=PrefillCheckpoints(
                self.tiles, self._unit, keyed_on_prefill_end=keyed_on_prefill_end
            ),
        )

    def _states(self, chunk: int) -> tuple[int, ...]:
        """The chunk's end, and the checkpoint vLLM's backend writes inside ``[0, chunk)``."""
        geometry = self.geometry
        checkpoint = importlib.import_module("vllm.model_executor.layers.mamba.checkpoint")
        offsets, columns = checkpoint.compute_mamba_prefill_checkpoints(
            [chunk],
            [chunk],
            geometry.hash_block_size,
            geometry.mamba_block_size,
            self.tiles,
            geometry.use_eagle,
            self._unit,
        )
        # The offset is into the chunk's query, which starts at 0.
        written = (int(offsets[0]),) if int(columns[0]) >= 0 else ()
        return (*written, chunk)

    def call(self) -> str:
        geometry = self.geometry
        return (
            f"b={geometry.mamba_block_size} H={geometry.hash_block_size} "
            f"L={geometry.scheduler_block_size}, tiles of {self.tiles}, "
            f"P={self.num_prompt_tokens} N={self.num_tokens}, chunk [0, {self.num_new_tokens})"
        )


SPLIT_FINDINGS: tuple[SplitFinding, ...] = (
    SplitFinding(
        "checkpoint-keyed-on-prefill-end",
        "Internal prefill checkpoint: the scheduler and the backend key it on different ends",
        "new",
        "`Scheduler._mamba_block_aligned_split` decides whether the backend writes the "
        "internal checkpoint (`use_internal_checkpoint`, which drops the replay stop) from "
        "`get_mamba_prefill_checkpoint_position(prefill_end, ...)`, the checkpoint of the "
        "*prefill's* end, while the backend (`compute_mamba_prefill_checkpoints`, whose "
        "docstring says it declines in lockstep with the scheduler) and `MambaManager` take it "
        "at the *chunk's* end (`seq_len`). For a resumed request whose chunk also takes the "
        "last token the two are one unit apart, and the backend's tiles "
        "(`prefill_checkpoint_alignment`) can fit one and not the other",
        "the scheduler runs the whole chunk for a checkpoint the backend never writes, so the "
        "prefill leaves no Mamba state where a resend of the request's tokens lands; the core "
        "keys the checkpoint on the chunk's end, where the backend writes it "
        "(`PrefillCheckpoints(keyed_on_prefill_end=False)`; vLLM's form is the compatibility "
        "flag `keyed_on_prefill_end=True`)",
        vllm_geometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4),
        8,
        21,
        29,
        29,
    ),
)


def split_findings_markdown() -> list[str]:
    """The section's lines for these findings (runs vLLM)."""
    lines = [
        "### Options: the split with internal prefill checkpoints",
        "",
        "vLLM's scheduler splits the chunk, vLLM's backend helper says which checkpoint it "
        "writes in it; the core splits the same chunk with the same backend. A resend of the "
        "request's tokens lands at the deepest position a lookup of them can "
        "(`audit/vllm/split_findings.py`).",
        "",
        "| finding | call | lands at | vLLM: chunk, Mamba states | core: chunk, Mamba states "
        "| upstream |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for finding in SPLIT_FINDINGS:
        seen = finding.observe()
        lines.append(
            f"| {finding.title} (`{finding.key}`) | {finding.call()} | {seen.landing} "
            f"| {seen.vllm_chunk}, {list(seen.vllm_states)} "
            f"({'serves' if seen.vllm_serves else 'misses'}) "
            f"| {seen.core_chunk}, {list(seen.core_states)} "
            f"({'serves' if seen.core_serves else 'misses'}) | {finding.upstream} |"
        )
    lines.append("")
    for finding in SPLIT_FINDINGS:
        lines += [
            f"**{finding.title}** (`{finding.key}`). Cause: {finding.cause}. "
            f"Impact: {finding.impact}.",
            "",
        ]
    return lines
