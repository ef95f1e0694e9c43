"""Promised checkpoint positions: the one source of truth (docs/domain.md).

Most upstream defects are two places disagreeing about one position. Here
one function names every position a request promises a later lookup can
resume at, on the grid hits land on (:attr:`HybridGeometry.hit_grid_tokens`):
the reachable boundaries, every segment end under ``R > 0``, and, as
options, the positions the application declares and a finished request's
decode checkpoint (where the next turn resumes). The mask keeps what these
need, and :func:`checkpoint_stop` makes the split stop at every one of them,
so a promised Mamba state is always materialised
(docs/design/checkpoint-stops.md). :func:`promised_stop` is the same rule on
boundaries the caller holds already. Under speculative decoding a step
computes several tokens, and whether a Mamba block end crossed inside a step
holds a state is the engine's (:class:`CrossedGridPoints`):
:func:`decode_step_state` names the state a step leaves, and
:func:`deepest_decode_state` the one kept for a position.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from .boundaries import reachable_boundaries
from .errors import InvalidArgument, int_error, require_int
from .geometry import GroupKind, HybridGeometry
from .grid import floor_to, next_grid_point

__all__ = [
    "CrossedGridPoints",
    "checkpoint_stop",
    "decode_checkpoint",
    "decode_step_state",
    "deepest_decode_state",
    "promised_positions",
    "promised_stop",
]


class CrossedGridPoints(enum.Enum):
    """What an engine keeps of a Mamba block end that a speculative decode step
    passes without ending there (a step verifies several draft tokens and
    accepts some; the value is its name in JSON).

    ``CAPTURED``: the step writes the state at the deepest Mamba block end it
    reaches, one per group (vLLM 0.33.0's ``postprocess_mamba`` copies the
    accepted column at ``floor_B(new computed)``; SGLang #30437 scatters the
    crossing state after verify). ``UNCACHED``: only the state at a step's end
    exists; a block end crossed inside it stays uncached (tokenspeed #1584,
    #1597). With one token a step both keep every block end.
    """

    CAPTURED = "captured"
    UNCACHED = "uncached"


def _boundaries(
    geometry: HybridGeometry, prompt: int, junction: int, declared: Iterable[int] = ()
) -> tuple[int, ...]:
    return reachable_boundaries(
        prompt,
        junction,
        geometry.eagle_drop_tokens,
        geometry.sub_block_full_attention_sizes,
        hit_grid_tokens=geometry.hit_grid_tokens,
        declared_checkpoints=declared,
    )


def promised_positions(
    geometry: HybridGeometry,
    num_prompt_tokens: int,
    shared_prefix_boundary: int = 0,
    prefill_end: int | None = None,
    *,
    declared_checkpoints: Iterable[int] = (),
    finished_tokens: int | None = None,
) -> tuple[int, ...]:
    """Every position (> 0) the request promises, on the hit grid, sorted.

    ``prefill_end`` (default ``P``) bounds the segment boundaries under
    ``R > 0``: those strictly below it are included. ``declared_checkpoints``
    (positions in ``[0, P]``) are promised as the junction is
    (:func:`reachable_boundaries`). ``finished_tokens``: the request finished
    with this many tokens (prompt and whole answer, ``> P``); its
    :func:`decode_checkpoint` is promised too. Raises
    :class:`InvalidArgument` on the arguments of :func:`reachable_boundaries`,
    a ``prefill_end`` below 1 or a ``finished_tokens`` not above ``P``.
    """
    boundaries = _boundaries(
        geometry, num_prompt_tokens, shared_prefix_boundary, declared_checkpoints
    )
    end = require_int("prefill_end", num_prompt_tokens if prefill_end is None else prefill_end, 1)
    grid = geometry.hit_grid_tokens
    positions = {floor_to(x, grid) for x in boundaries}
    positions.update(segment_boundaries(geometry.retention_interval, end))
    if finished_tokens is not None:
        require_int(
            "finished_tokens", finished_tokens, num_prompt_tokens + 1, "num_prompt_tokens + 1"
        )
        positions.add(decode_checkpoint(geometry, finished_tokens))
        positions.discard(0)
    return tuple(sorted(positions))


def decode_checkpoint(
    geometry: HybridGeometry,
    finished_tokens: int,
    *,
    states_from: int | None = None,
    written_states: Iterable[int] = (),
) -> int:
    """The deepest position the next turn can resume at, on the hit grid (0: none).

    A request that finished with ``N`` tokens (prompt and answer) computed
    ``c = N - 1`` of them: its last token was sampled, never computed. A
    follow-up that resends all ``N`` (and perhaps new text) finds, per group,
    only blocks the request filled: ``floor_B(c)`` tokens. An EAGLE group's
    lookup also matches its drop past the hit (full attention ``min(A, B)``,
    a sliding window one block; Mamba, whose state exists at every decode
    position, neither). So the follow-up lands at most at
    ``floor_G(min(c, min over groups of floor_B(c) - drop))``, and resumes
    there when every group kept what it reads there. Why per group, not ``c -
    d`` as the prompt's landings: a finished request holds no block past
    ``c``, so a group's own block grid cuts first.

    That is the answer with one token a step, where every grid point reached
    holds a Mamba state. With ``states_from`` (the computed tokens where the
    request's decode began, ``<= c``) and ``written_states`` (where its steps
    left states, each a :func:`decode_step_state`) it is the
    :func:`deepest_decode_state` at or below that landing. Raises
    :class:`InvalidArgument` when ``finished_tokens < 2`` (a prompt token and
    an answer token), ``states_from`` exceeds ``c``, or as
    :func:`deepest_decode_state` does.
    """
    computed = require_int("finished_tokens", finished_tokens, 2) - 1
    if not isinstance(geometry, HybridGeometry):
        raise InvalidArgument("geometry", geometry, "must be a HybridGeometry")
    alignment, use_eagle = geometry.alignment_tokens, geometry.use_eagle
    reach = computed
    for group in geometry.groups:
        if group.kind is GroupKind.MAMBA:
            continue
        drop = group.eagle_drop_tokens(alignment) if group.eagle_lookup(use_eagle) else 0
        reach = min(reach, floor_to(computed, group.block_size) - drop)
    landing = floor_to(max(reach, 0), geometry.hit_grid_tokens)
    if states_from is None:
        return landing
    if type(states_from) is int and states_from > computed:
        raise InvalidArgument("states_from", states_from, f"must be <= the {computed} computed")
    return deepest_decode_state(
        geometry, landing, states_from=states_from, written_states=written_states
    )


def deepest_decode_state(
    geometry: HybridGeometry,
    position: int,
    *,
    states_from: int | None,
    written_states: Iterable[int] = (),
) -> int:
    """The deepest position at or below ``position``, on the hit grid, where a
    decoding request holds every group's state (0: none).

    With one token a step (``states_from`` ``None``) every grid point reached
    holds one: ``floor_G(position)``. Under speculative steps a Mamba state
    above ``states_from`` (the computed tokens where decode began) exists
    only where a step left one (``written_states``, each a
    :func:`decode_step_state`; 0 for none): the deepest of them at or below
    ``position``, else ``floor_G(states_from)`` (the prompt's side, kept as
    without steps). Without a Mamba group the steps change nothing (every
    other group holds a block for every token computed). How an engine keeps
    the state a policy's decode checkpoint names. Raises
    :class:`InvalidArgument` on a ``position`` or ``states_from`` below 0 or
    a written state that is not a multiple of the hit grid ``>= 0``.
    """
    if not isinstance(geometry, HybridGeometry):
        raise InvalidArgument("geometry", geometry, "must be a HybridGeometry")
    grid = geometry.hit_grid_tokens
    floored = floor_to(require_int("position", position, 0), grid)
    if states_from is None:
        return floored
    begun = require_int("states_from", states_from, 0)
    deepest = floor_to(begun, grid)
    for index, state in enumerate(written_states):
        if type(state) is not int or state < 0 or state % grid:
            rule = f"must be an int >= 0, a multiple of the hit grid ({grid})"
            raise InvalidArgument(f"written_states[{index}]", state, rule)
        if deepest < state <= floored:
            deepest = state
    mamba = any(group.kind is GroupKind.MAMBA for group in geometry.groups)
    return floored if not mamba or floored <= begun else deepest


def decode_step_state(
    geometry: HybridGeometry, start: int, end: int, crossed: CrossedGridPoints
) -> int:
    """The position on the hit grid where a decode step from ``start`` to ``end``
    computed tokens leaves a state in every Mamba group (0: none).

    Under :attr:`CrossedGridPoints.UNCACHED` a state exists at the step's end
    only, so ``end`` when it is on the grid. Under ``CAPTURED`` each Mamba
    group writes its deepest block end in ``(start, end]``; the hit grid's
    deepest point in it holds every group's state only if no group's capture
    lies past it (a step crossing two block ends keeps the deeper). Raises
    :class:`InvalidArgument` when ``start < 0``, ``end <= start`` or
    ``crossed`` is not a :class:`CrossedGridPoints`.
    """
    if not isinstance(geometry, HybridGeometry):
        raise InvalidArgument("geometry", geometry, "must be a HybridGeometry")
    require_int("start", start, 0)
    require_int("end", end, start + 1, "start + 1")
    if not isinstance(crossed, CrossedGridPoints):
        raise InvalidArgument("crossed", crossed, "must be a CrossedGridPoints")
    grid = geometry.hit_grid_tokens
    if crossed is CrossedGridPoints.UNCACHED:
        return 0 if end % grid else end
    position = floor_to(end, grid)
    if position <= start:
        return 0
    for group in geometry.groups:
        if group.kind is GroupKind.MAMBA and floor_to(end, group.block_size) != position:
            return 0
    return position


def segment_boundaries(retention_interval: int | None, prefill_end: int) -> range:
    """The segment boundaries ``R, 2R, ...`` strictly below ``prefill_end``.

    Empty unless ``R > 0`` (dense and ``R = 0`` retention have no segments).
    Raises :class:`InvalidArgument` on a negative ``R`` or a negative ``prefill_end``.
    """
    end = require_int("prefill_end", prefill_end, 0)
    if retention_interval is None:
        return range(0)
    interval = require_int("retention_interval", retention_interval, 0)
    return range(interval, end, interval) if interval else range(0)


def checkpoint_stop(
    geometry: HybridGeometry,
    *,
    start: int,
    end: int,
    num_prompt_tokens: int,
    shared_prefix_boundary: int = 0,
) -> int:
    """The earliest promised position strictly inside ``(start, end)``, else ``end``.

    Equivalent to filtering :func:`promised_positions` (with ``prefill_end =
    end``) but computes the segment boundary directly, so its cost does not
    grow with the prompt. Raises :class:`InvalidArgument` when ``start < 0``,
    ``end < start`` or the boundary arguments are invalid.
    """
    require_int("start", start, 0)
    require_int("end", end, start, "start")
    return promised_stop(
        geometry,
        _boundaries(geometry, num_prompt_tokens, shared_prefix_boundary),
        start=start,
        end=end,
    )


def promised_stop(
    geometry: HybridGeometry, reachable_boundaries: Iterable[int], *, start: int, end: int
) -> int:
    """:func:`checkpoint_stop` of a request whose :func:`reachable_boundaries`
    (on ``geometry``'s hit grid) the caller has already.

    For a policy that asks them for every mask of a request and memoizes
    them: the split then does not derive them again per chunk. The earliest
    of each boundary floored to the hit grid and of the segment boundaries,
    strictly inside ``(start, end)``, else ``end``. Raises
    :class:`InvalidArgument` when ``start < 0``, ``end < start`` or a
    boundary is not an int ``>= 0``.
    """
    # Tested inline (a policy's split asks this on every chunk); only a failed
    # test builds the error, naming the argument (and the boundary's index).
    if type(start) is not int or type(end) is not int or not 0 <= start <= end:
        require_int("start", start, 0)
        require_int("end", end, start, "start")
    grid = geometry.hit_grid_tokens
    stop = end
    for index, boundary in enumerate(reachable_boundaries):
        if type(boundary) is not int or boundary < 0:
            raise int_error(f"reachable_boundaries[{index}]", boundary, 0)
        position = boundary // grid * grid  # floor_to, inlined
        if start < position < stop:
            stop = position
    interval = geometry.retention_interval
    if interval:
        segment = next_grid_point(start, interval)
        if segment < stop:
            stop = segment
    return stop
