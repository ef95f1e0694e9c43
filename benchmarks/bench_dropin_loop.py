"""vLLM 0.33.0's scheduler loop with the drop-in against vLLM as shipped, side by side.

Each layout's seeded multi-turn workload (``audit.vllm.scheduler_differential``)
runs end to end on a fresh real ``Scheduler``. Every arm (vLLM's own code,
the drop-in in each mode, vLLM's code ``again``: the noise floor, and
``touched``: vLLM's own functions set back onto its classes) runs in a
fresh process forked from one that never ran the scheduler, the drop-in
installed once before its first step as ``vllm serve``'s plugin installs
it; each round forks them afresh, placed alike by a seeded draw (heap
offset, version tags), and the arms take turns layout by layout in a seeded
random order. Timed: the thread's CPU time in ``schedule()`` and
``update_from_output`` only, each layout's fastest of ``--best-of`` warm
runs; printed: the median over rounds, and the median of the rounds'
ratios drop-in / vLLM. ``--instructions`` counts the same loop's
machine instructions under valgrind's callgrind (repeatable per
placement; the median over ``--placements`` placements, which set the hash
seed too);
``--decisions`` counts each decision point's calls alone (the whole of the
difference in ``identical`` mode, finer than a count of the loop resolves);
``--per-call`` times each decision point in place, on the same state as
vLLM's. Why so: docs/design/dropin-bench.md.

Needs vLLM (``make audit-setup``). Run: ``make bench-dropin``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import math
import multiprocessing
import operator
import os
import pathlib
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from junction import dropin
from junction.audit.vllm.scheduler import build_scheduler, make_request, model_output
from junction.audit.vllm.scheduler_differential import Layout, Request, layouts, workload
from junction.dropin import Mode
from junction.dropin import lookup as dropin_lookup
from junction.upstream.vllm_0_33.env import vllm

LAYOUTS = (
    "full16+mamba16 R=0",
    "full64+mamba64 H=16 (partial) R=None",
    "full16+window40/16 R=0",
    "full16+window40/16+mamba16 R=0",
    "EAGLE full16+window40/8 R=0",
    "EAGLE draft=mamba full64+mamba64 H=16 (partial)",
)


def _touch() -> None:
    """Set vLLM's own decision functions back onto its classes: what an
    install does to them besides the adapters (the control arm ``touched``)."""
    for cls, name in dropin.decision_points(Mode.CORRECTED):
        setattr(cls, name, cls.__dict__[name])


# Arm name -> what its process does before the first step.
ARMS: dict[str, Callable[[], None]] = {
    "vLLM": lambda: None,
    **{mode.value: functools.partial(dropin.install, mode) for mode in Mode},
    "again": lambda: None,
    "touched": _touch,
}
Work = list[tuple[Layout, list[Request]]]


def serve_workload(
    layout: Layout, requests: Sequence[Request], through: Callable[..., Any]
) -> None:
    """Serve ``requests`` on a fresh scheduler, calling ``schedule`` and
    ``update_from_output`` (the loop measured) as ``through(method, *args)``."""
    scheduler = layout.build_scheduler()
    unit = layout.geometry.hash_block_size
    aborted = vllm().request.RequestStatus.FINISHED_ABORTED
    arrivals = sorted(requests, key=lambda r: r.arrival)
    aborts = sorted((r for r in requests if r.abort_at is not None), key=lambda r: r.abort_at or 0)
    step = 0
    while arrivals or aborts or scheduler.requests:
        while arrivals and arrivals[0].arrival <= step:
            r = arrivals.pop(0)
            scheduler.add_request(make_request(r.request_id, r.prompt, unit, r.max_tokens))
        while aborts and (aborts[0].abort_at or 0) <= step:
            scheduler.finish_requests(aborts.pop(0).request_id, aborted)
        scheduled = through(scheduler.schedule)
        output = model_output(scheduled, scheduler)
        through(scheduler.update_from_output, scheduled, output)
        step += 1


def loop_seconds(layout: Layout, requests: Sequence[Request]) -> float:
    """CPU seconds of this thread in the measured loop serving ``requests``
    (CPU time, so a shared machine's other load is not counted)."""
    spent = [0.0]
    clock = time.thread_time

    def timed(method: Callable[..., Any], *args: Any) -> Any:
        start = clock()
        result = method(*args)
        spent[0] += clock() - start
        return result

    serve_workload(layout, requests, timed)
    return spent[0]


# What _place allocated, kept for the process's life.
_placed: list[object] = []


def _place(placement: int) -> None:
    """Shift, by an amount ``placement`` seeds, what a process's speed depends
    on by chance rather than by its code: where its heap's objects lie, and
    the version tags its classes get (the key of CPython's method cache, so
    which lookups collide there). Each arm is one such draw; measuring every
    arm under the same draws and taking the median over them averages that
    lottery out instead of letting one draw pass for a cost."""
    draw = random.Random(placement)
    _placed.append([bytes(draw.randrange(1, 513)) for _ in range(draw.randrange(4096))])
    for index in range(draw.randrange(4096)):
        getattr(type(f"_Placement{index}", (), {}), "placement", None)  # takes a version tag


def _direct(method: Callable[..., Any], *args: Any) -> Any:
    """The loop's call as it is: not through ``operator.call``, which is what
    callgrind collects."""
    return method(*args)


def _set_up(arm: str, work: Work, placement: int) -> None:
    """In the arm's fresh process: place it, set the arm up once, then warm
    every layout."""
    _place(placement)
    ARMS[arm]()
    for layout, requests in work:
        serve_workload(layout, requests, _direct)


def _collect_only(point: str) -> None:
    """Route every call of the decision point ``point`` (an attribute name,
    on each class that has it) through ``operator.call``, so callgrind
    collects those calls alone: whatever the arm set there, vLLM's code or
    an adapter, called as vLLM calls it."""
    classes = [cls for cls, name in dropin.decision_points(Mode.CORRECTED) if name == point]
    if not classes:
        raise ValueError(f"{point!r} is no decision point of the drop-in")
    for cls in classes:
        attribute = cls.__dict__[point]
        function = _function(attribute)

        def call(first: Any, *args: Any, _function: Any = function, **kwargs: Any) -> Any:
            return operator.call(_function, first, *args, **kwargs)

        routed: Callable[..., Any] = call
        setattr(cls, point, classmethod(routed) if isinstance(attribute, classmethod) else routed)


#: What ``--decisions`` counts: each decision point's attribute name (the
#: split, the masks of both managers, the lookup).
DECISIONS = ("_mamba_block_aligned_split", "reachable_block_mask", "find_longest_cache_hit")


def _arm_server(arm: str, work: Work, best_of: int, placement: int, channel: Any) -> None:
    """In a fresh process: set up and warm, then answer each layout index
    the parent sends with that layout's fastest of ``best_of`` runs (the
    machine's noise only adds), until it sends ``None``."""
    _set_up(arm, work, placement)
    channel.send(None)
    while (index := channel.recv()) is not None:
        channel.send(min(loop_seconds(*work[index]) for _ in range(best_of)))
    channel.close()


def timed_rounds(work: Work, rounds: int, best_of: int) -> dict[str, list[list[float]]]:
    """Per arm, per round: each layout's seconds. Every round forks a fresh
    process per arm (set up and warmed one after another); then, layout by
    layout, each arm runs in turn, in a seeded random order, so the runs a
    ratio compares are seconds apart and the machine's drift (its other
    tenants) cancels in it. Random, not rotating: a rotation keeps each arm's
    predecessor, whose footprint in the caches then weighs on it every time.
    Every arm of a round is placed alike (:func:`_place`), each round afresh."""
    fork = multiprocessing.get_context("fork")
    names = list(ARMS)
    seconds: dict[str, list[list[float]]] = {name: [] for name in names}
    order = random.Random(0)
    for _ in range(rounds):
        arms = {}
        placement = order.randrange(1 << 32)
        for name in names:
            channel, child = fork.Pipe()
            process = fork.Process(target=_arm_server, args=(name, work, best_of, placement, child))
            process.start()
            child.close()
            channel.recv()  # set up and warm: the next arm starts on an idle machine
            arms[name] = (process, channel)
        runs: dict[str, list[float]] = {name: [] for name in names}
        for index in range(len(work)):
            for name in order.sample(names, len(names)):
                arms[name][1].send(index)
                runs[name].append(arms[name][1].recv())
        for name, (process, channel) in arms.items():
            channel.send(None)
            process.join()
            if process.exitcode != 0:
                raise RuntimeError(f"arm {name} exited {process.exitcode}")
            seconds[name].append(runs[name])
    return seconds


def _count_arm(arm: str, work: Work, placement: int, point: str | None) -> None:
    """Under callgrind: set up (instrumentation off), then
    switch instrumentation on and run each layout once more with the loop's
    two calls made through ``operator.call`` (callgrind collects only inside
    it) and ``operator.length_hint`` after each layout (a dump: one file a
    layout). Both are C functions nothing else here calls. With ``point``,
    only that decision point's calls go through ``operator.call`` (warmed
    so, once more, before the count), and the garbage collector is off: a
    collection costs whichever call's allocation triggers it, so where it
    lands is chance, and the loop's count keeps it."""
    _set_up(arm, work, placement)
    through: Callable[..., Any] = operator.call
    if point is not None:
        _collect_only(point)
        for layout, requests in work:
            serve_workload(layout, requests, _direct)
        gc.collect()
        gc.disable()
        through = _direct
    control = ["callgrind_control", "--instr=on", str(os.getpid())]
    subprocess.run(control, check=True, capture_output=True)
    operator.length_hint([])
    for layout, requests in work:
        serve_workload(layout, requests, through)
        operator.length_hint([])


_TOTALS = re.compile(r"^totals: (\d+)$", re.MULTILINE)


def counted_instructions(
    arms: Sequence[str], requests: int, placements: Sequence[int], point: str | None = None
) -> dict[str, list[list[int]]]:
    """Per arm, per placement, per layout of ``LAYOUTS``: the instructions
    executed in the loop's two calls (with ``point``: in that decision
    point's calls only), each arm in its own process under
    callgrind (two at a time). A placement seeds the process's hash seed
    too, so a count's lottery (hash collisions, method-cache collisions,
    heap layout) is drawn afresh for each placement and alike for every arm."""
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            raise SystemExit(f"--instructions needs {tool} on PATH")
    jobs = [(arm, placement) for placement in placements for arm in arms]
    counts: dict[str, list[list[int]]] = {arm: [] for arm in arms}
    with tempfile.TemporaryDirectory() as folder:
        for batch in range(0, len(jobs), 2):
            runs = []
            for arm, placement in jobs[batch : batch + 2]:
                out = pathlib.Path(folder, f"{arm}-{placement}")
                out.mkdir()
                command = [
                    "valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
                    "--toggle-collect=_operator_call", "--dump-after=_operator_length_hint",
                    f"--callgrind-out-file={out}/cg", sys.executable, "-m", __spec__.name,
                    "--count-arm", arm, "--placement", str(placement),
                    "--requests", str(requests),
                ]  # fmt: skip
                if point is not None:
                    command += ["--count-point", point]
                env = {**os.environ, "PYTHONHASHSEED": str(placement)}
                process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
                runs.append((arm, out, process))
            for arm, out, process in runs:
                if process.wait() != 0:
                    raise RuntimeError(f"callgrind run of {arm} failed")
                # cg.1 holds what preceded the first dump (nothing); then one a layout.
                dumps = sorted(out.glob("cg.*"), key=lambda p: int(p.suffix[1:]))[1:]
                totals = [int(_TOTALS.findall(dump.read_text())[0]) for dump in dumps]
                # A decision point a layout never calls counts 0 (no Mamba group: no split).
                if len(totals) != len(LAYOUTS) or (point is None and 0 in totals):
                    raise RuntimeError(f"{arm}: callgrind counted {totals}")
                counts[arm].append(totals)
    return counts


def timed_table(chosen: Sequence[Layout], work: Work, rounds: int, best_of: int) -> None:
    """Print the timed rounds (:func:`timed_rounds`): per layout and summed,
    each arm's median and ratio, and the summed ratio's interval."""
    print(
        f"scheduler loop, CPU ms: median over {rounds} rounds (each arm a fresh process, "
        f"the arms taking turns layout by layout) of its fastest of {best_of} runs of "
        f"{len(work[0][1])} requests (seed 0); ratio: median of the rounds' ratios to vLLM; "
        f"again: vLLM's code in a second arm; touched: vLLM's own functions set back onto "
        f"its classes, as an install sets the adapters"
    )
    _header(list(ARMS))
    seconds = timed_rounds(work, rounds, best_of)
    for index, layout in enumerate(chosen):
        _row(
            layout.name, {arm: [run[index] * 1e3 for run in runs] for arm, runs in seconds.items()}
        )
    summed = {arm: [sum(run) * 1e3 for run in runs] for arm, runs in seconds.items()}
    _row("all layouts (per round, summed)", summed)
    _intervals(summed)


def decision_instructions(
    chosen: Sequence[Layout], requests: int, placements: Sequence[int]
) -> None:
    """Print each decision point's instructions (callgrind, only its calls)
    for vLLM and each mode, per layout that calls it, and all of them summed.
    In ``identical`` mode every answer is vLLM's, so the rest of the loop
    runs the same code on the same states: the decisions' count is then the
    whole of the difference, which a count of the loop cannot resolve."""
    print(
        f"\ndecision instructions (callgrind, each point's calls only), millions, warm "
        f"second run of {requests} requests: median over {len(placements)} placements; "
        f"ratio: median of the placements' ratios to vLLM"
    )
    arms = ["vLLM", *(mode.value for mode in Mode)]
    _header(arms)
    total: dict[str, list[float]] = {arm: [0.0] * len(placements) for arm in arms}
    for point in DECISIONS:
        counts = counted_instructions(arms, requests, placements, point)
        for index, layout in enumerate(chosen):
            if all(run[index] for run in counts["vLLM"]):  # the layout asks this point
                values = {arm: [run[index] / 1e6 for run in runs] for arm, runs in counts.items()}
                _row(f"{point}, {layout.name}", values)
        summed = {arm: [sum(run) / 1e6 for run in runs] for arm, runs in counts.items()}
        _row(f"{point}, all layouts", summed)
        for arm, point_sums in summed.items():
            total[arm] = [a + b for a, b in zip(total[arm], point_sums, strict=True)]
    _row("every decision, all layouts", total)
    _intervals(total)


def bind_once_us(layout: Layout, repeats: int) -> tuple[float, float]:
    """Median microseconds of building one coordinator's lookup binding, and
    of one bound lookup (a 300-token prompt on an empty pool) for scale."""
    scheduler = build_scheduler(layout.geometry, num_blocks=layout.num_blocks)
    coordinator = scheduler.kv_cache_manager.coordinator
    unit = layout.geometry.hash_block_size
    request = make_request("probe", tuple(range(1, 301)), unit, 1)
    builds, calls = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        dropin_lookup._bound(coordinator)
        builds.append(time.perf_counter() - start)
        start = time.perf_counter()
        dropin_lookup.core_find_longest_cache_hit(coordinator, request.block_hashes, 299)
        calls.append(time.perf_counter() - start)
    return statistics.median(builds) * 1e6, statistics.median(calls) * 1e6


def per_call_us(
    layout: Layout, requests: list[Request], repeats: int
) -> dict[str, dict[str, list[float]]]:
    """Per decision point (its attribute name) and side (vLLM, each mode): the
    fastest of ``repeats`` microseconds of every call of one vLLM loop."""
    points = {mode: dropin.decision_points(mode) for mode in Mode}
    originals = {key: key[0].__dict__[key[1]] for key in points[Mode.CORRECTED]}
    times: dict[str, dict[str, list[float]]] = {}
    clock = time.perf_counter

    def timed(key: tuple[type, str]) -> Any:
        sides = [("vLLM", _function(originals[key]))]
        sides += [(mode.value, _function(points[mode][key])) for mode in Mode]
        kept = times.setdefault(key[1], {side: [] for side, _ in sides})

        def call(first: Any, *args: Any, **kwargs: Any) -> Any:
            for side, function in sides:
                best = float("inf")
                for _ in range(repeats):
                    start = clock()
                    function(first, *args, **kwargs)
                    best = min(best, clock() - start)
                kept[side].append(best * 1e6)
            return sides[0][1](first, *args, **kwargs)

        return classmethod(call) if isinstance(originals[key], classmethod) else call

    for cls, name in originals:
        setattr(cls, name, timed((cls, name)))
    try:
        loop_seconds(layout, requests)
    finally:
        for (cls, name), original in originals.items():
            setattr(cls, name, original)
    return times


def _function(attribute: Any) -> Any:
    return attribute.__func__ if isinstance(attribute, classmethod) else attribute


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--best-of", type=int, default=3)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--per-call", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--placements", type=int, default=4)
    parser.add_argument("--count-requests", type=int, default=100)
    parser.add_argument("--decisions", action="store_true")
    parser.add_argument("--count-arm", choices=list(ARMS), help=argparse.SUPPRESS)
    parser.add_argument("--count-point", choices=DECISIONS, help=argparse.SUPPRESS)
    parser.add_argument("--placement", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    chosen = [layout for layout in layouts() if layout.name in LAYOUTS]
    work = [(layout, workload(layout, 0, args.requests)) for layout in chosen]
    if args.count_arm:
        _count_arm(args.count_arm, work, args.placement, args.count_point)
        return
    if args.rounds:
        timed_table(chosen, work, args.rounds, args.best_of)
    draw = random.Random(1)
    placements = [draw.randrange(1 << 32) for _ in range(args.placements)]
    if args.instructions:
        print(
            f"\nloop instructions (callgrind), millions, warm second run of "
            f"{args.count_requests} requests, each arm its own process: median over "
            f"{args.placements} placements (heap, version tags, hash seed; alike for every "
            f"arm); ratio: median of the placements' ratios to vLLM"
        )
        # A count does not drift: a second vLLM arm would count the same.
        counted = [arm for arm in ARMS if arm != "again"]
        _header(counted)
        counts = counted_instructions(counted, args.count_requests, placements)
        for index, layout in enumerate(chosen):
            _row(
                layout.name,
                {arm: [run[index] / 1e6 for run in runs] for arm, runs in counts.items()},
            )
        summed = {arm: [sum(run) / 1e6 for run in runs] for arm, runs in counts.items()}
        _row("all layouts, summed", summed)
        _intervals(summed)
    if args.decisions:
        decision_instructions(chosen, args.count_requests, placements)
    print("\nbind once (first lookup of a configuration), median us over 101 builds")
    print(f"  {'bind':>8}  {'lookup':>8}  layout")
    for layout in chosen:
        build, call = bind_once_us(layout, 101)
        print(f"  {build:8.1f}  {call:8.1f}  {layout.name}")
    if args.per_call:
        print(
            f"\nper decision point in place, us per call (mean of each call's fastest of "
            f"{args.repeats}), ratio to vLLM"
        )
        print(f"  {'calls':>6}  {'vLLM':>6}  {'corrected':>9}  {'identical':>9}  point, layout")
        for layout, requests in work:
            for name, sides in per_call_us(layout, requests, args.repeats).items():
                if not sides["vLLM"]:
                    continue
                mean = {side: statistics.fmean(values) for side, values in sides.items()}
                own = mean["vLLM"]
                print(
                    f"  {len(sides['vLLM']):6d}  {own:6.2f}  {mean['corrected']:5.2f} "
                    f"{mean['corrected'] / own:4.2f}  {mean['identical']:5.2f} "
                    f"{mean['identical'] / own:4.2f}  {name}, {layout.name}"
                )


CONTROLS = ("again", "touched")


def _header(arms: Sequence[str]) -> None:
    controls = "".join(f"  {arm:>7}" for arm in CONTROLS if arm in arms)
    print(
        f"  {'vLLM':>8}  {'corrected':>9}  {'ratio':>6}  {'identical':>9}  {'ratio':>6}"
        f"{controls}  layout"
    )


def _row(name: str, values: dict[str, list[float]]) -> None:
    """Each arm's median, and its ratio to vLLM: the median over rounds of
    the round's ratio (the two runs it divides were made seconds apart)."""
    median = {arm: statistics.median(arm_values) for arm, arm_values in values.items()}
    ratio = {arm: statistics.median(_ratios(values, arm)) for arm in values}
    controls = "".join(f"  {ratio[arm]:7.3f}" for arm in CONTROLS if arm in ratio)
    print(
        f"  {median['vLLM']:8.1f}  {median['corrected']:9.1f}  {ratio['corrected']:6.3f}  "
        f"{median['identical']:9.1f}  {ratio['identical']:6.3f}{controls}  {name}"
    )


def _ratios(values: dict[str, list[float]], arm: str) -> list[float]:
    """``arm``'s value over vLLM's, round by round (or placement by placement)."""
    return [a / b for a, b in zip(values[arm], values["vLLM"], strict=True)]


def median_interval(
    values: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float]:
    """A distribution-free interval for the median of what ``values`` sample,
    and its exact coverage: the order statistics ``k`` and ``n + 1 - k``
    (1-based), ``k`` the largest with P(Binomial(n, 1/2) < k) at most half of
    ``1 - confidence`` (at least 1: min to max where ``n`` is too small)."""
    n = len(values)
    ordered = sorted(values)

    def below(k: int) -> float:  # P(Binomial(n, 1/2) < k)
        return sum(math.comb(n, i) for i in range(k)) / (1 << n)

    k = 1
    while k + 1 <= (n + 1) // 2 and below(k + 1) <= (1 - confidence) / 2:
        k += 1
    return ordered[k - 1], ordered[n - k], 1 - 2 * below(k)


def _intervals(values: dict[str, list[float]]) -> None:
    """The summed ratio's interval (:func:`median_interval`) for each arm."""
    parts = []
    coverage = 0.0
    for arm in values:
        if arm == "vLLM":
            continue
        low, high, coverage = median_interval(_ratios(values, arm))
        parts.append(f"{arm} {low:.3f} to {high:.3f}")
    print(f"  interval of the summed ratio's median ({coverage:.1%}): " + "; ".join(parts))


if __name__ == "__main__":
    main()
