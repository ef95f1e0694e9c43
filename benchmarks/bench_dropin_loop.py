"""vLLM 0.33.0's scheduler loop with the drop-in against vLLM as shipped, side by side.

Each layout's seeded multi-turn workload (``audit.vllm.scheduler_differential``:
shared system prompts, forks, resends, extensions, grid-cut prefixes,
aborts, eviction and preemption in a small pool) runs end to end on a fresh
real ``Scheduler`` (``audit.vllm.scheduler``), alternating in one run: vLLM's
own code, then the drop-in in each mode, then vLLM's code again (``again``,
its ratio to the first: the noise floor), round after round, so machine
noise hits all alike. Timed: ``Scheduler.schedule()`` and ``update_from_output``
only (building the scheduler, the requests and the model's stand-in output
are the same in every arm and left out). The ratio is drop-in / vLLM (below
1.0: the drop-in's loop is faster). Then the bind-once cost: what the first
lookup of a coordinator configuration pays to build its binding (geometry,
reconciler, pool readers), against one bound lookup. With ``--per-call``,
also each decision point in place: during one run of vLLM's own loop, every
call's arguments go to vLLM's code and to each mode's adapter in turn on the
same state (the three decisions only read it); printed per decision point:
the mean over its calls of each side's fastest of ``--repeats``.

Needs vLLM (``make audit-setup``). Run: ``make bench-dropin``
(``python -m benchmarks.bench_dropin_loop``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from junction import dropin
from junction.audit.vllm.env import vllm
from junction.audit.vllm.scheduler import build_scheduler, make_request, model_output
from junction.audit.vllm.scheduler_differential import Layout, Request, layouts, workload
from junction.dropin import Mode
from junction.dropin import lookup as dropin_lookup

LAYOUTS = (
    "full16+mamba16 R=0",
    "full64+mamba64 H=16 (partial) R=None",
    "full16+window40/16 R=0",
    "full16+window40/16+mamba16 R=0",
    "EAGLE full16+window40/8 R=0",
    "EAGLE draft=mamba full64+mamba64 H=16 (partial)",
)


def loop_seconds(layout: Layout, requests: list[Request]) -> float:
    """Seconds spent in ``schedule`` and ``update_from_output`` serving ``requests``."""
    scheduler = build_scheduler(
        layout.geometry,
        num_blocks=layout.num_blocks,
        max_num_batched_tokens=layout.budget,
        max_num_seqs=layout.max_num_seqs,
    )
    unit = layout.geometry.hash_block_size
    aborted = vllm().request.RequestStatus.FINISHED_ABORTED
    arrivals = sorted(requests, key=lambda r: r.arrival)
    aborts = sorted((r for r in requests if r.abort_at is not None), key=lambda r: r.abort_at or 0)
    spent, step = 0.0, 0
    clock = time.perf_counter
    while arrivals or aborts or scheduler.requests:
        while arrivals and arrivals[0].arrival <= step:
            r = arrivals.pop(0)
            scheduler.add_request(make_request(r.request_id, r.prompt, unit, r.max_tokens))
        while aborts and (aborts[0].abort_at or 0) <= step:
            scheduler.finish_requests(aborts.pop(0).request_id, aborted)
        start = clock()
        scheduled = scheduler.schedule()
        spent += clock() - start
        output = model_output(scheduled, scheduler)
        start = clock()
        scheduler.update_from_output(scheduled, output)
        spent += clock() - start
        step += 1
    return spent


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
    parser.add_argument("--per-call", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    chosen = [layout for layout in layouts() if layout.name in LAYOUTS]
    # vLLM runs twice a round: the second run ("again") is the noise floor,
    # what the ratio of vLLM's code to itself comes out as.
    arms: list[tuple[str, Mode | None]] = [
        ("vLLM", None),
        *((m.value, m) for m in Mode),
        ("again", None),
    ]
    print(
        f"scheduler loop, median ms over {args.rounds} alternating rounds of "
        f"{args.requests} requests (seed 0); again: vLLM's code in a second arm"
    )
    print(
        f"  {'vLLM':>8}  {'corrected':>9}  {'ratio':>5}  {'identical':>9}  {'ratio':>5}  "
        f"{'again':>5}  layout"
    )
    totals: dict[str, list[float]] = {name: [0.0] * args.rounds for name, _ in arms}
    for layout in chosen:
        requests = workload(layout, 0, args.requests)
        times: dict[str, list[float]] = {name: [] for name, _ in arms}
        for round_ in range(args.rounds):
            for name, mode in arms:
                if mode is None:
                    spent = loop_seconds(layout, requests)
                else:
                    with dropin.swapped_in(mode):
                        spent = loop_seconds(layout, requests)
                times[name].append(spent)
                totals[name][round_] += spent
        _row(layout.name, times)
    _row("all layouts (per round, summed)", totals)
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
        for layout in chosen:
            for name, sides in per_call_us(
                layout, workload(layout, 0, args.requests), args.repeats
            ).items():
                if not sides["vLLM"]:
                    continue
                mean = {side: statistics.fmean(values) for side, values in sides.items()}
                own = mean["vLLM"]
                print(
                    f"  {len(sides['vLLM']):6d}  {own:6.2f}  {mean['corrected']:5.2f} "
                    f"{mean['corrected'] / own:4.2f}  {mean['identical']:5.2f} "
                    f"{mean['identical'] / own:4.2f}  {name}, {layout.name}"
                )


def _row(name: str, times: dict[str, list[float]]) -> None:
    median = {arm: statistics.median(values) * 1e3 for arm, values in times.items()}
    own = median["vLLM"]
    print(
        f"  {own:8.1f}  {median['corrected']:9.1f}  {median['corrected'] / own:5.2f}  "
        f"{median['identical']:9.1f}  {median['identical'] / own:5.2f}  "
        f"{median['again'] / own:5.2f}  {name}"
    )


if __name__ == "__main__":
    main()
