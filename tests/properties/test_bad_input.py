"""Every invalid argument raises ``InvalidArgument`` naming the argument and value.

Each property starts from a valid call (drawn from the same strategies as the
oracle properties), breaks exactly one argument with a value drawn from that
argument's invalid domain, and checks the error names that argument, shows
the value and states a rule. Never a silent wrong answer.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .core_under_test import (
    ChunkSplitter,
    CrossedGridPoints,
    GroupKind,
    GroupLookup,
    GroupMask,
    GroupSpec,
    HitReconciler,
    HybridGeometry,
    InvalidArgument,
    OffGridInterval,
    PrefillCheckpoints,
    checkpoint_stop,
    decode_checkpoint,
    decode_step_state,
    deepest_decode_state,
    group_finder,
    last_cacheable_position,
    mamba_block_aligned_split,
    prefill_end,
    promised_positions,
    promised_stop,
    reachable_block_mask,
    reachable_boundaries,
    reconcile_hits,
    shared_prefix_boundary,
    sliding_window_need,
)
from .oracle_adapters import finders_for
from .strategies import geometries, mask_inputs, reconcile_inputs, split_inputs

not_an_int = st.one_of(
    st.booleans(), st.floats(allow_nan=False), st.none(), st.text(max_size=3), st.just([1])
)
negative = st.integers(max_value=-1)
not_a_bool = st.one_of(st.integers(0, 1), st.none(), st.text(max_size=2))


def assert_rejects(call: Any, argument: str, value: object) -> None:
    with pytest.raises(InvalidArgument) as info:
        call()
    err = info.value
    assert err.argument == argument, f"expected {argument!r} to be named, got {err}"
    assert err.value == value or (err.value is value)
    assert err.rule and argument in str(err) and repr(value) in str(err)


def _split_breaks(args: dict[str, Any]) -> st.SearchStrategy[tuple[str, object]]:
    """(argument, invalid value) pairs for a valid split call ``args``."""
    block = args["block_size"]
    start = args["num_new_local_computed_tokens"] + args["num_external_computed_tokens"]
    counts = [
        "num_computed_tokens",
        "num_new_tokens",
        "shared_prefix_boundary",
        "num_new_local_computed_tokens",
        "num_external_computed_tokens",
    ]
    return st.one_of(
        st.tuples(st.sampled_from(counts), st.one_of(negative, not_an_int)),
        st.tuples(st.just("num_prompt_tokens"), st.one_of(st.integers(max_value=0), not_an_int)),
        st.tuples(
            st.just("num_tokens"),
            st.one_of(st.integers(max_value=args["num_prompt_tokens"] - 1), not_an_int),
        ),
        st.tuples(st.just("block_size"), st.one_of(st.integers(max_value=0), not_an_int)),
        st.tuples(
            st.sampled_from(["use_eagle", "partial_hits", "exact_junction_stop"]), not_a_bool
        ),
        st.tuples(st.just("hash_lookahead_tokens"), st.one_of(negative, not_an_int)),
        st.tuples(
            st.just("prefill_checkpoints"),
            st.one_of(
                st.just((1, block)), st.integers(), st.just(False), _off_grid_checkpoints(args)
            ),
        ),
        st.tuples(
            st.just("max_prefill_tokens"),
            st.one_of(st.integers(max_value=0), st.booleans(), st.floats(allow_nan=False)),
        ),
        st.tuples(
            st.just("last_cacheable"),
            st.one_of(negative, st.booleans(), st.floats(allow_nan=False)),
        ),
        st.tuples(
            st.just("hash_block_size"),
            st.one_of(
                st.integers(max_value=0),
                st.integers(1, 4 * block).filter(lambda h: block % h != 0),
                st.booleans(),
            ),
        ),
        # A start past the request's tokens.
        st.tuples(
            st.just("num_computed_tokens"),
            st.integers(args["num_tokens"] - start + 1, args["num_tokens"] + 50),
        ),
    )


def _off_grid_checkpoints(args: dict[str, Any]) -> st.SearchStrategy[PrefillCheckpoints]:
    """Checkpoints on a grid that is not a whole number of hash units (none when ``H = 1``)."""
    unit = args["hash_block_size"] or args["block_size"]
    if unit == 1:
        return st.nothing()
    return (
        st.integers(1, 4 * unit).filter(lambda u: u % unit).map(lambda u: PrefillCheckpoints(1, u))
    )


@given(st.data(), split_inputs())
def test_split_rejects_each_invalid_argument(data: st.DataObject, args: dict[str, Any]) -> None:
    argument, value = data.draw(_split_breaks(args))
    broken = {**args, argument: value}
    assert_rejects(lambda: mamba_block_aligned_split(**broken), argument, value)


def _mask_breaks(args: dict[str, Any]) -> st.SearchStrategy[tuple[str, object]]:
    block = args["spec"].block_size
    alignment = args["alignment_tokens"]
    intervals = [negative, st.booleans(), st.floats(allow_nan=False)]
    if args["spec"].kind.value == "mamba" and alignment % block and block % alignment:
        # Off the grid of a Mamba group whose A and B do not divide one another.
        unit = alignment * block // math.gcd(alignment, block)
        intervals.append(st.integers(1, 200).filter(lambda r: r % unit))
    return st.one_of(
        st.tuples(st.just("start_block"), st.one_of(negative, not_an_int)),
        st.tuples(
            st.just("end_block"),
            st.one_of(st.integers(max_value=args["start_block"] - 1), not_an_int),
        ),
        st.tuples(st.just("alignment_tokens"), st.one_of(st.integers(max_value=0), not_an_int)),
        st.tuples(st.just("spec"), st.one_of(st.none(), st.integers(), st.just("full"))),
        st.tuples(st.just("use_eagle"), not_a_bool),
        st.tuples(st.just("retention_interval"), st.one_of(*intervals)),
        st.tuples(st.just("off_grid_interval"), st.one_of(st.none(), st.text(max_size=3))),
        st.tuples(
            st.just("final_segment_end_block"),
            st.one_of(negative, not_an_int.filter(lambda value: value is not None)),
        ),
    )


@given(st.data(), mask_inputs())
def test_mask_rejects_each_invalid_argument(data: st.DataObject, args: dict[str, Any]) -> None:
    argument, value = data.draw(_mask_breaks(args))
    broken = {**args, argument: value}
    assert_rejects(lambda: reachable_block_mask(**broken), argument, value)


@given(st.data(), mask_inputs())
def test_mask_rejects_each_invalid_boundary(data: st.DataObject, args: dict[str, Any]) -> None:
    boundaries = list(args["reachable_boundaries"])
    index = data.draw(st.integers(0, len(boundaries)))
    value = data.draw(st.one_of(negative, not_an_int))
    boundaries.insert(index, value)
    broken = {**args, "reachable_boundaries": boundaries}
    assert_rejects(lambda: reachable_block_mask(**broken), f"reachable_boundaries[{index}]", value)


@given(
    st.sampled_from(["full", "sliding_window", "mamba"]),
    st.one_of(st.integers(max_value=0), not_an_int),
)
def test_group_spec_rejects_bad_block_size(kind: str, value: object) -> None:
    def build() -> GroupSpec:
        if kind == "sliding_window":
            return GroupSpec.sliding_window(value, 4)  # type: ignore[arg-type]
        return getattr(GroupSpec, kind)(value)  # type: ignore[no-any-return]

    assert_rejects(build, "block_size", value)


@given(st.integers(1, 8), st.one_of(st.integers(max_value=0), not_an_int))
def test_group_spec_rejects_bad_window(block: int, value: object) -> None:
    assert_rejects(lambda: GroupSpec.sliding_window(block, value), "window", value)  # type: ignore[arg-type]


@given(st.sampled_from([GroupKind.FULL, GroupKind.MAMBA]), st.integers(1, 8), st.integers(1, 64))
def test_group_spec_rejects_window_on_other_kinds(kind: GroupKind, block: int, window: int) -> None:
    assert_rejects(lambda: GroupSpec(kind, block, window), "window", window)


@given(st.sampled_from(["full", "sliding_window", "mamba"]), st.integers(1, 8), not_a_bool)
def test_group_spec_rejects_a_bad_eagle_group(kind: str, block: int, value: object) -> None:
    def build() -> GroupSpec:
        if kind == "sliding_window":
            return GroupSpec.sliding_window(block, 4, eagle_group=value)  # type: ignore[arg-type]
        return getattr(GroupSpec, kind)(block, eagle_group=value)  # type: ignore[no-any-return]

    assert_rejects(build, "eagle_group", value)


@given(geometries())
def test_eagle_needs_an_eagle_group(geometry: HybridGeometry) -> None:
    """EAGLE on with every group marked as the target model's is a contradiction."""
    groups = [attrs.evolve(g, eagle_group=False) for g in geometry.groups]
    assert_rejects(
        lambda: HybridGeometry(groups, geometry.hash_block_size, use_eagle=True), "use_eagle", True
    )
    assert HybridGeometry(groups, geometry.hash_block_size).eagle_drop_tokens == 0


