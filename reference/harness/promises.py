"""The promises of docs/domain.md ("The promises"), each checked once.

Every check reads a subject only through :mod:`.subject`'s protocol, so the
reference engine and vLLM's own code are judged by the same lines, and
returns ``None`` when the promise holds or a :class:`.verdict.Violation`
carrying the numbers that failed.

Scope, where the literal promise cannot hold for any policy: "as far as full
attention alone" is asserted literally without EAGLE and partial hits (under
EAGLE a sliding window must match one of *its* blocks past the hit; with
partial hits full attention lands inside blocks where a Mamba group has no
state). There the hit must be at least what the same subject gets with every
block and state cached on the same requests (``Subject.dense``): sparse
retention loses nothing; likewise under speculative decode steps, where a
block end a step passes may hold no state. (The vLLM audit once also judged
EAGLE with Mamba groups only literally; one scope for every subject won over
that.)
"""

from __future__ import annotations

from typing import assert_never

import attrs

from junction.core import (
    GroupKind,
    InvalidArgument,
    deepest_decode_state,
    floor_to,
    last_cacheable_position,
    next_grid_point,
)
from junction.reference.engine.finish import PUBLISHED_BY_DEFAULT, FinishReason
from junction.reference.oracle.first_principles import oracle_blocks_needed, oracle_reconcile

from .promise import Promise
from .scenario import Scenario
from .subject import Run, Subject, TierRun
from .verdict import (
    Invariant,
    KeptTooMany,
    KeptUnneeded,
    LookupMismatch,
    MissedPosition,
    NoProgress,
    OffGrid,
    OverBudget,
    Problem,
    RequestState,
    ResumeWithoutState,
    ShortOfDense,
    ShortOfFullAttention,
    ShortOfLocal,
    ShortOfSegment,
    Stalled,
    Violation,
)

__all__ = ["check"]


def check(scenario: Scenario, subject: Subject) -> Violation | None:
    """Run the scenario's promise check on ``subject``: ``None`` when the promise holds.

    A broken invariant of the subject (``AssertionError``) is a violation;
    ``PolicyError`` (the policy raised or answered malformed) propagates.
    """
    try:
        problem = _problem(scenario, subject)
    except AssertionError as error:
        problem = Invariant(str(error))
    return None if problem is None else Violation(scenario, subject.name, problem)


def _problem(scenario: Scenario, subject: Subject) -> Problem | None:
    match scenario.promise:
        case Promise.REPLAY | Promise.JUNCTION:
            return _hit(scenario, subject, subject.run(scenario))
        case Promise.TIER:
            # The same check: the subject looks the probe up on a second instance
            # that shares its tier and holds nothing locally; then the next turn.
            run = subject.run(scenario)
            return _hit(scenario, subject, run) or _next_turn_elsewhere(scenario, run)
        case Promise.SEGMENTS:
            return _segments(scenario, subject.run(scenario))
        case Promise.ECONOMY:
            return _economy(subject.run(scenario), scenario.finish)
        case Promise.SPLIT:
            return _split(subject.run(scenario), scenario.budget)
        case Promise.RECONCILIATION:
            return _reconciliation(scenario, subject.run(scenario))
        case Promise.SAFETY:
            return _safety(scenario, subject.run(scenario))
        case Promise.NEXT_TURN | Promise.DECLARED_PREFIX:
            return _next_turn(scenario, subject)
        case _:
            assert_never(scenario.promise)


def literal(scenario: Scenario) -> bool:
    """Whether "as far as full attention alone" can hold for any policy (see above).

    Not under speculative decode steps either: a Mamba block end a step passes
    may hold no state (``core.CrossedGridPoints``), so the next turn may find
    none where full attention lands.
    """
    geometry = scenario.geometry
    return not geometry.use_eagle and not geometry.partial_hits and scenario.speculative is None


def _hit(scenario: Scenario, subject: Subject, run: Run) -> Problem | None:
    """Promises 1, 2 and 8: the probe hits as far as full attention alone (see the scope)."""
    hits = run.lookup(scenario.probe)
    if literal(scenario):
        if hits.hit != hits.longest:
            return ShortOfFullAttention(hits.hit, hits.longest)
        return None
    dense = subject.dense().run(scenario).lookup(scenario.probe).hit
    if hits.hit < dense:
        return ShortOfDense(hits.hit, dense, scenario.geometry.retention_interval)
    return None


def next_turn_probe(scenario: Scenario, run: Run) -> tuple[int, ...]:
    """The lookup of promises 9 and 10: for the declared prefix the sibling itself;
    for the next turn (and its tier form) the first prompt's transcript (prompt
    and whole answer) followed by the probe's tokens as new text."""
    if scenario.promise is Promise.DECLARED_PREFIX:
        return scenario.probe
    transcript = run.prefills[0].transcript
    if not transcript:
        rule = "the next-turn promise needs the subject's transcript of the first prompt"
        raise InvalidArgument("transcript", transcript, rule)
    return (*transcript, *scenario.probe)


