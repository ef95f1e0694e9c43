"""vLLM 0.33.0's real ``Scheduler`` as shipped against the drop-in, step by step.

Two schedulers of one layout (:mod:`audit.vllm.scheduler`) run one seeded
multi-turn workload (:func:`workload`: shared prompts, forks, resends,
aborts, a pool small enough to evict and preempt; on some layouts a KV
connector's external hits, :mod:`.connector`) in lockstep, vLLM's own code in
one and the drop-in in the other, compared after every step
(:class:`StepRecord`). Alongside, a shadow puts every lookup, split and mask
call of the shipped scheduler to the drop-in's adapter on the same pool. A
lookup where they differ is judged by the first-principles oracle: the
drop-in's answer must be the oracle's, and vLLM's must be one of its
documented departures (``upstream.vllm_0_33.lookup_model``, docs/findings.md), which
names the finding. One of vLLM's own documented failures
(:class:`VllmFailure`) ends a run; anything else is an :class:`Unclassified`
difference.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from junction import dropin
from junction.core import GroupKind, HybridGeometry, JunctionError
from junction.dropin.lookup import core_find_longest_cache_hit, vllm_find_longest_cache_hit
from junction.dropin.mask import core_mask
from junction.dropin.split import core_split
from junction.upstream.vllm_0_33.env import vllm
from junction.upstream.vllm_0_33.lookup_model import Quirks, model_reconcile

from ..lookup import oracle_reconcile_view, pool_views
from ..scheduler import make_request, model_output
from . import connector as external
from .connector import Connector, Loads, VllmFailure
from .layouts import Layout, layouts
from .workload import Request, workload

__all__ = [
    "Connector",
    "Finding",
    "Layout",
    "Loads",
    "Report",
    "Request",
    "StepRecord",
    "Unclassified",
    "VllmFailure",
    "layouts",
    "run_layout",
    "workload",
]


class Finding(enum.Enum):
    """The documented lookup findings a shadow difference can be (docs/findings.md)."""

    VERIFIED_SET = 8  # lookup-verified_set
    SWA_REALIGN_BEFORE_DROP = 9  # lookup-swa_realign_before_drop
    WINDOW_OF_ONE = 10  # lookup-swa_window_of_one_needs_a_block
    FULL_PROBE_BELOW_BOUND = 11  # lookup-full_probe_below_bound
    SOURCE_BLOCK = 12  # the same hit, its partial tail taken from another block


_QUIRK_FINDINGS = {
    "verified_set": Finding.VERIFIED_SET,
    "swa_realign_before_drop": Finding.SWA_REALIGN_BEFORE_DROP,
    "swa_window_of_one_needs_a_block": Finding.WINDOW_OF_ONE,
    "full_probe_below_bound": Finding.FULL_PROBE_BELOW_BOUND,
}


class Unclassified(JunctionError, AssertionError):
    """A difference between vLLM and the drop-in that no documented finding explains."""


@attrs.frozen
class StepRecord:
    """What one step of one scheduler did, as the comparison sees it."""

    scheduled: tuple[tuple[str, int], ...]
    lookups: tuple[tuple[str, int, int], ...]  # request, hit, junction
    preempted: tuple[str, ...]
    finished: tuple[str, ...]
    cached: tuple[frozenset[bytes], ...]  # per group: the hashes it holds
    external: tuple[tuple[str, int, int], ...] = ()  # request, local hit shown, tokens


@attrs.define
class Report:
    """What one layout's run found."""

    layout: str
    seed: int
    requests: int = 0
    steps: int = 0
    compared_steps: int = 0
    lookups: int = 0
    splits: int = 0
    masks: int = 0
    findings: dict[Finding, int] = attrs.field(factory=dict)
    preemptions: int = 0  # in vLLM's scheduler
    evictions: int = 0  # cached hashes vLLM's pool dropped to make room
    tokens_saved: int = 0  # hit tokens the drop-in's lookups find beyond vLLM's (shadow)
    hits_vllm: int = 0  # hit tokens over every lookup of vLLM's scheduler (lockstep)
    hits_dropin: int = 0  # the same in the drop-in's scheduler, on its own state
    external_vllm: int = 0  # external tokens vLLM's scheduler's connector answered
    # Runs a documented failure of vLLM's own ended (in vLLM's scheduler, or
    # in the drop-in's alone once the two had diverged).
    vllm_failures: dict[VllmFailure, int] = attrs.field(factory=dict)
    diverged_at: int | None = None  # the first step whose records differ

    def count(self, finding: Finding) -> None:
        self.findings[finding] = self.findings.get(finding, 0) + 1


