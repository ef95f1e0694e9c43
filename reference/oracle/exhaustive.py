"""Bounded-exhaustive check: every input up to a bound, an implementation against the oracle.

Hypothesis samples the parameter space; this walks all of it below a bound
(``bound`` scales every dimension), so small corner cases are covered by
construction; the inputs are :mod:`.inputs`'s enumerations, which the
batched paths sweep too. The implementation under test is never imported
here: questions go out and answers come back as plain data
(:mod:`.answers`), answered in this process for ``core`` or in a contained
worker for a vendored copy (``vendor verify``), and every verdict is made
here. The answers come from the per-call API an engine uses, one binding
per setting reused for every input that shares it.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import attrs

from .answers import SPLIT_FIELDS, Answerer
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
    "Ask",
    "CheckpointGrid",
    "Coverage",
    "MaskInput",
    "answer_here",
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


# A question, the oracle's side of its verdict, and the input as a disagreement names it.
Case = tuple[list[Any], Any, object]
# Send a decision's questions; the returned call collects their answers, in order.
Ask = Callable[[str, list[list[Any]]], Callable[[], list[Any]]]
# An answer and the oracle's side: what was got and what was wanted, compared exactly.
Judge = Callable[[Any, Any], tuple[object, object]]


def _spec_fields(spec: Any) -> list[Any]:
    return [spec.kind.value, spec.block_size, spec.window, spec.eagle_group]


def _mask_cases(core: ModuleType, bound: int) -> Iterator[Case]:
    for case in mask_inputs(core, bound):
        question = [
            *_spec_fields(case.spec),
            *(case.alignment_tokens, case.use_eagle, case.retention_interval),
            *(case.start_block, case.end_block, list(case.reachable_boundaries)),
            case.final_segment_end_block,
        ]
        yield question, case.oracle_answer(), case


_NO_OPTIONS = {
    "hash_lookahead_tokens": 0,
    "exact_junction_stop": False,
    "prefill_checkpoints": None,
}


def _split_cases(core: ModuleType, bound: int) -> Iterator[Case]:
    for kwargs in split_inputs(bound):
        arguments = {**_NO_OPTIONS, "max_prefill_tokens": None, **kwargs}
        grid = arguments["prefill_checkpoints"]
        if grid is not None:
            arguments["prefill_checkpoints"] = [
                grid.alignment,
                grid.unit,
                grid.keyed_on_prefill_end,
            ]
        yield [arguments[name] for name in SPLIT_FIELDS], oracle_split(**kwargs), kwargs


def _geometries() -> Callable[[Any], tuple[list[Any], list[list[Any]]]]:
    """A geometry as a question holds it: ``[partial, eagle, unit]`` and each group's fields;
    the inputs come geometry by geometry, so the last one is kept."""
    last: list[Any] = [None, None]

    def fields(geometry: Any) -> tuple[list[Any], list[list[Any]]]:
        if geometry is not last[0]:
            head = [geometry.partial_hits, geometry.use_eagle, geometry.hash_block_size]
            last[:] = [geometry, (head, [_spec_fields(spec) for spec in geometry.groups])]
        found: tuple[list[Any], list[list[Any]]] = last[1]
        return found

    return fields


def _reconcile_cases(core: ModuleType, bound: int) -> Iterator[Case]:
    plain_geometry = _geometries()
    bits_of = functools.cache(lambda cached: sum(1 << block for block in cached))
    for geometry, sets, max_hit, limit in reconcile_inputs(core, bound):
        head, groups = plain_geometry(geometry)
        question = [*head, max_hit, limit, [bits_of(cached) for cached in sets], *groups]
        oracle_groups = [
            OracleGroup(spec.kind.value, spec.block_size, spec.window, cached, spec.eagle_group)
            for spec, cached in zip(geometry.groups, sets, strict=True)
        ]
        want = oracle_reconcile(
            oracle_groups, geometry.alignment_tokens, geometry.use_eagle, max_hit, limit
        )
        yield question, list(want), (geometry, sets, max_hit, limit)


def _next_turn_cases(core: ModuleType, bound: int) -> Iterator[Case]:
    """The options' positions: ``decode_checkpoint`` and what ``promised_positions``
    adds with it, or with one declared checkpoint, against the oracle's lookups."""
    plain_geometry = _geometries()
    for geometry, case in next_turn_inputs(core, bound):
        head, fields = plain_geometry(geometry)
        groups = [tuple(group) for group in fields]
        alignment, eagle = geometry.alignment_tokens, geometry.use_eagle
        if "finished_tokens" in case:
            tokens = case["finished_tokens"]
            want = oracle_decode_checkpoint(
                groups, geometry.hash_block_size, alignment, eagle, tokens
            )
            yield [*head, "finished", tokens, 0, *fields], ("finished", want), (geometry, case)
            continue
        prompt, declared = case["num_prompt_tokens"], case["declared"]
        oracle = oracle_declared_positions(groups, alignment, eagle, declared)
        question = [*head, "declared", prompt, declared, *fields]
        yield question, ("declared", oracle), (geometry, case)