def publishes(policy: object, finish: FinishReason) -> bool:
    """Whether ``policy`` keeps decode checkpoints and publishes them on ``finish``: its
    declared ``decode_checkpoint_finishes`` (every finish but an abort when it
    declares none)."""
    if getattr(policy, "keeps_decode_checkpoints", False) is not True:
        return False
    return finish in getattr(policy, "decode_checkpoint_finishes", PUBLISHED_BY_DEFAULT)


def _next_turn(scenario: Scenario, subject: Subject) -> Problem | None:
    """Promise 9: the next turn hits as far as full attention alone, where the first
    prompt's finish is one its policy publishes on; promise 10: the sibling of a
    declared checkpoint does (see the scope; the dense bound otherwise). Either
    way the hit is exactly the oracle's on what the cache holds."""
    run = subject.run(scenario)
    probe = next_turn_probe(scenario, run)
    hits = run.lookup(probe)
    # Only exact states serve (a state published under another position's key is
    # wrong output, SGLang #35412): the hit is the oracle's on what is exactly there.
    exact = _reconciliation(attrs.evolve(scenario, probe=probe), run)
    if exact is not None:
        return exact
    # A policy keeping decode checkpoints promises nothing past the prompt's positions
    # after a finish it does not publish on; one keeping none is judged on every
    # finish (its audit: it promises the next turn nowhere, and the check shows it).
    policy = run.policy
    keeps = getattr(policy, "keeps_decode_checkpoints", False) is True
    if scenario.promise is Promise.NEXT_TURN and keeps and not publishes(policy, scenario.finish):
        return None
    if literal(scenario):
        if hits.hit != hits.longest:
            return ShortOfFullAttention(hits.hit, hits.longest)
        return None
    dense_run = subject.dense().run(scenario)
    dense = dense_run.lookup(next_turn_probe(scenario, dense_run)).hit
    if hits.hit < dense:
        return ShortOfDense(hits.hit, dense, scenario.geometry.retention_interval)
    return None


def _next_turn_elsewhere(scenario: Scenario, run: Run) -> Problem | None:
    """Promise 8 with promise 9, where the tier declares it keeps decode checkpoints
    and the policy publishes them on the scenario's finish: the first prompt's next
    turn on another instance sharing the tier resumes at least as deep as on the
    instance that ran it (through the load path, where the tier's lookup said)."""
    if not isinstance(run, TierRun) or not run.tier_keeps_decode_checkpoints:
        return None
    if not publishes(run.policy, scenario.finish):
        return None
    probe = next_turn_probe(scenario, run)
    here = run.lookup_here(probe).hit
    there = run.lookup(probe).hit
    if there < here:
        return ShortOfLocal(there, here)
    return None