@given(geometries(), st.data())
def test_geometry_rejects_each_invalid_attribute(
    geometry: HybridGeometry, data: st.DataObject
) -> None:
    sizes = [g.block_size for g in geometry.groups]
    L = geometry.scheduler_block_size
    argument, value = data.draw(
        st.one_of(
            st.tuples(st.just("groups"), st.just(())),
            st.tuples(
                st.just("hash_block_size"),
                st.one_of(
                    st.integers(max_value=0),
                    st.integers(1, 2 * max(sizes)).filter(lambda h: any(b % h for b in sizes)),
                    not_an_int,
                ),
            ),
            st.tuples(st.sampled_from(["partial_hits", "use_eagle"]), not_a_bool),
            st.tuples(
                st.just("retention_interval"),
                st.one_of(
                    negative,
                    st.integers(1, 10 * L).filter(lambda r: r % L != 0),
                    st.booleans(),
                    st.floats(allow_nan=False),
                ),
            ),
        )
    )
    fields = {
        "groups": geometry.groups,
        "hash_block_size": geometry.hash_block_size,
        "partial_hits": geometry.partial_hits,
        "use_eagle": geometry.use_eagle,
        "retention_interval": None,
        argument: value,
    }
    assert_rejects(lambda: HybridGeometry(**fields), argument, value)