def _positions(answer: Any, index: int) -> set[int] | None:
    """Part ``index`` of an answer as a set, if it is a list of exact ints."""
    if type(answer) is not list or len(answer) <= index or type(answer[index]) is not list:
        return None
    part = answer[index]
    return set(part) if all(type(p) is int for p in part) else None


def _judge_next_turn(answer: Any, oracle: tuple[str, Any]) -> tuple[object, object]:
    """``decode_checkpoint`` and whether ``finished_tokens`` adds exactly its position
    (not 0) to the promised positions; or the positions with one declared checkpoint,
    wanted as the copy's own positions without it and the oracle's for the checkpoint."""
    kind, value = oracle
    if kind == "finished":
        base, added = _positions(answer, 1), _positions(answer, 2)
        if base is None or added is None:
            return answer, [value, True]
        return [answer[0], added == base | ({value} - {0})], [value, True]
    base, added = _positions(answer, 0), _positions(answer, 1)
    if base is None or added is None:
        return answer, "two lists of positions"
    return sorted(added), sorted(base | value)


def _as_answered(answer: Any, oracle: Any) -> tuple[object, object]:
    return answer, oracle


DECISIONS: dict[str, tuple[Callable[[ModuleType, int], Iterator[Case]], Judge]] = {
    "reachable_block_mask": (_mask_cases, _as_answered),
    "mamba_block_aligned_split": (_split_cases, _as_answered),
    "reconcile_hits": (_reconcile_cases, _as_answered),
    "promised_positions": (_next_turn_cases, _judge_next_turn),
}
# Decisions a free function answers too, asked the same inputs when the walk asks it
# to: a copy's free function may differ from its bound class.
FREE_FUNCTIONS = ("reachable_block_mask", "mamba_block_aligned_split")


# Inputs between two progress reports: a few per second at bound 3, and the
# check in the loop costs nothing measurable next to a decision's call.
PROGRESS_EVERY = 20_000
BATCH = 1_000  # questions asked at once: a frame of well under 1 MiB


def _same(got: object, want: object) -> bool:
    """Equal and of the same exact types, element by element (``True`` is not ``1``)."""
    if type(got) is not type(want):
        return False
    if type(want) is list:
        assert isinstance(got, list) and isinstance(want, list)
        return len(got) == len(want) and all(map(_same, got, want))
    return got == want


def _asked(
    names: list[str], cases: Iterator[Case], ask: Ask
) -> Iterator[tuple[list[Case], list[list[Any]]]]:
    """Each batch of ``cases`` with the answers of each of ``names``. The next batch (the
    oracle's part of the work) is made while the answers to the one before are computed."""
    batches = iter(lambda: list(itertools.islice(cases, BATCH)), [])
    batch = next(batches, None)
    while batch:
        questions = [case[0] for case in batch]
        collect = [ask(name, questions) for name in names]
        following = next(batches, None)
        yield batch, [answers() for answers in collect]
        batch = following


def answer_here(core: ModuleType) -> Ask:
    """Ask ``core`` in this process."""
    answerer = Answerer(core)
    return lambda name, questions: functools.partial(answerer.answer_all, name, questions)


def check_exhaustively(
    core: ModuleType,
    bound: int,
    keep: int = 5,
    on_progress: Callable[[str, int], None] | None = None,
    ask: Ask | None = None,
    free_functions: bool = False,
) -> Coverage:
    """Compare the answers to every input up to ``bound`` with the oracle's; keep ``keep``
    mismatches.

    ``core`` (a module with core's public names) builds the inputs; ``ask`` answers
    them (default: ``core`` itself, here), so the implementation judged may be another
    one, asked in another process. ``free_functions`` asks the free mask and split
    functions the same inputs too (``free ...``). ``on_progress(decision, inputs)``
    hears of the inputs of ``decision`` checked since its last call, after at least
    :data:`PROGRESS_EVERY` and at the end of each decision; the totals to expect are
    :func:`count_inputs`."""
    ask = ask or answer_here(core)
    checked: dict[str, int] = {}
    mismatches: list[str] = []
    count = 0
    for decision, (cases, judge) in DECISIONS.items():
        free = free_functions and decision in FREE_FUNCTIONS
        names = [decision, f"free {decision}"] if free else [decision]
        checked.update(dict.fromkeys(names, 0))
        unreported = 0
        for batch, answered in _asked(names, cases(core, bound), ask):
            for name, answers in zip(names, answered, strict=True):
                checked[name] += len(batch)
                for (_, oracle, case), answer in zip(batch, answers, strict=True):
                    got, want = judge(answer, oracle)
                    if not _same(got, want):
                        count += 1
                        if len(mismatches) < keep:
                            mismatches.append(f"{name} {case!r}: core={got!r} oracle={want!r}")
            unreported += len(batch)
            if on_progress is not None and unreported >= PROGRESS_EVERY:
                on_progress(decision, unreported)
                unreported = 0
        if on_progress is not None:
            on_progress(decision, unreported)
    return Coverage(checked, tuple(mismatches), count)