def _shared(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


def _segments(scenario: Scenario, run: Run) -> Problem | None:
    """Promise 3: the probe hits the last segment boundary a chunk end materialised."""
    interval = scenario.geometry.retention_interval
    if not interval:
        raise InvalidArgument("retention_interval", interval, "the segments promise needs R > 0")
    (prompt,) = scenario.prompts
    probe = scenario.probe
    hit = run.lookup(probe).hit
    reach = min(_shared(prompt, probe), len(prompt) - 1, len(probe) - 1)
    ends = {end for prefill in run.prefills for end in prefill.materialized}
    segments = tuple(s for s in range(interval, reach + 1, interval) if s in ends)
    if hit < max(segments, default=0):
        return ShortOfSegment(hit, segments)
    return None


def _needed_ends(run: Run, group_id: int, position: int) -> list[int]:
    """Ends of the blocks (states) group ``group_id`` reads to resume at ``position``."""
    geometry = run.geometry
    group = geometry.groups[group_id]
    size = group.block_size
    if group.kind is GroupKind.MAMBA and position % size and run.sub_block_states:
        return [position]  # the partial-tail state, keyed at its hash unit
    # Only an EAGLE group reads a peek block past the position.
    eagle = geometry.use_eagle and group.eagle_group
    needed = oracle_blocks_needed(group.kind.value, position, size, group.window, eagle)
    return [(index + 1) * size for index in needed]


def _economy(run: Run, finish: FinishReason) -> Problem | None:
    """Promise 4: every kept sparse block is needed, within (boundaries x need) per request."""
    geometry, policy = run.geometry, run.policy
    for group_id, group in enumerate(geometry.groups):
        if group.kind is GroupKind.FULL:
            continue
        per_boundary = (
            1 if group.kind is GroupKind.MAMBA else group.blocks_for_hit(geometry.use_eagle)
        )
        needed = set()
        allowance = 0
        for index, prefill in enumerate(run.prefills):
            request = prefill.request
            # A finished request's next turn (decode checkpoints, when the policy keeps them).
            decode = _decode_positions(run, request, finish)
            boundaries = set(policy.reachable_boundaries(geometry, group, request))
            allowance += len(boundaries | set(decode)) * per_boundary
            positions = [
                p
                for p in policy.checkpoint_positions(geometry, request)
                if p < request.num_prompt_tokens
            ]
            for position in (*positions, *decode):
                for end in _needed_ends(run, group_id, position):
                    key = run.key(index, group_id, end)
                    if key is not None:
                        needed.add(key)
        kept = run.kept(group_id)
        unneeded = kept - needed
        if unneeded:
            return KeptUnneeded(group_id, group, len(unneeded), len(kept))
        if len(kept) > allowance:
            return KeptTooMany(group_id, group, len(kept), allowance)
    return None


def _decode_positions(run: Run, request: RequestState, finish: FinishReason) -> tuple[int, ...]:
    """The decode checkpoints of a finished request, on the hit grid, as the engine
    keeps them (none unless its policy keeps them and publishes them on ``finish``)."""
    policy = run.policy
    if not publishes(policy, finish):
        return ()
    if request.num_computed_tokens != request.num_tokens - 1:
        return ()  # not finished (never, in the promises' runs without pressure)
    ask = policy.decode_checkpoints  # type: ignore[attr-defined]
    geometry, begun, written = run.geometry, request.decode_states_from, request.decode_states
    # Each kept as the deepest state the decode steps left at or below it.
    kept = (
        deepest_decode_state(geometry, x, states_from=begun, written_states=written)
        for x in ask(geometry, request)
    )
    return tuple(x for x in kept if x)


def _split(run: Run, budget: int) -> Problem | None:
    """Promise 5: chunk ends on the grid (or promised), in budget, promised ones hit, progress."""
    geometry, policy = run.geometry, run.policy
    grid = geometry.scheduler_block_size
    for prefill in run.prefills:
        request = prefill.request
        prompt = request.num_prompt_tokens
        if prefill.stalled:
            return Stalled(request, prefill.chunk_ends)
        if not prefill.chunks:
            continue
        promised = set(policy.checkpoint_positions(geometry, request))
        tail = last_cacheable_position(prompt, geometry.hash_block_size, geometry.use_eagle)
        for start, end in prefill.chunks:
            if not 0 < end - start <= budget:
                return OverBudget(request, start, end, budget)
            allowed = end % grid == 0 or grid > budget or end in promised
            allowed |= geometry.partial_hits and end == tail
            if end < prompt and not allowed:
                return OffGrid(request, start, end, grid)
        # A promised state inside the prefill: a chunk ended there, or the chunk
        # that ran past it wrote it (an internal prefill checkpoint).
        ends = tuple(sorted(prefill.materialized))
        first = prefill.chunks[0][0]
        for position in sorted(promised):
            if first < position < prompt and position not in ends:
                return MissedPosition(request, position, ends)
        # Progress: from every chunk start, a budget reaching the next grid point moves.
        for start, _ in prefill.chunks:
            reach = next_grid_point(start, grid) - start
            if start >= prompt or reach > budget:
                continue
            wanted = min(reach, request.num_tokens - start)
            state = RequestState(
                prompt,
                request.num_tokens,
                start,
                request.shared_prefix_boundary,
                request.declared_checkpoints,
            )
            if run.split(state, wanted, budget) == 0:
                return NoProgress(request, start, wanted)
    return None


def _reconciliation(scenario: Scenario, run: Run) -> Problem | None:
    """Promise 6: the subject's ``(h, ℓ, J)`` equals the oracle's on the subject's own cache."""
    geometry, probe = run.geometry, scenario.probe
    got = run.lookup(probe).as_tuple()
    unit = geometry.hash_block_size
    want = oracle_reconcile(
        run.cached_sets(probe),
        geometry.alignment_tokens,
        geometry.use_eagle,
        len(probe) - 1,
        floor_to(len(probe), unit),
    )
    if got != want:
        return LookupMismatch(got, want)
    return None


def _safety(scenario: Scenario, run: Run) -> Problem | None:
    """Promise 7: under pressure (the subject checks its own invariants as it runs),
    no lookup resumes a Mamba group at a position without its exact state."""
    if not any(g.kind is GroupKind.MAMBA for g in scenario.geometry.groups):
        return None
    run.lookup(scenario.probe or scenario.prompts[-1])
    for resume in run.resumes:
        if not resume.state_materialized:
            return ResumeWithoutState(resume.tokens, resume.hit)
    return None