@given(geometries(), st.integers(0, 3), st.one_of(st.none(), st.integers(), st.just("full")))
def test_geometry_rejects_non_specs(geometry: HybridGeometry, index: int, value: object) -> None:
    groups = list(geometry.groups)
    index = min(index, len(groups))
    groups.insert(index, value)  # type: ignore[arg-type]
    assert_rejects(
        lambda: HybridGeometry(groups, geometry.hash_block_size), f"groups[{index}]", value
    )


@given(reconcile_inputs(), st.data())
def test_reconcile_rejects_bad_calls_and_bad_finders(
    case: tuple[HybridGeometry, list[frozenset[int]], int, int], data: st.DataObject
) -> None:
    geometry, cached, max_hit, _ = case
    finders = finders_for(geometry, cached)
    assert_rejects(lambda: reconcile_hits(geometry, finders[:-1], max_hit), "finders", finders[:-1])
    bad_m = data.draw(st.one_of(negative, not_an_int))
    assert_rejects(lambda: reconcile_hits(geometry, finders, bad_m), "max_hit_length", bad_m)
    bad_limit = data.draw(st.one_of(negative, not_an_int.filter(lambda v: v is not None)))
    assert_rejects(
        lambda: reconcile_hits(geometry, finders, max_hit, bad_limit), "lookup_limit", bad_limit
    )
    # A finder that answers out of range, off the alignment grid, or not an int.
    index = data.draw(st.integers(0, len(finders) - 1))
    alignment = geometry.alignment_tokens
    answer = data.draw(
        st.one_of(
            negative,
            st.integers(max_hit + 1, max_hit + 100),
            st.integers(1, max(max_hit, 1)).filter(lambda v: v % alignment != 0),
            st.floats(allow_nan=False),
            st.none(),
        )
    )
    broken = list(finders)
    broken[index] = lambda bound, drop: answer  # type: ignore[assignment, return-value]
    with pytest.raises(InvalidArgument) as info:
        reconcile_hits(geometry, broken, max_hit)
    # An earlier finder may shorten the candidate first; then any later finder
    # returning more than that candidate is rejected too, always by name.
    assert info.value.argument.startswith("finders[")


