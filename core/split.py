"""Decision 2: where a prefill chunk stops (``mamba_block_aligned_split``).

In Mamba align mode a state exists only at the end of a scheduled chunk and
cannot be rolled back, so every position a later lookup resumes at must be a
chunk end. This clips the proposed chunk ``[s, s + n)`` to the earliest
mandatory stop inside it: the next grid point when the chunk starts
mid-block, the last cacheable position (vLLM 0.33's formula), the partial
tail under partial hits, and the junction; the three engine options move
these stops (docs/domain.md, decision 2). Why one pure function of plain
integers: the scheduler, the oracle, the kernels and every policy call
exactly this. :class:`ChunkSplitter` binds what is fixed per engine once
(docs/design/bound-calls.md) and says where a backend writes the internal
checkpoint the split relied on.
"""

from __future__ import annotations

import attrs

from .errors import InvalidArgument, require_int, require_optional_int
from .grid import cdiv, floor_to, next_grid_point

__all__ = [
    "ChunkSplitter",
    "PrefillCheckpoints",
    "last_cacheable_position",
    "mamba_block_aligned_split",
    "prefill_end",
]


def prefill_end(num_prompt_tokens: int, num_tokens: int) -> int:
    """``max(P, N - 1)``: where a request's prefill ends and decode begins.

    Until the prompt is computed a chunk is prefill; after it, accepted output
    tokens not yet computed (a resumed request) are prefilled too, except the
    last, which every decode step computes to produce the next token. The
    split, the engine's long-prefill cap and its chunk counters all ask this.
    Raises :class:`InvalidArgument` when ``num_prompt_tokens < 1`` or
    ``num_tokens < num_prompt_tokens``.
    """
    # Tested and answered inline (a policy asks this on every chunk, the
    # drop-in on every decode step); the named checks raise.
    if (
        type(num_prompt_tokens) is not int
        or type(num_tokens) is not int
        or not 1 <= num_prompt_tokens <= num_tokens
    ):
        require_int("num_prompt_tokens", num_prompt_tokens, 1)
        require_int("num_tokens", num_tokens, num_prompt_tokens, "num_prompt_tokens")
    # max(P, N - 1), given N >= P.
    return num_tokens - 1 if num_tokens > num_prompt_tokens else num_prompt_tokens


def last_cacheable_position(
    num_tokens: int, unit: int, use_eagle: bool, hash_lookahead_tokens: int = 0
) -> int:
    """The deepest position whose state a later lookup of these tokens can use.

    A resend looks up at most ``num_tokens - 1`` tokens (the last is always
    recomputed for logits), so without EAGLE this is ``floor_unit(N - 1)``.
    With EAGLE the lookup also drops one unit it matched past the hit, so it is
    ``max(floor_unit(N) - unit, 0)``. With ``k = hash_lookahead_tokens`` a
    block's hash covers the ``k`` tokens after it, so a lookup proves a
    position (or, under EAGLE, the unit past it) only ``k`` tokens before the
    end: ``max(floor_unit(N - max(1, k)), 0)``, or
    ``max(floor_unit(N - k) - unit, 0)`` with EAGLE. Raises
    :class:`InvalidArgument` when ``num_tokens < 1``, ``unit < 1``,
    ``use_eagle`` is not a bool or ``hash_lookahead_tokens < 0``.
    """
    require_int("num_tokens", num_tokens, 1)
    require_int("unit", unit, 1)
    if type(use_eagle) is not bool:
        raise InvalidArgument("use_eagle", use_eagle, "must be a bool")
    require_int("hash_lookahead_tokens", hash_lookahead_tokens, 0)
    return _last_cacheable_position(num_tokens, unit, use_eagle, hash_lookahead_tokens)


def _last_cacheable_position(num_tokens: int, unit: int, use_eagle: bool, lookahead: int) -> int:
    if use_eagle:
        return max(floor_to(num_tokens - lookahead, unit) - unit, 0)
    return max(floor_to(num_tokens - max(1, lookahead), unit), 0)