def _vllm_request(request: Request, layout: Layout) -> Any:
    return make_request(
        request.request_id,
        request.prompt,
        layout.geometry.hash_block_size,
        request.max_tokens,
        layout.hash_lookahead_tokens,
    )


class _Engine:
    """One scheduler running a workload, recording each step."""

    def __init__(self, layout: Layout, seed: int, requests: Sequence[Request]) -> None:
        self.layout = layout
        self.scheduler = layout.build_scheduler()
        self.connector = self.scheduler.connector
        if self.connector is not None:
            prompts = (request.prompt for request in requests)
            external.seed(self.connector, prompts, random.Random(seed))
        self.lookups: list[tuple[str, int, int]] = []
        manager = self.scheduler.kv_cache_manager
        original = manager.get_computed_blocks

        def get_computed_blocks(request: Any, *args: Any, **kwargs: Any) -> Any:
            answer = original(request, *args, **kwargs)
            self.lookups.append((request.request_id, int(answer[1]), int(answer[2])))
            return answer

        manager.get_computed_blocks = get_computed_blocks
        self.finished: list[str] = []

    def add(self, request: Request) -> None:
        self.scheduler.add_request(_vllm_request(request, self.layout))

    def abort(self, request_id: str) -> None:
        status = vllm().request.RequestStatus.FINISHED_ABORTED
        self.scheduler.finish_requests(request_id, status)

    def step(self) -> StepRecord:
        scheduler = self.scheduler
        self.lookups.clear()
        scheduled = scheduler.schedule()
        preempted = tuple(sorted(getattr(scheduled, "preempted_req_ids", None) or ()))
        output = model_output(scheduled, scheduler)
        if self.connector is not None:
            output.kv_connector_output = external.finished_loads(scheduled)
        outputs = scheduler.update_from_output(scheduled, output)
        finished = sorted(
            output.request_id
            for engine_outputs in outputs.values()
            for output in engine_outputs.outputs
            if output.finish_reason is not None
        )
        return StepRecord(
            tuple(sorted(scheduled.num_scheduled_tokens.items())),
            tuple(self.lookups),
            preempted,
            tuple(finished),
            self.cached(),
            () if self.connector is None else tuple(external.external_answers(self.connector)),
        )

    def cached(self) -> tuple[frozenset[bytes], ...]:
        cache = self.scheduler.kv_cache_manager.block_pool.cached_block_hash_to_block._cache
        groups = len(self.layout.geometry.groups)
        held: list[set[bytes]] = [set() for _ in range(groups)]
        for key in cache:
            key = bytes(key)
            held[int.from_bytes(key[-4:], "big")].add(key[:-4])
        return tuple(frozenset(keys) for keys in held)

    def busy(self) -> bool:
        return bool(self.scheduler.requests)