@given(st.integers(0, 10**6), st.integers(1, 10**6))
def test_shared_prefix_boundary_rejects_hit_longer_than_longest(longest: int, extra: int) -> None:
    hit = longest + extra
    assert_rejects(lambda: shared_prefix_boundary(hit, longest), "longest_hit_length", longest)
    assert_rejects(lambda: shared_prefix_boundary(-extra, longest), "hit_length", -extra)


@given(st.one_of(st.integers(max_value=0), not_an_int), st.integers(max_value=-1))
def test_reachable_boundaries_reject_bad_positions(prompt: object, junction: int) -> None:
    assert_rejects(lambda: reachable_boundaries(prompt), "num_prompt_tokens", prompt)  # type: ignore[arg-type]
    assert_rejects(lambda: reachable_boundaries(5, junction), "shared_prefix_boundary", junction)
    assert_rejects(lambda: reachable_boundaries(5, 0, junction), "eagle_drop_tokens", junction)
    assert_rejects(
        lambda: reachable_boundaries(5, 0, 0, (4, junction)), "whole_block_sizes[1]", junction
    )
    assert_rejects(lambda: reachable_boundaries(5, 0, 0, (0,)), "whole_block_sizes[0]", 0)
    grid = junction + 1  # <= 0
    assert_rejects(lambda: reachable_boundaries(5, hit_grid_tokens=grid), "hit_grid_tokens", grid)


@given(geometries(), st.integers(1, 100), st.integers(0, 100), st.integers(1, 100))
def test_checkpoints_reject_bad_positions(
    geometry: HybridGeometry, prompt: int, start: int, back: int
) -> None:
    assert_rejects(lambda: promised_positions(geometry, -back), "num_prompt_tokens", -back)
    assert_rejects(
        lambda: promised_positions(geometry, prompt, -back), "shared_prefix_boundary", -back
    )
    assert_rejects(
        lambda: promised_positions(geometry, prompt, 0, 1 - back), "prefill_end", 1 - back
    )
    bad = start - back
    assert_rejects(
        lambda: checkpoint_stop(geometry, start=start, end=bad, num_prompt_tokens=prompt),
        "end",
        bad,
    )
    assert_rejects(
        lambda: checkpoint_stop(geometry, start=-back, end=start, num_prompt_tokens=prompt),
        "start",
        -back,
    )
    assert_rejects(lambda: promised_stop(geometry, (), start=start, end=bad), "end", bad)
    assert_rejects(lambda: promised_stop(geometry, (), start=-back, end=start), "start", -back)
    assert_rejects(
        lambda: promised_stop(geometry, (prompt, -back), start=0, end=start),
        "reachable_boundaries[1]",
        -back,
    )


@given(geometries(), st.integers(1, 100), st.integers(0, 100), st.one_of(negative, not_an_int))
def test_the_next_turn_options_reject_bad_positions(
    geometry: HybridGeometry, prompt: int, extra: int, value: object
) -> None:
    past = prompt + 1 + extra
    assert_rejects(
        lambda: promised_positions(geometry, prompt, declared_checkpoints=(0, value)),  # type: ignore[arg-type]
        "declared_checkpoints[1]",
        value,
    )
    assert_rejects(
        lambda: promised_positions(geometry, prompt, declared_checkpoints=(past,)),
        "declared_checkpoints[0]",
        past,
    )
    assert_rejects(
        lambda: reachable_boundaries(prompt, declared_checkpoints=(value,)),  # type: ignore[arg-type]
        "declared_checkpoints[0]",
        value,
    )
    short = prompt - extra
    assert_rejects(
        lambda: promised_positions(geometry, prompt, finished_tokens=short),
        "finished_tokens",
        short,
    )
    if value is not None:  # None: the request has not finished (no decode checkpoint)
        assert_rejects(
            lambda: promised_positions(geometry, prompt, finished_tokens=value),  # type: ignore[arg-type]
            "finished_tokens",
            value,
        )
    low = 1 - extra
    assert_rejects(lambda: decode_checkpoint(geometry, low), "finished_tokens", low)
    assert_rejects(lambda: decode_checkpoint(value, 5), "geometry", value)  # type: ignore[arg-type]


