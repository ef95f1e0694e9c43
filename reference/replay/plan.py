"""What the engine does to one request admitted alone with a hit, step by step.

With sequential arrivals a request runs alone, so everything it asks of the
pool follows from its prompt and output lengths, its hit ``h``, junction
``J`` and the policy: the chunk ends, the blocks each group takes per step,
which newly full blocks each group offers to the cache, which window blocks
leave and where a Mamba state moves on. :class:`Planner` derives that once
per ``(P, output, h, J)``, and every pool and eviction of a sweep replays the
same :class:`RequestPlan` (``pool.ReplayPool.run``); only what depends on the
pool's contents stays for the pool. The bookkeeping mirrors
``engine.group_managers``; a decode step that changes nothing there is left
out (the coordinator's quiet steps).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import attrs

from junction.core import GroupKind, HybridGeometry, InvalidArgument
from junction.reference.engine.protocol import Policy

__all__ = ["CACHE", "RELEASE", "STATE", "Planner", "RequestPlan", "Step"]

CACHE, RELEASE, STATE = 0, 1, 2

# Work after a step, in group order: (CACHE, group, ((slot, block), ...)) offers
# the group's blocks; (RELEASE, group, ((first, end),)) releases a window's
# blocks [first, end); (STATE, group, ((0, block),) or ()) moves a Mamba state
# on and offers it as that block, if any.
Work = tuple[int, int, tuple[tuple[int, int], ...]]
# One step: the new blocks of the full-attention and sliding-window groups (all,
# then per group id), then the work after it.
Step = tuple[int, tuple[tuple[int, int], ...], tuple[Work, ...]]


@attrs.frozen
class RequestPlan:
    """A request's steps that touch the pool; its prefill tokens, chunks and steps.

    ``flat``: the steps as one list of ints, as the planner writes them and the
    compiled replay reads them: their number, then per step its new blocks, its
    grows (their number, then ``group, blocks`` each) and its work (their number,
    then ``kind, group, pairs, slot, block, ...`` each). :attr:`steps` is the
    same as tuples (``Step``), what ``pool.ReplayPool.run`` reads.
    """

    flat: tuple[int, ...] = attrs.field(repr=False)
    prefill_tokens: int
    prefill_chunks: tuple[tuple[int, int], ...]  # (start, tokens): the steps its TTFT sums
    engine_steps: int

    @functools.cached_property
    def steps(self) -> tuple[Step, ...]:
        flat, at, steps = self.flat, 1, []
        for _ in range(flat[0]):
            count, grows = flat[at], flat[at + 1]
            at += 2
            grow = tuple((flat[i], flat[i + 1]) for i in range(at, at + 2 * grows, 2))
            at += 2 * grows
            after = []
            for _ in range(flat[at]):
                kind, group, pairs = flat[at + 1], flat[at + 2], flat[at + 3]
                at += 3
                work = tuple((flat[i], flat[i + 1]) for i in range(at + 1, at + 1 + 2 * pairs, 2))
                after.append((kind, group, work))
                at += 2 * pairs
            at += 1
            steps.append((count, grow, tuple(after)))
        return tuple(steps)


class _View:
    """The request as a policy reads it (``engine.protocol.RequestView``)."""

    __slots__ = ("num_computed_tokens", "num_prompt_tokens", "num_tokens", "shared_prefix_boundary")

    def __init__(self, prompt: int, computed: int, junction: int) -> None:
        self.num_prompt_tokens = self.num_tokens = prompt
        self.num_computed_tokens = computed
        self.shared_prefix_boundary = junction


class Planner:
    """Plans for one geometry, policy and step budget (the engine's settings).

    Only a policy declaring ``fixed_boundaries`` (every built-in one),
    writing no internal prefill checkpoint and keeping no decode checkpoint,
    and a geometry without partial hits: :class:`InvalidArgument` otherwise.
    """

    def __init__(
        self,
        geometry: HybridGeometry,
        policy: Policy,
        max_num_batched_tokens: int = 2048,
        long_prefill_token_threshold: int = 0,
    ) -> None:
        if geometry.partial_hits:
            raise InvalidArgument("geometry", geometry, "the replay does not model partial hits")
        if not getattr(policy, "fixed_boundaries", False):
            raise InvalidArgument("policy", policy, "the replay needs fixed_boundaries = True")
        if getattr(policy, "writes_prefill_checkpoints", False):
            raise InvalidArgument("policy", policy, "the replay models no prefill checkpoints")
        if getattr(policy, "keeps_decode_checkpoints", False):
            raise InvalidArgument("policy", policy, "the replay models no decode checkpoints")
        self.geometry = geometry
        self.policy = policy
        self.budget = max_num_batched_tokens
        self.threshold = long_prefill_token_threshold
        limit = max_num_batched_tokens
        self.chunk_limit = min(limit, long_prefill_token_threshold or limit)
        self.align_mode = any(g.kind is GroupKind.MAMBA for g in geometry.groups)
        # The policy's answers for the request being planned (its prompt and junction).
        self._asked_for = (-1, -1)
        self._splits: dict[tuple[int, int, int], int] = {}
        self._masks: dict[tuple[int, int, int, int, int], Sequence[bool] | None] = {}
        # Each group's first group of an equal spec: it starts in the same state and
        # takes the same decisions, so its work is planned once.
        groups = geometry.groups
        self._twins = tuple(groups.index(spec) for spec in groups)
        # Where each group's work of the step being planned lies in the plan (its twins copy it).
        self._spans = [(0, 0, 0)] * len(groups)
        # The groups that take blocks as tokens grow (not Mamba), with their block size.
        self._sized = tuple(
            (i, g.block_size) for i, g in enumerate(groups) if g.kind is not GroupKind.MAMBA
        )
        # Per group what each step reads of it: index, twin, spec, size, Mamba, window.
        self._groups = tuple(
            (
                i,
                self._twins[i],
                g,
                g.block_size,
                g.kind is GroupKind.MAMBA,
                g.kind is GroupKind.SLIDING_WINDOW,
            )
            for i, g in enumerate(groups)
        )

    def plan(self, prompt: int, outputs: int, hit: int, junction: int) -> RequestPlan:
        """The steps of a request of ``prompt`` tokens and ``outputs`` output tokens
        admitted with hit ``hit`` and junction ``junction``."""
        geometry, policy = self.geometry, self.policy
        groups = geometry.groups
        unit = geometry.hash_block_size
        view = _View(prompt, hit, junction)
        if self._asked_for != (prompt, junction):  # a new request: the answers start over
            self._asked_for = (prompt, junction)
            self._splits.clear()
            self._masks.clear()
        # Groups of one spec (vLLM's groups of one kind) get the same answers: asked once.
        known = {spec: policy.reachable_boundaries(geometry, spec, view) for spec in set(groups)}
        boundaries = [known[spec] for spec in groups]
        sized, split, mask_of = self._sized, self._split, self._mask
        budget, threshold, align_mode = self.budget, self.threshold, self.align_mode
        held = [hit // g.block_size for g in groups]
        cached = list(held)
        released = [
            g.first_window_block(hit) if g.kind is GroupKind.SLIDING_WINDOW else 0 for g in groups
        ]
        tokens, start, prefill_end = prompt, hit, prompt
        last = prompt + outputs - 1  # the last token computed
        flat = [0]  # the steps (RequestPlan.flat), their number first
        prefill_tokens = engine_steps = 0
        chunks: list[tuple[int, int]] = []
        mamba_moved = True  # the first step may need a fresh state block
        while True:
            if start >= prefill_end:
                end = self._next_event(start, held, cached, released, last, mamba_moved)
                engine_steps += end - start
            else:
                wanted = min(tokens - start, budget)
                if threshold:
                    wanted = min(wanted, threshold)
                if align_mode:
                    view.num_computed_tokens, view.num_tokens = start, tokens
                    wanted = split(view, wanted)
                    if wanted < 1:
                        raise InvalidArgument("policy", policy, "its split made no progress")
                end = start + wanted
                prefill_tokens += wanted
                chunks.append((start, wanted))
                engine_steps += 1
            if start >= prefill_end:
                tokens = end  # decode: the step computes token end - 1, the last there is
            at = len(flat)
            flat += (0, 0)  # the step's new blocks and grows, known below
            count = grows = 0
            for index, size in sized:
                more = -(-end // size) - held[index]
                if more > 0:
                    flat += (index, more)
                    held[index] += more
                    count += more
                    grows += 1
            flat[at], flat[at + 1] = count, grows
            view.num_computed_tokens, view.num_tokens = end, tokens
            hashed = tokens - tokens % unit
            at = len(flat)
            flat.append(0)  # the step's work, counted below
            works = 0
            spans = self._spans  # each group's work in flat: (first, end, works)
            mamba_moved = False
            for index, twin, spec, size, mamba, window in self._groups:
                if twin != index:  # an equal spec's group, in the same state: the same work
                    first, stop, count = spans[twin]
                    copied = flat[first:stop]
                    place = 1
                    for _ in range(count):
                        copied[place] = index
                        place += 3 + 2 * copied[place + 1]
                    flat += copied
                    works += count
                    cached[index], released[index] = cached[twin], released[twin]
                    continue
                began, count, first = len(flat), 1, cached[index]
                if mamba:
                    block = end // size
                    if not end % size and end <= hashed and block > first:
                        mask = mask_of(index, view, first, block, boundaries[index])
                        cached[index] = block
                        if mask is None or mask[-1]:
                            flat += (STATE, index, 1, 0, block - 1)
                            mamba_moved = True
                        else:
                            flat += (STATE, index, 0)
                    else:
                        flat += (STATE, index, 0)
                else:
                    count = 0
                    full = min(min(end, hashed) // size, held[index])
                    if end >= (first + 1) * size and full > first:
                        mask = mask_of(index, view, first, full, boundaries[index])
                        offered = [i for i in range(first, full) if mask is None or mask[i - first]]
                        if offered:
                            flat += (CACHE, index, len(offered))
                            for i in offered:
                                flat += (i, i)
                            count = 1
                        cached[index] = full
                    if window:
                        gone = min(spec.first_window_block(end), held[index])
                        if gone > released[index]:
                            flat += (RELEASE, index, 1, released[index], gone)
                            released[index] = gone
                            count += 1
                spans[index] = (began, len(flat), count)
                works += count
            flat[at] = works
            flat[0] += 1
            start = end
            if end == tokens:  # the step computed the last token there is: one more output
                if end >= last:
                    break
                tokens += 1
                prefill_end = tokens - 1
        return RequestPlan(tuple(flat), prefill_tokens, tuple(chunks), engine_steps)

    def _split(self, view: _View, wanted: int) -> int:
        """The policy's split, once per request state: a policy reads only the
        request's four counts (``engine.protocol.RequestView``), so plans of one
        request with different hits share the chunks they have in common."""
        key = (view.num_computed_tokens, view.num_tokens, wanted)
        tokens = self._splits.get(key)
        if tokens is None:
            tokens = self._splits[key] = self.policy.split(
                self.geometry, view, wanted, self.chunk_limit
            )
        return tokens

    def _mask(
        self, group: int, view: _View, first: int, end: int, boundaries: Sequence[int]
    ) -> Sequence[bool] | None:
        """The policy's mask of group ``group``'s blocks ``[first, end)``, once per
        request state (plans of one request share it)."""
        key = (group, view.num_computed_tokens, view.num_tokens, first, end)
        masks = self._masks
        if key not in masks:
            spec = self.geometry.groups[group]
            masks[key] = self.policy.block_mask(self.geometry, spec, view, first, end, boundaries)
        return masks[key]

    def _next_event(
        self,
        start: int,
        held: Sequence[int],
        cached: Sequence[int],
        released: Sequence[int],
        last: int,
        mamba_moved: bool,
    ) -> int:
        """The next decode step's end that allocates, caches, releases or moves a state.

        A decode step computes one token; up to the returned end every step
        before it changes nothing in any group (a state moved into a cached
        block needs a fresh one at the very next step).
        """
        if mamba_moved:
            return start + 1
        candidates = [last]
        for index, spec in enumerate(self.geometry.groups):
            size = spec.block_size
            if spec.kind is GroupKind.MAMBA:
                candidates.append(start - start % size + size)
                continue
            candidates.append(held[index] * size + 1)  # needs a new block
            candidates.append((cached[index] + 1) * size)  # a block becomes full
            if spec.kind is GroupKind.SLIDING_WINDOW and spec.window is not None:
                candidates.append((released[index] + 1) * size + spec.window - 1)
        return max(min(candidates), start + 1)