class _Shadow:
    """Puts every question the shipped scheduler answers to the drop-in as well."""

    def __init__(self, engine: _Engine, mode: dropin.Mode, report: Report) -> None:
        self.report = report
        self.mode = mode
        self.geometry = engine.layout.geometry
        scheduler = engine.scheduler
        coordinator = scheduler.kv_cache_manager.coordinator
        lookup = (
            core_find_longest_cache_hit
            if mode is dropin.Mode.CORRECTED
            else vllm_find_longest_cache_hit
        )
        vllm_lookup = coordinator.find_longest_cache_hit

        def find_longest_cache_hit(block_hashes: Any, max_cache_hit_length: int) -> Any:
            theirs = vllm_lookup(block_hashes, max_cache_hit_length)
            ours = lookup(coordinator, block_hashes, max_cache_hit_length)
            self._lookup(coordinator, block_hashes, max_cache_hit_length, theirs, ours)
            return theirs

        coordinator.find_longest_cache_hit = find_longest_cache_hit
        vllm_split = scheduler._mamba_block_aligned_split

        def split(*args: Any, **kwargs: Any) -> Any:
            theirs = vllm_split(*args, **kwargs)
            ours = core_split(scheduler, *args, **kwargs)
            self.report.splits += 1
            if ours != theirs:
                raise Unclassified(
                    f"split differs: vLLM {theirs}, drop-in {ours} ({args} {kwargs})"
                )
            return theirs

        scheduler._mamba_block_aligned_split = split
        for manager in coordinator.single_type_managers:
            self._spy_mask(manager)

    def _spy_mask(self, manager: Any) -> None:
        original = manager.reachable_block_mask
        cls = type(manager)
        managers = vllm().managers
        replaced = cls in (managers.SlidingWindowManager, managers.MambaManager)

        def reachable_block_mask(*args: Any, **kwargs: Any) -> Any:
            theirs = original(*args, **kwargs)
            if not replaced:
                return theirs  # full attention's base mask: the drop-in leaves it
            ours = core_mask(cls, *args, **kwargs)
            self.report.masks += 1
            if _flags(ours) != _flags(theirs):
                raise Unclassified(f"mask differs: vLLM {theirs}, drop-in {ours} ({kwargs})")
            return theirs

        manager.reachable_block_mask = reachable_block_mask

    def _lookup(
        self, coordinator: Any, block_hashes: Any, bound: int, theirs: Any, ours: Any
    ) -> None:
        report = self.report
        report.lookups += 1
        (their_blocks, their_hit, their_u), (our_blocks, our_hit, our_u) = theirs, ours
        if (their_hit, their_u) == (our_hit, our_u):
            if _hashes(their_blocks) != _hashes(our_blocks):
                self._source_block(coordinator.block_pool, block_hashes, our_blocks, our_hit)
            return
        _holds(coordinator.block_pool, block_hashes, our_blocks, our_hit, self.geometry)
        if self.mode is dropin.Mode.IDENTICAL:
            raise Unclassified(
                f"identical mode: vLLM (h, U) = ({their_hit}, {their_u}), "
                f"drop-in ({our_hit}, {our_u})"
            )
        geometry = self.geometry
        pool = coordinator.block_pool
        views = pool_views(geometry, pool, block_hashes)
        hashed = len(block_hashes) * geometry.hash_block_size
        oracle_hit, _, oracle_junction = oracle_reconcile_view(geometry, views, bound, hashed)
        our_junction = our_hit + our_u if our_u else 0
        if (our_hit, our_junction) != (oracle_hit, oracle_junction):
            raise Unclassified(
                f"drop-in (h, J) = ({our_hit}, {our_junction}) is not the oracle's "
                f"({oracle_hit}, {oracle_junction})"
            )
        their_junction = their_hit + their_u if their_u else 0
        report.count(_departure(geometry, views, bound, hashed, (their_hit, their_junction)))
        report.tokens_saved += our_hit - their_hit

    def _source_block(self, pool: Any, block_hashes: Any, ours: Any, hit: int) -> None:
        if self.mode is dropin.Mode.IDENTICAL:
            raise Unclassified("identical mode: the same hit from other blocks")
        _holds(pool, block_hashes, ours, hit, self.geometry)
        self.report.count(Finding.SOURCE_BLOCK)


def _flags(mask: Any) -> Any:
    return None if mask is None else [bool(flag) for flag in mask]


def _hashes(blocks: Sequence[Sequence[Any]]) -> list[list[Any]]:
    return [[block.block_hash for block in group] for group in blocks]


