"""The built-in retention policies (their registry is :mod:`.registry`).

* ``junction`` (the default): the one source of truth (docs/domain.md). The
  promised positions (``core.promised_positions``) feed the mask and the
  split, which stops at every one of them; it keeps every promise of
  docs/domain.md, with its engine option (``JunctionOptions``) and, with
  ``decode_checkpoints``, the next turn. ``junction+decode``: that option on.
* ``dense``: the same chunks, every materialised block cached (``R``
  ignored); an interval policy, whose split stops at every segment, can
  keep more Mamba states than dense.
* ``interval``: segments every ``R`` and the replay boundary, never the
  junction: vLLM before PR #47782.
* ``vllm-0.33``, ``vllm-pr47782`` and ``vllm-pr50551`` (0.33.0 with the open
  PR's decode checkpoint): vLLM's formulas, in ``reference.policies.vllm``.
"""

from __future__ import annotations

from collections.abc import Sequence

from junction.core import (
    ChunkSplitter,
    GroupSpec,
    HybridGeometry,
    InvalidArgument,
    PrefillCheckpoints,
    decode_checkpoint,
    prefill_end,
    promised_positions,
    promised_stop,
)
from junction.reference.engine.policy import RequestView

from .bound import boundaries, chunk_splitter, group_mask
from .options import DEFAULT_OPTIONS, JunctionOptions

__all__ = ["DensePolicy", "IntervalPolicy", "JunctionPolicy"]