def test_the_next_turn_options_name_their_rules() -> None:
    """The messages, pinned: what an engine author reads."""
    geometry = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4)
    cases: list[tuple[Any, str]] = [
        (
            lambda: promised_positions(geometry, 8, declared_checkpoints=(3, 9)),
            "declared_checkpoints[1]=9: must be <= num_prompt_tokens (8): "
            "a declared checkpoint lies in the prompt",
        ),
        (
            lambda: promised_positions(geometry, 8, declared_checkpoints=(-1,)),
            "declared_checkpoints[0]=-1: must be >= 0",
        ),
        (
            lambda: promised_positions(geometry, 8, finished_tokens=8),
            "finished_tokens=8: must be >= num_prompt_tokens + 1 (9)",
        ),
        (lambda: decode_checkpoint(geometry, 1), "finished_tokens=1: must be >= 2"),
        (
            lambda: decode_checkpoint(None, 5),  # type: ignore[arg-type]
            "geometry=None: must be a HybridGeometry",
        ),
        (
            lambda: decode_checkpoint(geometry, 9, states_from=9),
            "states_from=9: must be <= the 8 computed",
        ),
        (
            lambda: decode_checkpoint(geometry, 9, states_from=-1),
            "states_from=-1: must be >= 0",
        ),
        (
            lambda: decode_checkpoint(geometry, 9, states_from=2, written_states=(4, 6)),
            "written_states[1]=6: must be an int >= 0, a multiple of the hit grid (4)",
        ),
        (
            lambda: decode_step_state(geometry, 4, 4, CrossedGridPoints.CAPTURED),
            "end=4: must be >= start + 1 (5)",
        ),
        (
            lambda: decode_step_state(geometry, -1, 4, CrossedGridPoints.CAPTURED),
            "start=-1: must be >= 0",
        ),
        (
            lambda: decode_step_state(geometry, 0, 4, "captured"),  # type: ignore[arg-type]
            "crossed='captured': must be a CrossedGridPoints",
        ),
        (
            lambda: decode_step_state(None, 0, 4, CrossedGridPoints.UNCACHED),  # type: ignore[arg-type]
            "geometry=None: must be a HybridGeometry",
        ),
        (
            lambda: deepest_decode_state(geometry, -4, states_from=None),
            "position=-4: must be >= 0",
        ),
    ]
    for call, message in cases:
        with pytest.raises(InvalidArgument) as info:
            call()
        assert str(info.value) == message


@given(st.sampled_from(["alignment", "unit"]), st.one_of(st.integers(max_value=0), not_an_int))
def test_prefill_checkpoints_reject_a_bad_alignment_or_unit(argument: str, value: object) -> None:
    args: dict[str, object] = {"alignment": 1, "unit": 4, argument: value}
    assert_rejects(lambda: PrefillCheckpoints(**args), argument, value)


@given(st.integers(1, 10**4), st.integers(1, 64), st.data())
def test_last_cacheable_position_rejects_bad_arguments(
    tokens: int, unit: int, data: st.DataObject
) -> None:
    argument, value = data.draw(
        st.one_of(
            st.tuples(
                st.sampled_from(["num_tokens", "unit"]),
                st.one_of(st.integers(max_value=0), not_an_int),
            ),
            st.tuples(st.just("use_eagle"), not_a_bool),
            st.tuples(st.just("hash_lookahead_tokens"), st.one_of(negative, not_an_int)),
        )
    )
    args = {"num_tokens": tokens, "unit": unit, "use_eagle": False, argument: value}
    assert_rejects(lambda: last_cacheable_position(**args), argument, value)


@given(geometries(max_groups=1), st.data())
def test_group_finder_rejects_bad_arguments(geometry: HybridGeometry, data: st.DataObject) -> None:
    argument, value = data.draw(
        st.one_of(
            st.tuples(st.just("spec"), st.one_of(st.none(), st.integers(), st.just("mamba"))),
            st.tuples(st.just("is_cached"), st.one_of(st.none(), st.integers(), st.just({1}))),
            st.tuples(st.just("alignment_tokens"), st.one_of(st.integers(max_value=0), not_an_int)),
        )
    )
    args = {
        "spec": geometry.groups[0],
        "is_cached": frozenset().__contains__,
        "alignment_tokens": geometry.alignment_tokens,
        argument: value,
    }
    assert_rejects(lambda: group_finder(**args), argument, value)