def _positive(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    require_int(attribute.name, value, 1)


def _hash_unit(instance: ChunkSplitter, attribute: attrs.Attribute[int], value: object) -> None:
    block = instance.block_size
    if block % require_int(attribute.name, value, 1):
        raise InvalidArgument(attribute.name, value, f"must divide block_size={block}")


def _flag(instance: object, attribute: attrs.Attribute[bool], value: object) -> None:
    if type(value) is not bool:
        raise InvalidArgument(attribute.name, value, "must be a bool")


def _budget(instance: object, attribute: attrs.Attribute[int | None], value: object) -> None:
    require_optional_int(attribute.name, value, 1)


def _lookahead(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    require_int(attribute.name, value, 0)


@attrs.frozen
class PrefillCheckpoints:
    """A backend that writes the prefill's checkpoint state inside a chunk.

    vLLM's ``num_prefill_checkpoint_blocks > 0`` with its
    ``prefill_checkpoint_alignment``. The checkpoint is the last cacheable
    position on ``unit`` (the grid lookups land on: the hash unit with
    partial hits, else the scheduler block) of the chunk's tokens, ``x =
    last_cacheable_position(t, unit, ...)``. The backend writes it inside
    the chunk ``[s, t)`` that reaches the prefill's end when: ``s`` is
    on the hash grid, at least one hash unit lies between ``s`` and ``x``,
    ``s < x < t``, ``x - s`` is a multiple of ``alignment`` (the backend's
    kernel tiles), and the state slot it writes (the Mamba block before the
    chunk's last) comes after the block holding the chunk's initial state.

    The backend computes the checkpoint from the chunk it runs, so the split
    keys it there too; ``lcp(t)`` differs from ``lcp(prefill_end)`` only for
    a chunk that also takes the request's last token.
    ``keyed_on_prefill_end`` is vLLM 0.33.0's scheduler form, which keys it
    on the prefill's end while its backend keys it on the chunk's (a
    compatibility flag: it drops the replay stop for a checkpoint the backend
    may not write; docs/domain.md, decision 2).

    ``alignment`` and ``unit`` are ``>= 1`` and ``keyed_on_prefill_end`` a
    bool (:class:`InvalidArgument` naming the attribute);
    :class:`ChunkSplitter` requires ``unit`` to be a multiple of its hash unit.
    """

    alignment: int = attrs.field(validator=_positive)
    unit: int = attrs.field(validator=_positive)
    keyed_on_prefill_end: bool = attrs.field(default=False, validator=_flag)

    def writes(
        self, start: int, end: int, position: int, hash_block_size: int, block_size: int
    ) -> bool:
        """Whether the chunk ``[start, end)`` writes the state at ``position`` inside it."""
        initial_state_block = (start - 1) // block_size
        written_block = cdiv(end, block_size) - 2
        return (
            start % hash_block_size == 0
            and written_block > initial_state_block
            and start + hash_block_size <= position < end
            and (position - start) % self.alignment == 0
        )


def _checkpoints(
    instance: ChunkSplitter, attribute: attrs.Attribute[PrefillCheckpoints | None], value: object
) -> None:
    if value is None:
        return
    if not isinstance(value, PrefillCheckpoints):
        raise InvalidArgument(attribute.name, value, "must be None or a PrefillCheckpoints")
    unit = instance.hash_block_size
    if value.unit % unit:
        raise InvalidArgument(
            attribute.name, value, f"its unit must be a multiple of hash_block_size={unit}"
        )


@attrs.frozen
class ChunkSplitter:
    """Decision 2 bound to one engine: :func:`mamba_block_aligned_split`'s
    ``block_size`` (``b >= 1``), ``hash_block_size`` (divides ``b``; defaults
    to ``b``, and unlike the free function's it is never ``None``),
    ``use_eagle``, ``partial_hits``, ``max_prefill_tokens``
    (``None`` or ``>= 1``), ``hash_lookahead_tokens`` (``>= 0``),
    ``exact_junction_stop`` and ``prefill_checkpoints`` (``None`` or a
    :class:`PrefillCheckpoints` whose unit is a multiple of the hash unit),
    validated at construction (:class:`InvalidArgument` naming the attribute).
    """

    block_size: int = attrs.field(validator=_positive)
    hash_block_size: int = attrs.field(
        default=attrs.Factory(lambda self: self.block_size, takes_self=True),
        validator=_hash_unit,
    )
    use_eagle: bool = attrs.field(default=False, validator=_flag)
    partial_hits: bool = attrs.field(default=False, validator=_flag)
    max_prefill_tokens: int | None = attrs.field(default=None, validator=_budget)
    hash_lookahead_tokens: int = attrs.field(default=0, validator=_lookahead)
    exact_junction_stop: bool = attrs.field(default=False, validator=_flag)
    prefill_checkpoints: PrefillCheckpoints | None = attrs.field(
        default=None, validator=_checkpoints
    )

    def written_checkpoint(
        self,
        *,
        num_computed_tokens: int,
        num_new_tokens: int,
        num_prompt_tokens: int,
        num_tokens: int,
    ) -> int:
        """Where the backend writes the prefill's checkpoint state inside the chunk
        ``[c, c + n)`` (:class:`PrefillCheckpoints`), or 0 when it writes none there.

        Nonzero only with ``prefill_checkpoints``, for a chunk reaching the
        prefill's end in which :meth:`PrefillCheckpoints.writes` holds: the
        chunk :meth:`split` lets run past that position, and an engine
        modelling the backend keeps the state it writes there. Raises
        :class:`InvalidArgument` on the counts as :meth:`split` does.
        """
        require_int("num_computed_tokens", num_computed_tokens, 0)
        require_int("num_new_tokens", num_new_tokens, 0)
        require_int("num_prompt_tokens", num_prompt_tokens, 1)
        require_int("num_tokens", num_tokens, num_prompt_tokens, "num_prompt_tokens")
        if num_computed_tokens > num_tokens:
            raise InvalidArgument(
                "num_computed_tokens",
                num_computed_tokens,
                f"the chunk start must be <= num_tokens={num_tokens}",
            )
        return self._written(
            num_computed_tokens,
            num_computed_tokens + num_new_tokens,
            prefill_end(num_prompt_tokens, num_tokens),
        )

    def _written(self, start: int, end: int, decode_start: int) -> int:
        checkpoints = self.prefill_checkpoints
        if checkpoints is None or end < decode_start:
            return 0
        position = _last_cacheable_position(
            decode_start if checkpoints.keyed_on_prefill_end else end,
            checkpoints.unit,
            self.use_eagle,
            self.hash_lookahead_tokens,
        )
        if checkpoints.writes(start, end, position, self.hash_block_size, self.block_size):
            return position
        return 0

    def split(
        self,
        *,
        num_computed_tokens: int,
        num_new_tokens: int,
        num_prompt_tokens: int,
        num_tokens: int,
        shared_prefix_boundary: int = 0,
        num_new_local_computed_tokens: int = 0,
        num_external_computed_tokens: int = 0,
        last_cacheable: int | None = None,
    ) -> int:
        """:func:`mamba_block_aligned_split` of one request for this engine."""
        # The counts tested inline, in one expression (a policy splits every
        # chunk); only a failed test runs the named checks, which raise.
        if not (
            type(num_computed_tokens) is int
            and type(num_new_tokens) is int
            and type(num_prompt_tokens) is int
            and type(num_tokens) is int
            and type(shared_prefix_boundary) is int
            and type(num_new_local_computed_tokens) is int
            and type(num_external_computed_tokens) is int
            and (last_cacheable is None or (type(last_cacheable) is int and last_cacheable >= 0))
            and min(
                num_computed_tokens,
                num_new_tokens,
                shared_prefix_boundary,
                num_new_local_computed_tokens,
                num_external_computed_tokens,
            )
            >= 0
            and 1 <= num_prompt_tokens <= num_tokens
        ):
            require_int("num_computed_tokens", num_computed_tokens, 0)
            require_int("num_new_tokens", num_new_tokens, 0)
            require_int("num_prompt_tokens", num_prompt_tokens, 1)
            require_int("num_tokens", num_tokens, num_prompt_tokens, "num_prompt_tokens")
            require_int("shared_prefix_boundary", shared_prefix_boundary, 0)
            require_int("num_new_local_computed_tokens", num_new_local_computed_tokens, 0)
            require_int("num_external_computed_tokens", num_external_computed_tokens, 0)
            require_optional_int("last_cacheable", last_cacheable, 0)
        start = num_computed_tokens + num_new_local_computed_tokens + num_external_computed_tokens
        if start > num_tokens:
            raise InvalidArgument(
                "num_computed_tokens",
                num_computed_tokens,
                f"the chunk start (computed + local + external = {start}) must be <= "
                f"num_tokens={num_tokens}",
            )
        block_size, use_eagle = self.block_size, self.use_eagle
        lookahead = self.hash_lookahead_tokens
        decode_start = prefill_end(num_prompt_tokens, num_tokens)
        if start >= decode_start:
            return num_new_tokens
        end = start + num_new_tokens
        # The backend writes the prefill's checkpoint inside a chunk reaching
        # the prefill's end: the stops that only materialise it go.
        written_inside = self.prefill_checkpoints is not None and bool(
            self._written(start, end, decode_start)
        )
        if end < decode_start:
            aligned_end = floor_to(end, block_size)
            budget = self.max_prefill_tokens
            if aligned_end > start or budget is None or block_size <= budget:
                end = aligned_end

        stop = end
        junction = shared_prefix_boundary
        if start < junction < end:
            if not (self.exact_junction_stop and junction <= num_prompt_tokens):
                junction = start + floor_to(junction - start, block_size)
            stop = _earlier(stop, start, junction)
        if written_inside:
            return max(stop - start, 0)
        if start % block_size:
            stop = _earlier(stop, start, next_grid_point(start, block_size))
        if last_cacheable is None:
            last_cacheable = _last_cacheable_position(num_tokens, block_size, use_eagle, lookahead)
        stop = _earlier(stop, start, last_cacheable)
        if self.partial_hits:
            tail = _last_cacheable_position(
                num_prompt_tokens, self.hash_block_size, use_eagle, lookahead
            )
            if last_cacheable < tail < num_prompt_tokens:
                stop = _earlier(stop, start, tail)
        return max(stop - start, 0)


def mamba_block_aligned_split(
    *,
    num_computed_tokens: int,
    num_new_tokens: int,
    num_prompt_tokens: int,
    num_tokens: int,
    block_size: int,
    shared_prefix_boundary: int = 0,
    use_eagle: bool = False,
    hash_block_size: int | None = None,
    partial_hits: bool = False,
    max_prefill_tokens: int | None = None,
    num_new_local_computed_tokens: int = 0,
    num_external_computed_tokens: int = 0,
    last_cacheable: int | None = None,
    hash_lookahead_tokens: int = 0,
    exact_junction_stop: bool = False,
    prefill_checkpoints: PrefillCheckpoints | None = None,
) -> int:
    """Tokens to schedule this step for a request in Mamba align mode (0 = skip).

    With ``s = num_computed_tokens + num_new_local_computed_tokens +
    num_external_computed_tokens``, ``P = num_prompt_tokens``,
    ``N = num_tokens``, ``b = block_size`` (the Mamba group's block) and
    ``J = shared_prefix_boundary`` (docs/domain.md, decision 2):

    * Decode (``s >=`` :func:`prefill_end`, ``max(P, N - 1)``):
      ``num_new_tokens`` unchanged.
    * Otherwise the chunk end ``t = s + num_new_tokens`` is floored to the
      ``b`` grid while it is inside the prefill, unless that makes no progress
      and ``b`` exceeds ``max_prefill_tokens`` (then it advances sub-block).
    * The result is ``end - s`` where ``end`` is the smallest of these stops
      strictly inside ``(s, t)``, else ``t``: the next grid point if ``s`` is
      mid-block; :func:`last_cacheable_position` of ``N`` on ``b``; with
      ``partial_hits``, the prompt's partial tail (the same formula on ``P``
      with unit ``hash_block_size``) when it lies in ``(lcp, P)``; and the
      junction floored relative to the start, ``s + floor_b(J - s)``, when
      ``s < J < t`` (``J`` itself with ``exact_junction_stop`` when
      ``J <= P``: the engine can save a state inside a block).
    * Every last cacheable position is :func:`last_cacheable_position`'s
      with ``hash_lookahead_tokens``.
    * With ``prefill_checkpoints``, a chunk reaching the prefill's end in
      which the backend writes the checkpoint
      (:meth:`PrefillCheckpoints.writes`) stops only at the junction: the
      grid, ``lcp`` and tail stops exist to materialise that state.

    ``last_cacheable`` overrides the ``lcp`` formula (a compatibility
    policy's, e.g. PR #47782's ``N - N mod b``); the prompt's partial tail
    still uses this module's formula.

    The call of a :class:`ChunkSplitter` bound to ``block_size``,
    ``hash_block_size``, ``use_eagle``, ``partial_hits``,
    ``max_prefill_tokens``, ``hash_lookahead_tokens``, ``exact_junction_stop``
    and ``prefill_checkpoints`` (an engine binds it once).

    Guarantees ``0 <= result <= num_new_tokens`` during prefill. Raises
    :class:`InvalidArgument` when a count is negative, ``P < 1``, ``N < P``,
    the start lies past ``N``, ``b < 1``, ``last_cacheable < 0``,
    ``hash_block_size`` does not divide ``b``, ``max_prefill_tokens < 1``,
    ``hash_lookahead_tokens < 0``, ``prefill_checkpoints`` is neither ``None``
    nor a :class:`PrefillCheckpoints` whose unit is a multiple of the hash
    unit, or a flag is not a bool.
    """
    return ChunkSplitter(
        block_size,
        block_size if hash_block_size is None else hash_block_size,
        use_eagle,
        partial_hits,
        max_prefill_tokens,
        hash_lookahead_tokens,
        exact_junction_stop,
        prefill_checkpoints,
    ).split(
        num_computed_tokens=num_computed_tokens,
        num_new_tokens=num_new_tokens,
        num_prompt_tokens=num_prompt_tokens,
        num_tokens=num_tokens,
        shared_prefix_boundary=shared_prefix_boundary,
        num_new_local_computed_tokens=num_new_local_computed_tokens,
        num_external_computed_tokens=num_external_computed_tokens,
        last_cacheable=last_cacheable,
    )


def _earlier(stop: int, start: int, candidate: int) -> int:
    """``candidate`` if it lies strictly inside ``(start, stop)``, else ``stop``."""
    return candidate if start < candidate < stop else stop
