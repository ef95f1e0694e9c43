"""Bounded-exhaustive check: every input up to a bound, an implementation against the oracle.

Hypothesis samples the parameter space; this walks all of it below a bound
(``bound`` scales every dimension), so small corner cases are covered by
construction; the inputs are :mod:`.inputs`'s enumerations, which the
batched paths sweep too. The implementation under test is an
argument (a module with core's public names), not an import, so the oracle
stays independent of what it judges and the same walk checks a vendored
copy. The walk calls the per-call API an engine uses, one binding per
setting reused for every input that shares it, so what a binding derives
once is judged on every call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import attrs

from .first_principles import (
    OracleGroup,
    oracle_declared_positions,
    oracle_decode_checkpoint,
    oracle_reconcile,
    oracle_split,
)
from .inputs import (
    CheckpointGrid,
    MaskInput,
    count_inputs,
    mask_inputs,
    next_turn_inputs,
    reconcile_inputs,
    split_inputs,
)

# The enumerations walked (:mod:`.inputs`) are re-exported: a caller of the
# walk sweeps or sizes the same inputs from the same module.
__all__ = [
    "CheckpointGrid",
    "Coverage",
    "MaskInput",
    "check_exhaustively",
    "count_inputs",
    "mask_inputs",
    "next_turn_inputs",
    "reconcile_inputs",
    "split_inputs",
]


@attrs.frozen
class Coverage:
    """Inputs checked per decision and the disagreements found (at most a few kept)."""

    checked: dict[str, int]
    mismatches: tuple[str, ...]
    mismatch_count: int

    @property
    def total(self) -> int:
        return sum(self.checked.values())


def _mask_cases(core: ModuleType, bound: int) -> Iterator[tuple[object, object, object]]:
    bindings: dict[tuple[Any, ...], Any] = {}
    for case in mask_inputs(core, bound):
        spec = case.spec
        key = (case.alignment_tokens, spec, case.use_eagle, case.retention_interval)
        binding = bindings.get(key) or bindings.setdefault(key, core.GroupMask(*key))
        want = case.oracle_answer()
        got = binding.reachable_block_mask(
            case.start_block,
            case.end_block,
            case.reachable_boundaries,
            case.final_segment_end_block,
        )
        yield got, want, case


_NO_OPTIONS = {
    "hash_lookahead_tokens": 0,
    "exact_junction_stop": False,
    "prefill_checkpoints": None,
}


def _split_cases(core: ModuleType, bound: int) -> Iterator[tuple[object, object, object]]:
    bindings: dict[tuple[Any, ...], Any] = {}
    # The split's engine settings: what a ChunkSplitter binds, in its order.
    engine = tuple(field.name for field in attrs.fields(core.ChunkSplitter))
    for kwargs in split_inputs(bound):
        settings = {**_NO_OPTIONS, **kwargs}
        key = tuple(settings[name] for name in engine)
        splitter = bindings.get(key)
        if splitter is None:
            grid = settings["prefill_checkpoints"]
            checkpoints = grid and grid.in_core(core)
            splitter = bindings[key] = core.ChunkSplitter(*key[:-1], checkpoints)
        request = {name: value for name, value in kwargs.items() if name not in engine}
        yield splitter.split(**request), oracle_split(**kwargs), kwargs


def _reconcile_cases(core: ModuleType, bound: int) -> Iterator[tuple[object, object, object]]:
    reconcilers: dict[Any, Any] = {}
    lookups: dict[tuple[Any, int], Any] = {}
    for geometry, sets, max_hit, limit in reconcile_inputs(core, bound):
        alignment = geometry.alignment_tokens
        reconciler = reconcilers.get(geometry) or reconcilers.setdefault(
            geometry, core.HitReconciler(geometry)
        )
        finders = []
        for spec, cached in zip(geometry.groups, sets, strict=True):
            key = (spec, alignment)
            lookup = lookups.get(key) or lookups.setdefault(key, core.GroupLookup(spec, alignment))
            finders.append(lookup.finder(cached.__contains__))
        got = reconciler.reconcile(finders, max_hit, limit)
        groups = [
            OracleGroup(spec.kind.value, spec.block_size, spec.window, cached, spec.eagle_group)
            for spec, cached in zip(geometry.groups, sets, strict=True)
        ]
        yield (
            (got.hit_length, got.longest_hit_length, got.shared_prefix_boundary),
            oracle_reconcile(groups, alignment, geometry.use_eagle, max_hit, limit),
            (geometry, sets, max_hit, limit),
        )


def _next_turn_cases(core: ModuleType, bound: int) -> Iterator[tuple[object, object, object]]:
    """The options' positions: ``decode_checkpoint`` and what ``promised_positions``
    adds with it, or with one declared checkpoint, against the oracle's lookups."""
    for geometry, case in next_turn_inputs(core, bound):
        groups = [(g.kind.value, g.block_size, g.window, g.eagle_group) for g in geometry.groups]
        alignment, eagle = geometry.alignment_tokens, geometry.use_eagle
        if "finished_tokens" in case:
            tokens = case["finished_tokens"]
            want = oracle_decode_checkpoint(
                groups, geometry.hash_block_size, alignment, eagle, tokens
            )
            prompt = tokens - 1
            base = set(core.promised_positions(geometry, prompt))
            added = set(core.promised_positions(geometry, prompt, finished_tokens=tokens))
            got_position = core.decode_checkpoint(geometry, tokens)
            got = (got_position, added == base | ({want} - {0}))
            yield got, (want, True), (geometry, case)
            continue
        prompt, declared = case["num_prompt_tokens"], case["declared"]
        base = set(core.promised_positions(geometry, prompt))
        added = set(core.promised_positions(geometry, prompt, declared_checkpoints=(declared,)))
        want_set = base | oracle_declared_positions(groups, alignment, eagle, declared)
        yield sorted(added), sorted(want_set), (geometry, case)


DECISIONS: dict[str, Callable[[ModuleType, int], Iterator[tuple[object, object, object]]]] = {
    "reachable_block_mask": _mask_cases,
    "mamba_block_aligned_split": _split_cases,
    "reconcile_hits": _reconcile_cases,
    "promised_positions": _next_turn_cases,
}


# Inputs between two progress reports: a few per second at bound 3, and the
# check in the loop costs nothing measurable next to a decision's call.
PROGRESS_EVERY = 20_000


def check_exhaustively(
    core: ModuleType,
    bound: int,
    keep: int = 5,
    on_progress: Callable[[str, int], None] | None = None,
) -> Coverage:
    """Compare ``core`` (a module with core's public names) and the oracle on every input
    up to ``bound``; keep ``keep`` mismatches.

    ``on_progress(decision, inputs)`` hears of the inputs checked since its last call,
    every :data:`PROGRESS_EVERY` inputs and at the end of each decision; the totals
    to expect are :func:`count_inputs`."""
    checked: dict[str, int] = {}
    mismatches: list[str] = []
    count = 0
    for name, cases in DECISIONS.items():
        checked[name] = 0
        for got, want, case in cases(core, bound):
            checked[name] += 1
            if got != want:
                count += 1
                if len(mismatches) < keep:
                    mismatches.append(f"{name} {case!r}: core={got!r} oracle={want!r}")
            if on_progress is not None and checked[name] % PROGRESS_EVERY == 0:
                on_progress(name, PROGRESS_EVERY)
        if on_progress is not None:
            on_progress(name, checked[name] % PROGRESS_EVERY)
    return Coverage(checked, tuple(mismatches), count)
