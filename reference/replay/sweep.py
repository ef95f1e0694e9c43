"""Many (policy x pool x eviction) points over one pass of the requests.

Requests are taken one at a time, in order; each is looked up, planned and
replayed in every point's pool before the next is read, so a trace is read
once whatever the number of points. A plan (``plan.Planner``) depends on the
policy, ``R`` and the request's hit and junction only, so the points that
share a policy and find the same hit share one plan. ``belady`` needs the
future: :func:`future_uses` reads the requests once more, before.

A request the pool could never hold alone (more blocks at its peak than the
pool has: the engine's ``submit`` refuses it) is counted as refused and
skipped in that point; its prompt counts as a miss in the rates, so a
smaller pool never looks better for serving fewer requests.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence

import attrs

from junction.core import GroupKind, GroupSpec, HybridGeometry, InvalidArgument, cdiv, floor_to
from junction.reference.engine.eviction import FlopModel
from junction.reference.errors import int_at_least, one_of
from junction.reference.policies.registry import resolve_policy
from junction.reference.workloads.step_time import StepTimeModel

from .keys import FRESH_BASE
from .plan import Planner, RequestPlan
from .pool import EVICTIONS, FutureUses, ReplayPool, Usage

__all__ = [
    "COMPILED_MIN_IDS",
    "ENGINES",
    "Point",
    "PointResult",
    "ReplayRequest",
    "RequestRecord",
    "compiled_bytes",
    "compiled_covers",
    "compiled_points",
    "compiled_ring",
    "future_uses",
    "replay",
]


ENGINES = ("auto", "python", "compiled")
# The compiled replay's stamp has room for at least this many ids (``compiled._Books``).
COMPILED_MIN_IDS = 1 << 16


def compiled_covers(point: Point) -> bool:
    """Whether the compiled replay can take ``point`` (in a sweep without records or
    an observer): ``lru``, the states in the blocks, caching on."""
    return point.eviction == "lru" and point.state_slots is None and point.caching


def compiled_ring(usable: int, ids: int | None) -> int:
    """The compiled replay's ring of a pool of ``usable`` blocks (``kernels``): its free
    keys are at most the pool and at most the ``ids`` (unknown: ``None``), so a full
    ring compacted is at most half full."""
    return 2 * (usable if ids is None else min(usable, ids)) + 2


def compiled_bytes(pools: Sequence[int], ids: int) -> int:
    """The compiled replay's books for points of ``pools`` blocks over ``ids`` block ids
    (its keys, each unit once, times the groups), allocated before the first request:
    each point's stamp (4 bytes an id) and ring (4 bytes a place)."""
    rows = max(ids, COMPILED_MIN_IDS)
    return 4 * (rows * len(pools) + sum(compiled_ring(pool, ids) for pool in pools))


def compiled_points(
    engine: str, points: Sequence[Point], keep_records: bool = False, observe: object = None
) -> list[bool]:
    """Which points ``replay`` takes the compiled path for (``compiled``): the one rule.

    It covers ``lru`` points with the states in the blocks and caching on, in a
    sweep keeping no records and with no observer; ``auto`` takes it for those
    where numba imports, the rest in Python; ``python`` never; ``compiled`` for
    every point (:class:`InvalidArgument` where one is outside it).
    """
    if engine not in ENGINES:
        raise InvalidArgument("engine", engine, f"expected one of {', '.join(ENGINES)}")
    if engine == "python":
        return [False] * len(points)
    covered = [compiled_covers(p) and not keep_records for p in points]
    outside = None
    if observe is not None:
        covered = [False] * len(points)
        outside = "it has no observer"
    elif not all(covered):
        point = points[covered.index(False)]
        outside = f"{point} is outside it (lru, states in the blocks, caching, no records)"
    if any(covered):
        try:  # by name: a package attribute left by an earlier import is no proof
            importlib.import_module(f"{__package__}.compiled")
        except (ImportError, RuntimeError) as error:  # RuntimeError: numba finds no cache dir
            covered = [False] * len(points)
            outside = f"numba does not import ({error}; the `fast` extra installs it)"
    if outside is not None and engine == "compiled":
        raise InvalidArgument("engine", engine, f"the compiled replay does not apply: {outside}")
    return covered