class JunctionPolicy:
    """The default: mask, split and finder all derive from the promised positions.

    ``options``: the engine options of its split (:class:`JunctionOptions`;
    off by default, and off the policy is what it was without them). With an
    internal prefill checkpoint the policy answers the optional
    ``prefill_checkpoint`` question and lets the chunk run past the promised
    position the backend writes.
    """

    name = "junction"
    options = DEFAULT_OPTIONS
    writes_prefill_checkpoints = False
    keeps_decode_checkpoints = False
    decode_checkpoint_budget: int | None = None
    decode_checkpoint_margin = 0
    decode_checkpoint_ttl: int | None = None
    decode_checkpoint_keep_path = False
    # Declared checkpoints are promised as the junction is (the declared-prefix promise).
    keeps_declared_checkpoints = True
    # The reachable boundaries are the prompt's and the junction's (the
    # protocol's declaration): a subclass whose junction() reads more says False.
    fixed_boundaries = True

    def __init__(self, options: JunctionOptions = DEFAULT_OPTIONS) -> None:
        if not isinstance(options, JunctionOptions):
            raise InvalidArgument("options", options, "must be a JunctionOptions")
        self.options = options
        self.writes_prefill_checkpoints = options.prefill_checkpoint_alignment is not None
        self.keeps_decode_checkpoints = options.decode_checkpoints
        self.decode_checkpoint_finishes = options.decode_checkpoint_finishes
        self.decode_checkpoint_budget = options.decode_checkpoint_budget
        self.decode_checkpoint_margin = options.decode_checkpoint_margin or 0
        self.decode_checkpoint_ttl = options.decode_checkpoint_ttl
        self.decode_checkpoint_keep_path = options.decode_checkpoint_keep_path

    def junction(self, request: RequestView) -> int:
        """The junction this policy pins (all of them)."""
        return request.shared_prefix_boundary

    def checkpoint_positions(
        self, geometry: HybridGeometry, request: RequestView
    ) -> tuple[int, ...]:
        return promised_positions(
            geometry,
            request.num_prompt_tokens,
            self.junction(request),
            prefill_end(request.num_prompt_tokens, request.num_tokens),
            declared_checkpoints=declared(request),
        )

    def decode_checkpoints(self, geometry: HybridGeometry, request: RequestView) -> tuple[int, ...]:
        """Where the next turn of the request resumes were it to finish with its
        ``num_tokens`` (``core.decode_checkpoint``; none when that is 0), and, with a
        margin, where one resending all but the answer's last ``margin`` tokens does."""
        end = request.num_tokens
        position = decode_checkpoint(geometry, end)
        margin = self.decode_checkpoint_margin
        # A next turn sharing all but the last ``margin`` tokens shares ``end - margin``
        # of them: it lands where a transcript one token longer would.
        earlier = decode_checkpoint(geometry, end - margin + 1) if 0 < margin < end else 0
        return tuple(sorted({p for p in (earlier, position) if p}))

    def reachable_boundaries(
        self, geometry: HybridGeometry, group: GroupSpec, request: RequestView
    ) -> tuple[int, ...]:
        return self.promised(geometry, request, self.junction(request))

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> list[bool] | None:
        # On the hit grid, not A: with partial hits a hit every group serves is
        # also on each sparse group's block grid, so that is where tails are kept.
        return group_mask(
            geometry.hit_grid_tokens, group, geometry.use_eagle, geometry.retention_interval
        ).reachable_block_mask(start_block, end_block, boundaries)

    def split(
        self,
        geometry: HybridGeometry,
        request: RequestView,
        num_new_tokens: int,
        max_prefill_tokens: int,
    ) -> int:
        """Decision 2's split (docs/domain.md) on :meth:`chunk_grid`, then :meth:`stop`."""
        start = request.num_computed_tokens
        tiles = self.options.prefill_checkpoint_alignment
        tokens = self.splitter(geometry, max_prefill_tokens).split(
            num_computed_tokens=start,
            num_new_tokens=num_new_tokens,
            num_prompt_tokens=request.num_prompt_tokens,
            num_tokens=request.num_tokens,
            shared_prefix_boundary=self.split_junction(request),
        )
        if start >= prefill_end(request.num_prompt_tokens, request.num_tokens):
            return tokens
        end = start + tokens
        stop = self.stop(geometry, request, end)
        if tiles is not None and stop < end:
            # The backend writes this promised state inside the chunk, if the
            # chunk runs to its end: no other promised position may cut it.
            written = self.prefill_checkpoint(geometry, request, tokens)
            promised = self.promised(geometry, request, self.split_junction(request))
            if stop == written and end == promised_stop(geometry, promised, start=written, end=end):
                stop = end
        return stop - start

    def prefill_checkpoint(
        self, geometry: HybridGeometry, request: RequestView, num_new_tokens: int
    ) -> int:
        """Where the chunk ``[c, c + n)`` writes the prefill's checkpoint (0: none):
        ``core.ChunkSplitter.written_checkpoint`` keyed on the hit grid."""
        tiles = self.options.prefill_checkpoint_alignment
        if tiles is None:
            return 0
        return self._split_binding(geometry, None, tiles).written_checkpoint(
            num_computed_tokens=request.num_computed_tokens,
            num_new_tokens=num_new_tokens,
            num_prompt_tokens=request.num_prompt_tokens,
            num_tokens=request.num_tokens,
        )

    def _split_binding(
        self, geometry: HybridGeometry, max_prefill_tokens: int | None, tiles: int | None
    ) -> ChunkSplitter:
        """The split's binding on :meth:`chunk_grid`, with the backend's internal
        checkpoint keyed on the hit grid when ``tiles`` is given."""
        return chunk_splitter(
            self.chunk_grid(geometry),
            geometry.hash_block_size,
            geometry.use_eagle,
            geometry.partial_hits,
            max_prefill_tokens,
            0,
            False,
            None if tiles is None else PrefillCheckpoints(tiles, geometry.hit_grid_tokens),
        )

    # The split's parts, one hook each (a variant overrides one).

    def splitter(self, geometry: HybridGeometry, max_prefill_tokens: int) -> ChunkSplitter:
        """The split's core binding on :meth:`chunk_grid` (with the backend's
        internal checkpoint when the options ask for it)."""
        tiles = self.options.prefill_checkpoint_alignment
        return self._split_binding(geometry, max_prefill_tokens, tiles)

    def chunk_grid(self, geometry: HybridGeometry) -> int:
        """The scheduler block ``L``: a chunk end there is a Mamba block end that
        is also hit-aligned (#54076: not the Mamba group's own block)."""
        return geometry.scheduler_block_size

    def split_junction(self, request: RequestView) -> int:
        """The junction the split stops at, on every chunk (pre-#47782: the first only)."""
        return self.junction(request)

    def stop(self, geometry: HybridGeometry, request: RequestView, end: int) -> int:
        """The chunk's end: the earliest promised position inside it
        (``core.checkpoint_stop``, on the memoized boundaries: ``core.promised_stop``)."""
        promised = self.promised(geometry, request, self.split_junction(request))
        return promised_stop(geometry, promised, start=request.num_computed_tokens, end=end)

    def promised(
        self, geometry: HybridGeometry, request: RequestView, junction: int
    ) -> tuple[int, ...]:
        """``core.reachable_boundaries`` of the request with this junction, memoized
        (``bound.boundaries``): the mask's boundaries and the split's stops."""
        # On the hit grid the mask floors to: none floors to 0 (core leaves
        # those out; they promise nothing, yet would keep an EAGLE peek block).
        return boundaries(
            request.num_prompt_tokens,
            junction,
            geometry.eagle_drop_tokens,
            geometry.sub_block_full_attention_sizes,
            geometry.hit_grid_tokens,
            declared(request),
        )


