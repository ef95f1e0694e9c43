"""Every input of each decision up to a bound, and how many there are.

The enumerations the exhaustive walk (:mod:`.exhaustive`) checks against the
oracle; public, so the batched paths sweep the same inputs
(``cli.kernel_sweep``) and a caller can size a walk before starting it
(:func:`count_inputs`, in closed form). ``bound`` scales every dimension. An
implementation's types come from the module passed in (``core``: a module with
core's public names), never an import, so the oracle stays independent of what
it judges.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator
from types import ModuleType
from typing import Any, NamedTuple

from .first_principles import oracle_reachable_block_mask

__all__ = [
    "CheckpointGrid",
    "MaskInput",
    "count_inputs",
    "group_spec",
    "mask_inputs",
    "next_turn_inputs",
    "reconcile_inputs",
    "split_inputs",
]


class MaskInput(NamedTuple):
    """The arguments of ``core.reachable_block_mask`` (``spec``: core's GroupSpec)."""

    start_block: int
    end_block: int
    alignment_tokens: int
    spec: Any
    use_eagle: bool
    retention_interval: int | None
    reachable_boundaries: tuple[int, ...]
    final_segment_end_block: int | None = None

    def oracle_answer(self) -> list[bool] | None:
        """The first-principles oracle's mask for these arguments."""
        spec = self.spec
        return oracle_reachable_block_mask(
            self.start_block,
            self.end_block,
            self.alignment_tokens,
            spec.kind.value,
            spec.block_size,
            spec.window,
            self.use_eagle,
            self.retention_interval,
            self.reachable_boundaries,
            self.final_segment_end_block,
            spec.eagle_group,
        )


def group_spec(
    core: ModuleType, kind: str, block_size: int, window: int, eagle_group: bool = True
) -> Any:
    """``core``'s group of ``kind`` (``window`` only matters for sliding-window groups)."""
    if kind == "full":
        return core.GroupSpec.full(block_size, eagle_group=eagle_group)
    if kind == "sliding_window":
        return core.GroupSpec.sliding_window(block_size, window, eagle_group=eagle_group)
    return core.GroupSpec.mamba(block_size, eagle_group=eagle_group)


# (EAGLE on, the group an EAGLE group) settings a mask is checked under. A
# sliding window that is not an EAGLE group is checked under EAGLE too: its
# mask is the only one EAGLE changes (no peek block for a target-model group).
_MASK_EAGLE = {
    "sliding_window": ((False, True), (True, True), (True, False)),
    "mamba": ((False, True), (True, True)),
    "full": ((False, True), (True, True)),
}


def mask_inputs(core: ModuleType, bound: int) -> Iterator[MaskInput]:
    """Every mask input with block sizes, windows, ranges and boundaries up to ``bound``.

    Retention intervals on the group's grid (``lcm(A, B)`` and twice it) and
    off it (``lcm(A, B) + 1``, except for a Mamba group whose ``A`` and ``B``
    do not divide one another, which core rejects); final segment ends from
    0 to past the range, without boundaries. EAGLE off and on, and for a
    sliding window on with the group not an EAGLE group.
    """
    for kind in ("sliding_window", "mamba", "full"):
        windows = range(1, bound + 3) if kind == "sliding_window" else (1,)
        for block, alignment, window in itertools.product(
            range(1, bound + 1), range(1, 2 * bound + 1), windows
        ):
            unit = math.lcm(alignment, block)
            boundary_sets = [(), *((x,) for x in range(0, 3 * bound + 1)), (1, 2 * unit)]
            calls: list[tuple[tuple[int, ...], int | None]] = [
                (boundaries, None) for boundaries in boundary_sets
            ]
            calls += [((), final) for final in range(0, 2 * bound + 2)]
            intervals: list[int | None] = [None, 0, unit, 2 * unit, unit + 1]
            if kind == "mamba" and alignment % block and block % alignment:
                intervals.pop()
            for eagle, eagle_group in _MASK_EAGLE[kind]:
                spec = group_spec(core, kind, block, window, eagle_group)
                for interval, start, length, (boundaries, final) in itertools.product(
                    intervals, range(bound + 1), range(bound + 1), calls
                ):
                    yield MaskInput(
                        start, start + length, alignment, spec, eagle, interval, boundaries, final
                    )


@dataclasses.dataclass(frozen=True)
class CheckpointGrid:
    """An internal checkpoint backend as plain ints (``core.PrefillCheckpoints``'s fields)."""

    alignment: int
    unit: int
    keyed_on_prefill_end: bool = False

    def in_core(self, core: ModuleType) -> Any:
        """The same backend as ``core.PrefillCheckpoints`` of the implementation under test."""
        return core.PrefillCheckpoints(self.alignment, self.unit, self.keyed_on_prefill_end)


def _option_variants(hash_unit: int, block: int) -> list[dict[str, Any]]:
    """The engine options of the split, each on alone, then all on together.

    Hash lookahead of two tokens (past one: one is the recomputed last token
    already), the exact junction stop, and internal checkpoints on the hash
    unit (tiles of one token) and on the block (tiles of a hash unit), and
    vLLM's form keyed on the prefill's end (tiles of a hash unit).
    """
    return [
        {"hash_lookahead_tokens": 2},
        {"exact_junction_stop": True},
        {"prefill_checkpoints": CheckpointGrid(1, hash_unit)},
        {"prefill_checkpoints": CheckpointGrid(hash_unit, block)},
        {"prefill_checkpoints": CheckpointGrid(hash_unit, hash_unit, keyed_on_prefill_end=True)},
        {
            "hash_lookahead_tokens": 2,
            "exact_junction_stop": True,
            "prefill_checkpoints": CheckpointGrid(1, hash_unit),
        },
    ]


def split_inputs(bound: int) -> Iterator[dict[str, Any]]:
    """Every split input (as keyword arguments) with sizes up to ``bound``.

    First every input without the engine options; then, for each variant of
    :func:`_option_variants`, every input without a local hit and with no
    prefill limit (the options move the stops, not how a chunk starts or
    is floored).
    """
    for block in range(1, bound + 2):
        for hash_unit in [h for h in range(1, block + 1) if block % h == 0]:
            yield from _split_inputs(bound, block, hash_unit, {}, every_start=True)
    for block in range(1, bound + 2):
        for hash_unit in [h for h in range(1, block + 1) if block % h == 0]:
            for options in _option_variants(hash_unit, block):
                yield from _split_inputs(bound, block, hash_unit, options, every_start=False)


def _split_inputs(
    bound: int, block: int, hash_unit: int, options: dict[str, Any], every_start: bool
) -> Iterator[dict[str, Any]]:
    """The inputs of one block and hash unit; ``every_start``: also local hits and limits."""
    limits = (None, 1, block) if every_start else (None,)
    local_hits = (0, 1) if every_start else (0,)
    for prompt in range(1, 2 * bound + 2):
        for total, eagle, partial, limit in itertools.product(
            range(prompt, prompt + 3), (False, True), (False, True), limits
        ):
            for computed, local in itertools.product(range(total + 1), local_hits):
                if computed + local > total:
                    continue
                start = computed + local
                for new, junction in itertools.product(range(total - start + 2), range(total + 2)):
                    yield dict(
                        num_computed_tokens=computed,
                        num_new_tokens=new,
                        num_prompt_tokens=prompt,
                        num_tokens=total,
                        block_size=block,
                        shared_prefix_boundary=junction,
                        use_eagle=eagle,
                        hash_block_size=hash_unit,
                        partial_hits=partial,
                        max_prefill_tokens=limit,
                        num_new_local_computed_tokens=local,
                        **options,
                    )


def reconcile_inputs(
    core: ModuleType, bound: int
) -> Iterator[tuple[Any, list[frozenset[int]], int, int]]:
    """Every one- and two-group geometry, cache state of ``bound + 1`` blocks, ``M``, and
    the EAGLE lookup limit (``M``, or ``M + 1`` as for a fully hashed request).

    Under EAGLE a two-group geometry is also checked with only one of its groups an
    EAGLE group (either one), with window 2 and the limit ``M + 1`` (what the
    engine passes), which keeps the walk's cost within a third more."""
    kinds = ("full", "sliding_window", "mamba")
    chain = bound + 1  # blocks of the request's chain a group may have cached
    layouts = [
        *(((kind, block),) for kind in kinds for block in (1, 2)),
        *(
            ((k1, b1), (k2, b2))
            for k1, k2 in itertools.product(kinds, repeat=2)
            for b1, b2 in itertools.product((1, 2), repeat=2)
        ),
    ]
    for layout, window, eagle, partial in itertools.product(
        layouts, (2, 3), (False, True), (False, True)
    ):
        flags = [(True,) * len(layout)]
        if eagle and len(layout) == 2 and window == 2:
            flags += [(True, False), (False, True)]
        longest_block = max(block for _, block in layout)
        for drafts in flags:
            specs = [
                group_spec(core, kind, block, window, draft)
                for (kind, block), draft in zip(layout, drafts, strict=True)
            ]
            geometry = core.HybridGeometry(specs, 1, partial_hits=partial, use_eagle=eagle)
            every_group = all(drafts)
            for cached in itertools.product(range(2**chain), repeat=len(specs)):
                sets = [frozenset(i for i in range(chain) if mask >> i & 1) for mask in cached]
                for max_hit in range(chain * longest_block + 1):
                    if every_group:
                        yield geometry, sets, max_hit, max_hit
                    if eagle:
                        yield geometry, sets, max_hit, max_hit + 1


def _next_turn_settings(
    bound: int,
) -> Iterator[tuple[tuple[tuple[str, int], ...], int, bool, bool, int, tuple[bool, ...]]]:
    """Every (layout, window, EAGLE, partial hits, hash unit, EAGLE groups) of the
    next-turn walk: one and two groups of blocks 1, 2 and 4, windows 1 to 3, hash
    units 1 and 2 (where 2 divides every block), and under EAGLE with two groups
    each group alone as the EAGLE group too. ``bound`` scales the lengths only."""
    kinds = ("full", "sliding_window", "mamba")
    sizes = (1, 2, 4)
    layouts = [
        *(((kind, block),) for kind in kinds for block in sizes),
        *(
            ((k1, b1), (k2, b2))
            for k1, k2 in itertools.product(kinds, repeat=2)
            for b1, b2 in itertools.product(sizes, repeat=2)
        ),
    ]
    for layout, window, eagle, partial, unit in itertools.product(
        layouts, (1, 2, 3), (False, True), (False, True), (1, 2)
    ):
        if any(block % unit for _, block in layout):
            continue
        flags = [(True,) * len(layout)]
        if eagle and len(layout) == 2:
            flags += [(True, False), (False, True)]
        for drafts in flags:
            yield layout, window, eagle, partial, unit, drafts


def _next_turn_lengths(bound: int) -> tuple[range, range]:
    """The finished requests' token counts and the prompts' lengths the walk tries."""
    return range(2, 4 * bound + 4), range(1, 2 * bound + 2)


def next_turn_inputs(core: ModuleType, bound: int) -> Iterator[tuple[Any, dict[str, int]]]:
    """Every geometry of :func:`_next_turn_settings` with each option of
    ``promised_positions`` alone: ``finished_tokens`` ``N`` (2 to ``4 * bound + 3``),
    and one declared checkpoint ``x`` in ``[0, P]`` of each prompt of 1 to
    ``2 * bound + 1`` tokens."""
    finished, prompts = _next_turn_lengths(bound)
    for layout, window, eagle, partial, unit, drafts in _next_turn_settings(bound):
        specs = [
            group_spec(core, kind, block, window, draft)
            for (kind, block), draft in zip(layout, drafts, strict=True)
        ]
        geometry = core.HybridGeometry(specs, unit, partial_hits=partial, use_eagle=eagle)
        for tokens in finished:
            yield geometry, {"finished_tokens": tokens}
        for prompt in prompts:
            for declared in range(prompt + 1):
                yield geometry, {"num_prompt_tokens": prompt, "declared": declared}


def count_inputs(bound: int) -> dict[str, int]:
    """How many inputs each decision's enumeration yields at ``bound``, without building any.

    Closed forms of the loops above (``tests/cli/test_exhaustive_cli.py`` checks them
    against the enumerations), so a caller can say how long a walk will take before
    starting it: the counts grow like ``bound**6`` (mask, split) and ``4**bound``
    (reconcile's cache states), so a walk at a large bound would never end. Linear in
    ``bound`` (and the reconcile count has about ``2 * bound`` bits): meant for the
    bounds a caller might still run, not for any int.
    """
    b = bound
    # mask: per (kind, block, alignment, window): EAGLE settings (3 sliding-window,
    # 2 otherwise) x intervals x start (b+1) x length (b+1) x calls (3b + 3 boundary
    # sets, 2b + 2 final ends); windows: b + 2 sliding-window, 1 otherwise; 5
    # intervals, 4 for a Mamba group whose A and B do not divide one another.
    pairs = b * 2 * b
    # (block, A) pairs where one divides the other: block | A, A | block, less A == block.
    dividing = sum(2 * b // k + b // k for k in range(1, b + 1)) - b
    settings = 3 * (b + 2) * 5 * pairs + 2 * (5 * pairs + 5 * pairs - (pairs - dividing))
    mask = settings * (b + 1) * (b + 1) * (5 * b + 5)

    def starts(total: int, with_local_hits: bool = True) -> int:
        """Sum of (total - start + 2) x (total + 2) over the (computed, local) pairs:
        local 0 starts at 0..total, local 1 (``with_local_hits``) at 1..total."""
        below = total * (total + 1) // 2 + 2 * (total + 1)
        above = (total - 1) * total // 2 + 2 * total if with_local_hits else 0
        return (below + above) * (total + 2)

    blocks = b + 1  # the hash units of a block are its divisors: sum of d(n) for n <= blocks
    hash_units = sum(blocks // k for k in range(1, blocks + 1))
    per_prompt = sum(
        starts(total) for prompt in range(1, 2 * b + 2) for total in range(prompt, prompt + 3)
    )
    split = hash_units * per_prompt * 2 * 2 * 3  # eagle, partial, limit
    # The option variants: no local hit, no limit; eagle, partial, five variants.
    per_prompt_no_hit = sum(
        starts(total, with_local_hits=False)
        for prompt in range(1, 2 * b + 2)
        for total in range(prompt, prompt + 3)
    )
    split += hash_units * per_prompt_no_hit * 2 * 2 * len(_option_variants(1, 1))
    chain = b + 1
    # (groups, longest block) of each layout: 6 one-group, 36 two-group.
    layouts = [(1, block) for block in (1, 2)] * 3 + [
        (2, max(b1, b2)) for _ in range(9) for b1 in (1, 2) for b2 in (1, 2)
    ]
    # window 2 x partial 2 x (one input without EAGLE + two with) = 12 per cache state
    # and M; a two-group layout adds, with window 2 only, partial 2 x which group is
    # the EAGLE group 2 (one limit each) = 4.
    reconcile = sum(
        (12 + 4 * (groups == 2)) * 2 ** (chain * groups) * (chain * longest + 1)
        for groups, longest in layouts
    )
    finished, prompts = _next_turn_lengths(bound)
    # A declared checkpoint in [0, P] of each prompt length 1..n: sum of (P + 1).
    longest = len(prompts)
    per_geometry = len(finished) + longest * (longest + 1) // 2 + longest
    next_turn = per_geometry * sum(1 for _ in _next_turn_settings(bound))
    return {
        "reachable_block_mask": mask,
        "mamba_block_aligned_split": split,
        "reconcile_hits": reconcile,
        "promised_positions": next_turn,
    }