def _prefix_keys(instance: object, attribute: attrs.Attribute[object], value: object) -> None:
    """A sequence of ints, each once: a prefix key names one prefix, so one length."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise InvalidArgument(attribute.name, value, "must be a sequence of int prefix keys")
    if not all(type(key) is int for key in value):
        at = next(i for i, key in enumerate(value) if type(key) is not int)
        raise InvalidArgument(f"{attribute.name}[{at}]", value[at], "must be an int")
    if len(set(value)) != len(value):
        first = {key: i for i, key in reversed(list(enumerate(value)))}
        at = next(i for i, key in enumerate(value) if first[key] != i)
        raise InvalidArgument(f"{attribute.name}[{at}]", value[at], "repeats an earlier key")


@attrs.frozen
class ReplayRequest:
    """A request: its prompt and output lengths and the prefix key of each whole unit
    of its prompt and, where the trace tells its answer, of the units after it that
    end by ``P + outputs``; the rest of its output is keyed afresh. Validated as the
    engine's ``Request`` is (a prompt token and an output token at least), so both
    replays refuse the same requests, here, before either reads one."""

    prompt_tokens: int = attrs.field(validator=int_at_least(1))
    output_tokens: int = attrs.field(validator=int_at_least(1))
    units: Sequence[int] = attrs.field(validator=_prefix_keys)


@attrs.frozen
class Point:
    """One sweep point: a registered policy at ``R``, a pool in blocks, an eviction;
    ``state_slots``: the Mamba groups' states in a pool of their own (``None``: in
    the blocks); ``caching``: whether the pool caches at all (``ReplayPool``)."""

    policy: str
    retention_interval: int | None
    num_blocks: int
    eviction: str = attrs.field(default="lru", validator=one_of(EVICTIONS))
    state_slots: int | None = None
    caching: bool = True


@attrs.frozen
class RequestRecord:
    """One request in one point: its hit and junction, and the pool after it."""

    hit: int
    junction: int
    usage: Usage


@attrs.frozen
class PointResult:
    """One point's totals (and, when asked, every request's record).

    ``lookup_tokens``, ``hit_tokens``, ``prompt_tokens`` and
    ``prefill_tokens_computed`` are the served requests'; ``refused_tokens``
    the refused ones' prompts, which both rates count as missed.
    """

    point: Point
    requests: int
    refused: int
    refused_tokens: int
    lookup_tokens: int
    hit_tokens: int
    prompt_tokens: int
    prefill_tokens_computed: int
    evictions: int
    retained_peak: tuple[int, ...]
    retained_final: tuple[int, ...]
    prefill_flops_saved: int
    records: tuple[RequestRecord, ...] = ()
    # Each served request's modelled time to first token (ms), with a step-time model:
    # alone in the engine, its prefill chunks' steps (``workloads.drive.Timeline``'s).
    ttft_ms: tuple[float, ...] = ()

    @property
    def token_hit_rate(self) -> float:
        """Hit tokens over every prompt token, a refused request's all missed."""
        looked_up = self.lookup_tokens + self.refused_tokens
        return self.hit_tokens / looked_up if looked_up else 0.0

    @property
    def prefill_saved_share(self) -> float:
        """Prefill tokens saved over every prompt token, a refused request's none saved."""
        prompts = self.prompt_tokens + self.refused_tokens
        if not prompts:
            return 0.0
        return (self.prompt_tokens - self.prefill_tokens_computed) / prompts


def _group_peak(group: GroupSpec, num_tokens: int, chunk_limit: int) -> int:
    """``engine.Engine._group_peak``: the most blocks a request holds in ``group``."""
    if group.kind is GroupKind.MAMBA:
        return 2
    every_block = cdiv(num_tokens, group.block_size)
    if group.window is None:
        return every_block
    reach = group.window - 1 + chunk_limit + group.block_size - 1
    return min(every_block, cdiv(reach, group.block_size))


def _block_keys(geometry: HybridGeometry, units: Sequence[int], count: int) -> list[list[int]]:
    """Per group, the key of each block whose last unit is one of ``units``' first ``count``."""
    unit, width = geometry.hash_block_size, len(geometry.groups)
    keys = []
    for group_id, spec in enumerate(geometry.groups):
        per = spec.block_size // unit
        keys.append([units[i] * width + group_id for i in range(per - 1, count, per)])
    return keys


def _parents(geometry: HybridGeometry, units: Sequence[int]) -> list[list[int]]:
    """Per group, the unit key before each block (-1: the chain's root), for flop-aware."""
    unit = geometry.hash_block_size
    parents = []
    for spec in geometry.groups:
        per = spec.block_size // unit
        parents.append([units[i - 1] if i else -1 for i in range(0, len(units) - per + 1, per)])
    return parents