def declared(request: RequestView) -> tuple[int, ...]:
    """The positions the request's application declared (``()`` for a view without them)."""
    positions = getattr(request, "declared_checkpoints", ())
    return positions if type(positions) is tuple else tuple(positions)


class DensePolicy(JunctionPolicy):
    """Caches every block it materialises, whatever ``R`` says."""

    name = "dense"

    def block_mask(
        self,
        geometry: HybridGeometry,
        group: GroupSpec,
        request: RequestView,
        start_block: int,
        end_block: int,
        boundaries: Sequence[int],
    ) -> list[bool] | None:
        return None


class IntervalPolicy(JunctionPolicy):
    """Segments every ``R`` and the replay boundary; the junction is never pinned."""

    name = "interval"

    def junction(self, request: RequestView) -> int:
        return 0


#: Later requests within which a decode checkpoint must be resumed from, or is
#: retired: the gap between a request and its continuation on the Mooncake
#: conversation trace is at most this for over 75% of continuations; a later one
#: resumes at the path's last state, which the kept path leaves to the pool
#: (docs/next-turn.md, "Retirement and two checkpoints").
DECODE_CHECKPOINT_TTL = 1250


def junction_with_retired_decode_checkpoints() -> JunctionPolicy:
    """``junction+decode`` with a budget of one turn per path (a turn's decode checkpoint
    is retired once the next turn on its path publishes its own) and a time to live
    (one no request resumed from within :data:`DECODE_CHECKPOINT_TTL` later requests
    is retired, its path keeping its last state: ``decode_checkpoint_keep_path``)."""
    return JunctionPolicy(
        JunctionOptions(
            decode_checkpoints=True,
            decode_checkpoint_budget=1,
            decode_checkpoint_ttl=DECODE_CHECKPOINT_TTL,
            decode_checkpoint_keep_path=True,
        )
    )


#: The second checkpoint's margin: a stop string of up to 4 tokens cut from the
#: answer (``workloads.ResendMix``'s default).
STOP_STRING_MARGIN = 4


def junction_with_two_decode_checkpoints() -> JunctionPolicy:
    """``junction+decode-retired`` keeping a second checkpoint, where a next turn lands
    that resends the answer less a cut stop string (:data:`STOP_STRING_MARGIN`)."""
    return JunctionPolicy(
        JunctionOptions(
            decode_checkpoints=True,
            decode_checkpoint_budget=1,
            decode_checkpoint_margin=STOP_STRING_MARGIN,
            decode_checkpoint_ttl=DECODE_CHECKPOINT_TTL,
            decode_checkpoint_keep_path=True,
        )
    )


def junction_with_decode_checkpoints() -> JunctionPolicy:
    """The default policy keeping the next turn (``JunctionOptions(decode_checkpoints=True)``:
    Marconi's full admission, the junction and the last decoded state)."""
    return JunctionPolicy(JunctionOptions(decode_checkpoints=True))
