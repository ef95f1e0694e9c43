"""The compiled replay: ``sweep.replay``'s points with lookup, admission and runs in numba.

Where it applies (``sweep.compiled_points``: ``lru``, the states in the
blocks, caching on, no records or observer) it keeps the same books as
``pool.ReplayPool`` for every point in arrays (``kernels``) and answers
the same :class:`~.sweep.PointResult` field for field: checked against the
Python replay's on drawn scenarios and the trace, its totals against the
engine's (``tests/replay/test_engines.py``; it keeps no per-request records
to compare one by one). Python keeps what needs the policy: each request's
plans (``plan.Planner``, shared across points as ``sweep`` shares them) as
the flat integers the planner writes (``RequestPlan.flat``), and the
trace's prefix keys, numbered densely per hash unit as they first appear (a
group's block is ``unit id * groups + group``).
Per request two compiled calls: every point's lookup, then every point's run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from junction.core import GroupKind, HybridGeometry, InvalidArgument, lcm
from junction.reference.engine.eviction import FlopModel
from junction.reference.workloads.step_time import StepTimeModel

from .kernels import FULL, MAMBA, TALLIES, WINDOW, lookup_all, run_all
from .plan import RELEASE, STATE
from .pool import NULL, PRIVATE
from .sweep import COMPILED_MIN_IDS, Plans, _planned, compiled_ring

if TYPE_CHECKING:
    from .sweep import ReplayRequest, _Run

__all__ = ["CompiledRuns"]

_KINDS = {GroupKind.FULL: FULL, GroupKind.SLIDING_WINDOW: WINDOW, GroupKind.MAMBA: MAMBA}


def _layout(geometry: HybridGeometry) -> np.ndarray:
    """Per group (columns) what the lookup and the run read: kind, block size, hash
    units per block, EAGLE drop, candidate step, a window's needs and peeks without
    and with the drop, the reconciler's drop and the window (``kernels``' rows)."""
    alignment, unit = geometry.alignment_tokens, geometry.hash_block_size
    columns = []
    for spec in geometry.groups:
        grid = lcm(alignment, spec.block_size)
        window = spec.kind is GroupKind.SLIDING_WINDOW
        drop = spec.eagle_drop_tokens(alignment)
        columns.append(
            [
                _KINDS[spec.kind],
                spec.block_size,
                spec.block_size // unit,
                drop,
                grid // spec.block_size if window else grid,
                spec.blocks_for_hit(False) if window else 0,
                spec.blocks_for_hit(True) if window else 0,
                0,
                1 if spec.eagle_group else 0,
                drop if geometry.use_eagle else 0,
                spec.window or 0,
            ]
        )
    return np.array(columns, np.int64).T.copy()


class _Books:
    """Every point's pool, as ``kernels`` keeps it; grown as the dense ids grow
    (``ids``: all of them where known ahead, which bounds the rings too)."""

    def __init__(self, usable: Sequence[int], groups: int, ids: int | None) -> None:
        points = len(usable)
        self.stamp = np.zeros((0, points), np.int32)
        sizes = [compiled_ring(u, ids) for u in usable]
        # A ring's places are written before they are read: no zeros needed.
        self.ring = np.empty(sum(sizes), np.int32)
        self.heads = np.zeros((5, points), np.int64)
        self.heads[3] = np.cumsum([0, *sizes[:-1]])
        self.heads[4] = sizes
        self.counts = np.zeros((points, groups), np.int64)
        self.peaks = np.zeros((points, groups), np.int64)
        self.tallies = np.zeros((points, TALLIES), np.int64)

    def hold(self, ids: int) -> None:
        """Room for ``ids`` ids, growing twofold. Fresh memory is slow to touch the
        first time: a sequence of requests is counted ahead (:func:`_units`)."""
        have, points = self.stamp.shape
        if ids <= have:
            return
        stamp = np.zeros((max(ids, 2 * have, COMPILED_MIN_IDS), points), np.int32)
        stamp[:have] = self.stamp
        self.stamp = stamp


def _units(requests: Sequence[ReplayRequest], unit: int) -> int:
    """The distinct prefix keys :class:`CompiledRuns` numbers: the requests' units up to
    each one's last token, the fresh ones past its known units included."""
    known: set[int] = set()
    fresh = 0
    for request in requests:
        count = (request.prompt_tokens + request.output_tokens - 1) // unit + 1
        known.update(request.units[:count])
        fresh += max(count - len(request.units), 0)
    return len(known) + fresh