@given(st.one_of(st.none(), st.integers(), st.just([GroupSpec.full(4)])))
def test_reconcile_rejects_a_non_geometry(value: object) -> None:
    assert_rejects(lambda: reconcile_hits(value, [], 0), "geometry", value)  # type: ignore[arg-type]


@given(st.integers(1, 64), st.integers(0, 64), st.data())
def test_prefill_end_rejects_bad_arguments(prompt: int, output: int, data: st.DataObject) -> None:
    argument, value = data.draw(
        st.one_of(
            st.tuples(
                st.just("num_prompt_tokens"), st.one_of(st.integers(max_value=0), not_an_int)
            ),
            st.tuples(
                st.just("num_tokens"), st.one_of(st.integers(max_value=prompt - 1), not_an_int)
            ),
        )
    )
    args = {"num_prompt_tokens": prompt, "num_tokens": prompt + output, argument: value}
    assert_rejects(lambda: prefill_end(**args), argument, value)


@given(st.integers(1, 64), st.integers(1, 16), st.data())
def test_sliding_window_need_rejects_bad_arguments(
    window: int, block: int, data: st.DataObject
) -> None:
    argument, value = data.draw(
        st.one_of(
            st.tuples(
                st.sampled_from(["window", "block_size"]),
                st.one_of(st.integers(max_value=0), not_an_int),
            ),
            st.tuples(st.just("use_eagle"), not_a_bool),
        )
    )
    args = {"window": window, "block_size": block, "use_eagle": False, argument: value}
    assert_rejects(lambda: sliding_window_need(**args), argument, value)


# The bound per-call API: what is bound is judged once, at construction, and
# each call judges what changes per call; both name the argument and value.

_MASK_BOUND = ("alignment_tokens", "spec", "use_eagle", "retention_interval", "off_grid_interval")
_MASK_DEFAULTS = {"off_grid_interval": OffGridInterval.SEGMENT_ENDS}
_SPLIT_BOUND = tuple(field.name for field in attrs.fields(ChunkSplitter))


@given(st.data(), mask_inputs())
def test_group_mask_rejects_each_invalid_attribute_and_call_argument(
    data: st.DataObject, args: dict[str, Any]
) -> None:
    argument, value = data.draw(_mask_breaks(args))
    args = {**_MASK_DEFAULTS, **args}
    broken = {**args, argument: value}
    if argument in _MASK_BOUND:
        assert_rejects(lambda: GroupMask(*(broken[name] for name in _MASK_BOUND)), argument, value)
        return
    binding = GroupMask(*(args[name] for name in _MASK_BOUND))
    call = (
        broken["start_block"],
        broken["end_block"],
        broken["reachable_boundaries"],
        broken["final_segment_end_block"],
    )
    assert_rejects(lambda: binding.reachable_block_mask(*call), argument, value)


@given(st.data(), mask_inputs())
def test_group_mask_call_rejects_each_invalid_boundary(
    data: st.DataObject, args: dict[str, Any]
) -> None:
    boundaries = list(args["reachable_boundaries"])
    index = data.draw(st.integers(0, len(boundaries)))
    value = data.draw(st.one_of(negative, not_an_int))
    boundaries.insert(index, value)
    binding = GroupMask(*({**_MASK_DEFAULTS, **args}[name] for name in _MASK_BOUND))
    assert_rejects(
        lambda: binding.reachable_block_mask(args["start_block"], args["end_block"], boundaries),
        f"reachable_boundaries[{index}]",
        value,
    )


# Past this many blocks no list holds a mask (CPython allocates 8 bytes a
# block): one over is refused by name, never an OverflowError; a dense
# group's None holds any range.
_MOST_BLOCKS = 2**60 - 1