def future_uses(geometry: HybridGeometry, requests: Iterable[ReplayRequest]) -> FutureUses:
    """What ``belady`` reads ahead (:class:`FutureUses`). A request uses the blocks its
    lookup can match: those ending by ``floor_A(P - 1)`` (a lookup never covers the
    last token and lands on the hit alignment ``A``)."""
    uses: dict[int, list[int]] = {}
    last_tokens = []
    unit, alignment = geometry.hash_block_size, geometry.alignment_tokens
    for index, request in enumerate(requests):
        last_tokens.append(request.prompt_tokens + request.output_tokens - 1)
        reach = floor_to(max(request.prompt_tokens - 1, 0), alignment) // unit
        for blocks in _block_keys(geometry, request.units, reach):
            for key in blocks:
                uses.setdefault(key, []).append(index)
    return FutureUses(uses, last_tokens)


class _Run:
    """One point while the requests stream by."""

    def __init__(
        self,
        point: Point,
        geometry: HybridGeometry,
        planner: Planner,
        uses: FutureUses | None,
        flops: FlopModel | None,
        chunk_limit: int,
        keep_records: bool,
        track_ends: bool,
    ) -> None:
        self.point, self.geometry, self.planner = point, geometry, planner
        self.keep_records = keep_records
        self.longest = self._longest_fitting(chunk_limit)
        self.pool = ReplayPool(
            geometry,
            point.num_blocks,
            point.eviction,
            uses=uses,
            longest=self.longest,
            flops=flops,
            track_ends=track_ends,
            state_slots=point.state_slots,
            caching=point.caching,
        )
        self.chunk_limit = chunk_limit
        self.requests = self.refused = self.refused_tokens = self.lookup = self.hits = 0
        self.prompt = self.computed = self.flops_saved = 0
        self.records: list[RequestRecord] = []
        self.ttft: list[float] = []

    def _longest_fitting(self, chunk_limit: int) -> int | None:
        """``engine.Engine._longest_fitting_request``: the longest request the pool holds
        (with a state pool apart, the blocks of the groups but the Mamba ones: none
        left, every request fits the blocks)."""
        usable, groups = self.point.num_blocks - 1, self.geometry.groups
        if self.point.state_slots is not None:
            groups = tuple(g for g in groups if g.kind is not GroupKind.MAMBA)
        if not groups:
            return None

        def peak(tokens: int) -> int:
            return sum(_group_peak(g, tokens, chunk_limit) for g in groups)

        high = usable * max(g.block_size for g in groups) + 1
        if peak(high) <= usable:
            return None
        low = 0
        while high - low > 1:
            middle = (low + high) // 2
            if peak(middle) <= usable:
                low = middle
            else:
                high = middle
        return low