def _holds(
    pool: Any,
    block_hashes: Any,
    blocks: Sequence[Sequence[Any]],
    hit: int,
    geometry: HybridGeometry,
) -> None:
    """The blocks handed for ``hit`` are as many as the hit covers in each
    group, and each full-attention block holds the hit's KV: the pool has it
    registered under a unit of its own block at or past the hit's last unit in
    it (first principles: a block's KV only grows)."""
    unit = geometry.hash_block_size
    for group_id, (group, handed) in enumerate(zip(geometry.groups, blocks, strict=True)):
        if len(handed) != -(-hit // group.block_size):
            raise Unclassified(f"{group}: {len(handed)} blocks handed for a hit of {hit} tokens")
        if group.kind is not GroupKind.FULL:
            continue
        scale = group.block_size // unit
        for index, block in enumerate(handed):
            whole = (index + 1) * scale - 1
            needed = min(whole, hit // unit - 1)
            own = range(needed, min(whole + 1, len(block_hashes)))
            found = (pool.get_cached_block(block_hashes[k], [group_id]) for k in own)
            if not any(held is not None and held[0] is block for held in found):
                raise Unclassified(
                    f"full attention block {index} is registered under no unit from {needed}"
                    " to its block's end"
                )


def _departure(
    geometry: HybridGeometry,
    views: Any,
    bound: int,
    hashed: int,
    theirs: tuple[int, int],
) -> Finding:
    """The documented departure that alone (or with the verified set, which
    decides which lookups vLLM makes) reproduces vLLM's ``(h, J)``."""
    names = list(_QUIRK_FINDINGS)
    tries = [(name, Quirks().only(name)) for name in names]
    tries += [(name, attrs.evolve(quirks, verified_set=True)) for name, quirks in tries]
    for name, quirks in tries:
        hit, _, junction = model_reconcile(geometry, views, bound, hashed, quirks)
        if (hit, junction) == theirs:
            return _QUIRK_FINDINGS[name]
    raise Unclassified(f"vLLM's (h, J) = {theirs} is no documented departure")


def run_layout(
    layout: Layout,
    seed: int,
    count: int,
    mode: dropin.Mode | str = dropin.Mode.CORRECTED,
    *,
    max_steps: int = 20_000,
) -> Report:
    """One layout and seed: vLLM as shipped (with the shadow) against the
    drop-in in ``mode``, in lockstep. Raises :class:`Unclassified` for a
    difference no finding explains, and whatever either scheduler raises but
    a documented failure of vLLM's own (:class:`VllmFailure`), which ends the
    run (the drop-in failing alike on the same state in ``identical`` mode)."""
    mode = dropin.Mode.of(mode)
    report = Report(layout.name, seed, count)
    requests = workload(layout, seed, count)
    if dropin.installed():
        raise RuntimeError("the differential run installs the drop-in itself: uninstall it first")
    shipped = _Engine(layout, seed, requests)
    with dropin.swapped_in(mode):
        ours = _Engine(layout, seed, requests)
    _Shadow(shipped, mode, report)
    arrivals = sorted(requests, key=lambda r: r.arrival)
    aborts = sorted((r for r in requests if r.abort_at is not None), key=lambda r: r.abort_at or 0)
    step = 0
    compared = True
    held = tuple(frozenset[bytes]() for _ in layout.geometry.groups)
    while step < max_steps:
        for request in _due(arrivals, step, lambda r: r.arrival):
            shipped.add(request)
            ours.add(request)
        for request in _due(aborts, step, lambda r: r.abort_at or 0):
            shipped.abort(request.request_id)
            ours.abort(request.request_id)
        if not arrivals and not aborts and not shipped.busy() and not ours.busy():
            break
        try:
            theirs = shipped.step()
        except Exception as error:
            failure = _vllm_failure_alike(error, ours, mode, compared)
            report.vllm_failures[failure] = 1
            break
        report.preemptions += len(theirs.preempted)
        report.evictions += sum(
            len(old - new) for old, new in zip(held, theirs.cached, strict=True)
        )
        held = theirs.cached
        try:
            with dropin.swapped_in(mode):
                mine = ours.step()
        except Exception as error:
            alone = external.vllm_failure(error)
            if compared or alone is None:
                raise
            report.vllm_failures[alone] = 1
            break
        report.hits_vllm += sum(hit for _, hit, _ in theirs.lookups)
        report.hits_dropin += sum(hit for _, hit, _ in mine.lookups)
        report.external_vllm += sum(tokens for _, _, tokens in theirs.external)
        if compared:
            if mine == theirs:
                report.compared_steps += 1
            elif mode is dropin.Mode.IDENTICAL:
                raise Unclassified(f"step {step}: identical mode differs:\n{theirs}\n{mine}")
            elif not report.findings:
                raise Unclassified(
                    f"step {step}: the schedulers differ with no classified lookup difference:"
                    f"\nvLLM {theirs}\ndrop-in {mine}"
                )
            else:
                compared = False
                report.diverged_at = step
        step += 1
    else:
        raise RuntimeError(f"{layout.name} seed {seed}: not done after {max_steps} steps")
    report.steps = step
    return report


def _vllm_failure_alike(
    error: Exception, ours: _Engine, mode: dropin.Mode, compared: bool
) -> VllmFailure:
    """``error``, raised by vLLM's scheduler, as the documented vLLM failure it
    is (or raised again); the drop-in's scheduler, on the same state while the
    two were equal, must fail alike in ``identical`` mode."""
    failure = external.vllm_failure(error)
    if failure is None:
        raise error
    try:
        with dropin.swapped_in(mode):
            ours.step()
    except Exception as mine:
        theirs = external.vllm_failure(mine)
        if theirs is None or (compared and theirs is not failure):
            raise
    else:
        if compared and mode is dropin.Mode.IDENTICAL:
            raise Unclassified(f"identical mode: vLLM failed ({failure.value}), the drop-in not")
    return failure


def _due(queue: list[Request], step: int, when: Callable[[Request], int]) -> Iterator[Request]:
    while queue and when(queue[0]) <= step:
        yield queue.pop(0)