class CompiledRuns:
    """Some runs of a sweep (``sweep._Run``) replayed here, one request at a time
    (:meth:`request`), as the Python replay would replay them; :meth:`finish` puts
    their totals where ``sweep._result`` reads them."""

    def __init__(
        self,
        geometry: HybridGeometry,
        runs: Sequence[_Run],
        requests: Iterable[ReplayRequest],
        flops: FlopModel | None,
        step_time: StepTimeModel | None,
    ) -> None:
        groups = geometry.groups
        self.geometry, self.runs, self.flops, self.step_time = geometry, runs, flops, step_time
        self.width = width = len(groups)
        self.layout = _layout(geometry)
        self.order = np.array(
            sorted(range(width), key=lambda g: groups[g].kind is not GroupKind.FULL), np.int64
        )
        self.usable = np.array([run.pool.usable for run in runs], np.int64)
        self.longest = np.array(
            [-1 if run.longest is None else run.longest for run in runs], np.int64
        )
        ids = None
        if isinstance(requests, Sequence):
            ids = _units(requests, geometry.hash_block_size) * width
        self.books = _Books([run.pool.usable for run in runs], width, ids)
        if ids is not None:
            self.books.hold(ids)
        # An argument, not the kernels' globals: numba's cache would freeze those.
        self.codes = np.array([RELEASE, STATE, NULL, PRIVATE], np.int64)
        self.found = np.zeros((len(runs), 2), np.int64)
        self.failed = np.zeros(3, np.int64)
        self.slots = np.zeros((width, 0), np.int64)
        self.dense: dict[int, int] = {}
        self.smallest = min(g.block_size for g in groups) // geometry.hash_block_size
        self.saved: dict[tuple[int, int], int] = {}  # FLOPs saved by (planner, hit)

    def request(
        self, request: ReplayRequest, units: Sequence[int], plans: Plans, counted: bool
    ) -> None:
        """Replay ``request``, whose prefix keys up to its last token are ``units``, in
        every run; ``plans``: the request's plans by ``(id(planner), hit, junction)``
        (``sweep._one``'s, shared with it)."""
        books, dense, width, geometry = self.books, self.dense, self.width, self.geometry
        prompt, outputs = request.prompt_tokens, request.output_tokens
        ids = []
        for key in units:
            found_id = dense.get(key)
            if found_id is None:
                found_id = dense[key] = len(dense)
            ids.append(found_id)
        books.hold(len(dense) * width)
        if self.slots.shape[1] < len(units) // self.smallest + 2:
            self.slots = np.zeros((width, 2 * (len(units) // self.smallest + 2)), np.int64)
        unit = geometry.hash_block_size
        hashed = prompt // unit * unit
        lengths = np.array([hashed // g.block_size for g in geometry.groups], np.int64)
        dense_units = np.array(ids, np.int64)
        found = self.found
        lookup_all(
            books.stamp,
            dense_units,
            self.layout,
            self.order,
            lengths,
            geometry.alignment_tokens,
            prompt,
            unit,
            prompt + outputs - 1,
            self.longest,
            counted,
            books.tallies,
            found,
        )
        buffer: list[int] = []
        placed: dict[tuple[int, int, int], int] = {}
        plan_at = [0] * len(self.runs)
        step_time, flops, saved = self.step_time, self.flops, self.saved
        for point, (hit, best) in enumerate(found.tolist()):
            if hit < 0:
                continue
            run = self.runs[point]
            memo = (id(run.planner), hit, best if best > hit else 0)
            at = placed.get(memo)
            planned = _planned(plans, run.planner, request, hit, memo[2], step_time)
            if at is None:
                at = placed[memo] = len(buffer) + 1
                buffer.append(planned[0].prefill_tokens)
                buffer += planned[0].flat
            plan_at[point] = at
            if not counted:
                continue
            if step_time is not None:
                run.ttft.append(planned[1])
            if flops is not None and hit:
                if memo[:2] not in saved:
                    saved[memo[:2]] = flops.prefix_flops(run.geometry, hit)
                run.flops_saved += saved[memo[:2]]
        done = run_all(
            books.stamp,
            books.ring,
            books.heads,
            books.counts,
            books.peaks,
            books.tallies,
            dense_units,
            self.layout,
            self.usable,
            found,
            np.array(buffer, np.int64),
            np.array(plan_at, np.int64),
            self.slots,
            prompt,
            counted,
            self.failed,
            self.codes,
        )
        if not done:
            point, asked, free = self.failed.tolist()
            raise InvalidArgument(
                "num_blocks", int(self.usable[point]) + 1, f"{asked} blocks asked, {free} free"
            )

    def finish(self) -> None:
        """The books' totals into each run and its pool, where ``sweep._result`` reads them."""
        books = self.books
        for point, run in enumerate(self.runs):
            tally = books.tallies[point].tolist()
            run.requests, run.lookup, run.hits, run.prompt, run.computed = tally[:5]
            run.refused, run.refused_tokens = tally[5:7]
            pool = run.pool
            pool.evictions = tally[7]
            pool.count = books.counts[point].tolist()
            pool.peak = books.peaks[point].tolist()