def replay(
    geometry: HybridGeometry,
    requests: Iterable[ReplayRequest],
    points: Sequence[Point],
    *,
    max_num_batched_tokens: int = 2048,
    long_prefill_token_threshold: int = 0,
    flops: FlopModel | None = None,
    uses: FutureUses | None = None,
    keep_records: bool = False,
    on_request: Callable[[int], None] | None = None,
    observe: Callable[[int, ReplayPool], None] | None = None,
    measure_from: int = 0,
    step_time: StepTimeModel | None = None,
    engine: str = "auto",
) -> list[PointResult]:
    """Every point over ``requests`` (sequential arrivals), in one pass.

    ``geometry`` gives the groups, the hash unit and EAGLE; each point's
    ``R`` replaces its retention interval. ``uses``: :func:`future_uses` of
    the same requests, needed by ``belady`` points; ``flops``: the FLOP model
    ``flop-aware`` evicts by and ``prefill_flops_saved`` counts.
    ``observe(index, pool)``: after each request, each point's pool (keeping
    ``ends``), in the order of ``points``. ``measure_from``: the requests
    before this index warm the pools and are not counted in the totals (a
    measurement window, as the peer's last half of the requests). ``step_time``:
    each served request's TTFT under that model (``PointResult.ttft_ms``).
    ``engine``: ``python``, ``compiled`` (numba, equal field for field; only
    where :func:`compiled_points` says it applies) or ``auto`` (compiled where
    it applies and numba imports).
    """
    if any(p.eviction == "belady" for p in points) and uses is None:
        raise InvalidArgument("uses", uses, "a belady point needs future_uses(requests)")
    limit = max_num_batched_tokens
    chunk_limit = min(limit, long_prefill_token_threshold or limit)
    planners: dict[tuple[str, int | None], Planner] = {}
    runs = []
    for point in points:
        setting = (point.policy, point.retention_interval)
        if setting not in planners:
            built = HybridGeometry(
                geometry.groups,
                geometry.hash_block_size,
                partial_hits=geometry.partial_hits,
                use_eagle=geometry.use_eagle,
                retention_interval=point.retention_interval,
            )
            planners[setting] = Planner(
                built, resolve_policy(point.policy), limit, long_prefill_token_threshold
            )
        planner = planners[setting]
        runs.append(
            _Run(
                point,
                planner.geometry,
                planner,
                uses,
                flops,
                chunk_limit,
                keep_records,
                observe is not None,
            )
        )
    chosen = compiled_points(engine, points, keep_records, observe)
    stepper = None
    if any(chosen):
        from .compiled import CompiledRuns

        compiled = [run for run, taken in zip(runs, chosen, strict=True) if taken]
        stepper = CompiledRuns(geometry, compiled, requests, flops, step_time)
    rest = [run for run, taken in zip(runs, chosen, strict=True) if not taken]
    want_parents = any(p.eviction == "flop-aware" for p in points)
    unit, fresh = geometry.hash_block_size, FRESH_BASE
    for index, request in enumerate(requests):
        prompt, outputs = request.prompt_tokens, request.output_tokens
        last = prompt + outputs - 1
        hashed = prompt // unit
        units = list(request.units[: last // unit + 1])
        extra = last // unit + 1 - len(units)
        units.extend(range(fresh, fresh + extra))
        fresh += extra
        plans: Plans = {}
        counted = index >= measure_from
        if stepper is not None:
            stepper.request(request, units, plans, counted)
        if rest:
            keys = _block_keys(geometry, units, len(units))
            lookup_keys = [
                blocks[: hashed * unit // spec.block_size]
                for blocks, spec in zip(keys, geometry.groups, strict=True)
            ]
            parents = _parents(geometry, units) if want_parents else []
        for run in rest:
            _one(run, index, request, keys, lookup_keys, parents, plans, flops, step_time, counted)
            if observe is not None:
                observe(index, run.pool)
        if on_request is not None:
            on_request(index + 1)
    if stepper is not None:
        stepper.finish()
    return [_result(run) for run in runs]


Plans = dict[tuple[int, int, int], tuple[RequestPlan, float]]


def _planned(
    plans: Plans,
    planner: Planner,
    request: ReplayRequest,
    hit: int,
    junction: int,
    step_time: StepTimeModel | None,
) -> tuple[RequestPlan, float]:
    """The request's plan at ``hit`` and ``junction`` and its TTFT alone (0 without a
    step-time model), planned once per ``(planner, hit, junction)`` in ``plans``: the
    points, Python or compiled, that find the same hit share it."""
    memo = (id(planner), hit, junction)
    planned = plans.get(memo)
    if planned is None:
        plan = planner.plan(request.prompt_tokens, request.output_tokens, hit, junction)
        ttft = 0.0
        if step_time is not None:  # alone: each prefill step holds its one chunk
            ttft = sum(step_time.step_time_ms((chunk,), 0) for chunk in plan.prefill_chunks)
        planned = plans[memo] = (plan, ttft)
    return planned


def _one(
    run: _Run,
    index: int,
    request: ReplayRequest,
    keys: list[list[int]],
    lookup_keys: list[list[int]],
    parents: list[list[int]],
    plans: Plans,
    flops: FlopModel | None,
    step_time: StepTimeModel | None,
    counted: bool,
) -> None:
    prompt, outputs = request.prompt_tokens, request.output_tokens
    pool = run.pool
    pool.now = index
    if run.longest is not None and prompt + outputs - 1 > run.longest:
        if counted:
            run.refused += 1
            run.refused_tokens += prompt
        return
    found = pool.lookup(lookup_keys, prompt)
    hit, junction = found.hit_length, found.shared_prefix_boundary
    plan, ttft = _planned(plans, run.planner, request, hit, junction, step_time)
    slots = pool.admit(keys, hit)
    pool.belady_refresh(lookup_keys)
    pool.run(plan, slots, keys, parents)
    if run.keep_records:
        run.records.append(RequestRecord(hit, junction, pool.usage()))
    if not counted:
        return
    run.requests += 1
    run.lookup += prompt
    run.hits += hit
    run.prompt += prompt
    run.computed += plan.prefill_tokens
    if step_time is not None:
        run.ttft.append(ttft)
    if flops is not None and hit:
        run.flops_saved += flops.prefix_flops(run.geometry, hit)


def _result(run: _Run) -> PointResult:
    pool = run.pool
    return PointResult(
        point=run.point,
        requests=run.requests,
        refused=run.refused,
        refused_tokens=run.refused_tokens,
        lookup_tokens=run.lookup,
        hit_tokens=run.hits,
        prompt_tokens=run.prompt,
        prefill_tokens_computed=run.computed,
        evictions=pool.evictions,
        retained_peak=tuple(pool.peak),
        retained_final=tuple(pool.count),
        prefill_flops_saved=run.flops_saved,
        records=tuple(run.records),
        ttft_ms=tuple(run.ttft),
    )