@pytest.mark.parametrize(
    ("spec", "interval", "dense"),
    [
        (GroupSpec.mamba(4), 8, False),
        (GroupSpec.mamba(4), 0, False),
        (GroupSpec.sliding_window(4, 5), 8, False),
        (GroupSpec.sliding_window(4, 5), 6, False),
        (GroupSpec.mamba(4), None, True),
        (GroupSpec.full(4), None, True),
    ],
    ids=str,
)
@pytest.mark.parametrize("start", [0, 7, 2**70])
@pytest.mark.parametrize("extra", [1, 2**100])
def test_a_mask_longer_than_a_list_holds_is_refused_by_name(
    spec: GroupSpec, interval: int | None, dense: bool, start: int, extra: int
) -> None:
    end = start + _MOST_BLOCKS + extra
    calls = [
        lambda: GroupMask(4, spec, False, interval).reachable_block_mask(start, end, [12]),
        lambda: reachable_block_mask(start, end, 4, spec, False, interval, [12]),
    ]
    for call in calls:
        if dense:
            assert call() is None
        else:
            assert_rejects(call, "end_block", end)


@given(st.data(), split_inputs())
def test_chunk_splitter_rejects_each_invalid_attribute_and_call_argument(
    data: st.DataObject, args: dict[str, Any]
) -> None:
    argument, value = data.draw(_split_breaks(args))
    broken = {**args, argument: value}
    if argument in _SPLIT_BOUND:
        assert_rejects(
            lambda: ChunkSplitter(*(broken[name] for name in _SPLIT_BOUND)), argument, value
        )
        return
    binding = ChunkSplitter(*(args[name] for name in _SPLIT_BOUND))
    call = {name: value for name, value in broken.items() if name not in _SPLIT_BOUND}
    assert_rejects(lambda: binding.split(**call), argument, value)


@given(geometries(max_groups=1), st.data())
def test_group_lookup_rejects_bad_attributes_and_predicates(
    geometry: HybridGeometry, data: st.DataObject
) -> None:
    spec, alignment = geometry.groups[0], geometry.alignment_tokens
    bad_spec = data.draw(st.one_of(st.none(), st.integers(), st.just("mamba")))
    assert_rejects(lambda: GroupLookup(bad_spec, alignment), "spec", bad_spec)
    bad_alignment = data.draw(st.one_of(st.integers(max_value=0), not_an_int))
    assert_rejects(lambda: GroupLookup(spec, bad_alignment), "alignment_tokens", bad_alignment)
    bad_predicate = data.draw(st.one_of(st.none(), st.integers(), st.just({1})))
    lookup = GroupLookup(spec, alignment)
    assert_rejects(lambda: lookup.finder(bad_predicate), "is_cached", bad_predicate)
    bad_run = data.draw(st.one_of(st.integers(), st.just({1}), st.just("run")))
    assert_rejects(lambda: lookup.finder(bool, bad_run), "cached_run", bad_run)


@given(st.integers(1, 16), st.integers(1, 16), st.integers(1, 200), st.data())
def test_a_full_attention_finder_rejects_a_cached_run_outside_its_limit(
    block: int, alignment: int, bound: int, data: st.DataObject
) -> None:
    limit = -(-bound // block)  # the blocks reaching into [0, bound)
    bad = data.draw(
        st.one_of(
            st.integers(max_value=-1),
            st.integers(min_value=limit + 1),
            st.just(float(limit)),
            st.just(None),
            st.just(True),
        )
    )
    finder = GroupLookup(GroupSpec.full(block), alignment).finder(bool, lambda asked: bad)
    assert_rejects(lambda: finder(bound, False), "cached_run", bad)


@given(st.one_of(st.none(), st.integers(), st.just([GroupSpec.full(4)])))
def test_hit_reconciler_rejects_a_non_geometry(value: object) -> None:
    assert_rejects(lambda: HitReconciler(value), "geometry", value)  # type: ignore[arg-type]


@given(reconcile_inputs(), st.integers(max_value=-1))
def test_hit_reconciler_call_rejects_bad_bounds(
    case: tuple[HybridGeometry, list[frozenset[int]], int, int], bad: int
) -> None:
    geometry, cached, max_hit, _ = case
    reconciler = HitReconciler(geometry)
    finders = finders_for(geometry, cached)
    assert_rejects(lambda: reconciler.reconcile(finders[:-1], max_hit), "finders", finders[:-1])
    assert_rejects(lambda: reconciler.reconcile(finders, bad), "max_hit_length", bad)
    assert_rejects(lambda: reconciler.reconcile(finders, max_hit, bad), "lookup_limit", bad)
