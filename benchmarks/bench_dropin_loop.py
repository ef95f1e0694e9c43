"""vLLM 0.33.0's scheduler loop with the drop-in against vLLM as shipped.

Each layout's seeded multi-turn workload (``audit.vllm.scheduler_differential``)
runs end to end on a fresh real ``Scheduler``; the loop measured is its
``schedule()`` and ``update_from_output`` calls.

Timed (the default): one pyperf benchmark per arm (vLLM's own code, the
drop-in in each mode, and vLLM's code ``again``, last: how far the machine
drifted while the arms ran one after another), a value being the thread's
CPU time in the loop over the six layouts' workloads. Each pyperf worker
process sets its one arm up before its first run, as ``vllm serve``'s
plugin installs the drop-in, so no arm runs after a swap. Printed: each
arm's median and standard deviation, and its ratio to vLLM's.

``--count loop`` or ``--count decisions``: the machine instructions
(valgrind's callgrind) of the loop's calls, or of the three decision points'
calls alone, per layout; each arm in its own process under one hash seed,
so a count repeats. In ``identical`` mode every answer is vLLM's, so the
rest of the loop runs vLLM's code on vLLM's states: the decisions' count is
then the whole difference, finer than time or the loop's count resolves.
Why so: docs/design/dropin-bench.md.

Needs vLLM (``make audit-setup``); ``--count`` needs valgrind. Run:
``make bench-dropin``.
"""

from __future__ import annotations

import functools
import gc
import operator
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from junction import dropin
from junction.audit.vllm.scheduler import make_request, model_output
from junction.audit.vllm.scheduler_differential import Layout, Request, layouts, workload
from junction.dropin import Mode
from junction.upstream.vllm_0_33.env import vllm

from .timing import runner

LAYOUTS = (
    "full16+mamba16 R=0",
    "full64+mamba64 H=16 (partial) R=None",
    "full16+window40/16 R=0",
    "full16+window40/16+mamba16 R=0",
    "EAGLE full16+window40/8 R=0",
    "EAGLE draft=mamba full64+mamba64 H=16 (partial)",
)
#: Arm name -> what its process does once, before the first step.
ARMS: dict[str, Callable[[], None]] = {
    "vLLM": lambda: None,
    **{mode.value: functools.partial(dropin.install, mode) for mode in Mode},
    # vLLM's code again, timed last: how far the machine drifts while the arms run.
    "again": lambda: None,
}
#: The arms a count runs: a count does not drift, so it needs no second vLLM arm.
COUNTED = ("vLLM", *(mode.value for mode in Mode))
#: The decision points' attribute names: the split, both managers' masks, the lookup.
DECISIONS = ("_mamba_block_aligned_split", "reachable_block_mask", "find_longest_cache_hit")
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


def _direct(method: Callable[..., Any], *args: Any) -> Any:
    return method(*args)


# The arm this process runs, and its workloads: set up once (a process runs one arm).
_prepared: dict[str, Work] = {}


def prepared(arm: str, requests: int) -> Work:
    """Set ``arm`` up in this process on the first call, then warm every layout."""
    if arm not in _prepared:
        if _prepared:
            raise RuntimeError(f"arm {arm} after {list(_prepared)}: one arm a process")
        ARMS[arm]()
        chosen = [layout for layout in layouts() if layout.name in LAYOUTS]
        _prepared[arm] = [(layout, workload(layout, 0, requests)) for layout in chosen]
        for layout, work in _prepared[arm]:
            serve_workload(layout, work, _direct)
    return _prepared[arm]


def loop_seconds(loops: int, arm: str, requests: int) -> float:
    """pyperf's time function: this thread's CPU seconds in the measured loop
    over ``loops`` rounds of every layout (CPU time: another process's load
    on a shared machine is not counted)."""
    work = prepared(arm, requests)
    clock, spent = time.thread_time, [0.0]

    def timed(method: Callable[..., Any], *args: Any) -> Any:
        start = clock()
        result = method(*args)
        spent[0] += clock() - start
        return result

    for _ in range(loops):
        for layout, work_requests in work:
            serve_workload(layout, work_requests, timed)
    return spent[0]


def _collect_decisions() -> None:
    """Route every decision point's calls through ``operator.call``, the one
    function callgrind collects in, whatever the arm set there. A decision
    called inside another would switch collection off early: it raises."""
    depth = [0]
    for cls, name in dropin.decision_points(Mode.CORRECTED):
        attribute = cls.__dict__[name]
        function = attribute.__func__ if isinstance(attribute, classmethod) else attribute

        def call(first: Any, *args: Any, _function: Any = function, **kwargs: Any) -> Any:
            if depth[0]:
                raise RuntimeError(f"{_function.__qualname__} called inside another decision")
            depth[0] += 1
            try:
                return operator.call(_function, first, *args, **kwargs)
            finally:
                depth[0] -= 1

        routed: Callable[..., Any] = call
        setattr(cls, name, classmethod(routed) if isinstance(attribute, classmethod) else routed)


def count_arm(arm: str, requests: int, what: str) -> None:
    """Under callgrind, instrumentation off: set up and warm; then switch it
    on and run each layout once more, the counted calls made through
    ``operator.call`` and ``operator.length_hint`` after each layout (a dump
    a layout); both are C functions nothing else here calls. Counting the
    decisions, the collector is off: a collection costs whichever call's
    allocation triggers it, so where it lands is chance."""
    work = prepared(arm, requests)
    through: Callable[..., Any] = operator.call
    if what == "decisions":
        _collect_decisions()
        for layout, work_requests in work:
            serve_workload(layout, work_requests, _direct)
        gc.collect()
        gc.disable()
        through = _direct
    control = ["callgrind_control", "--instr=on", str(os.getpid())]
    subprocess.run(control, check=True, capture_output=True)
    operator.length_hint([])
    for layout, work_requests in work:
        serve_workload(layout, work_requests, through)
        operator.length_hint([])


_TOTALS = re.compile(r"^totals: (\d+)$", re.MULTILINE)


def counted(requests: int, what: str) -> dict[str, list[int]]:
    """Per arm, per layout: the instructions counted (:func:`count_arm`),
    each arm in its own process under callgrind, two at a time."""
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            raise SystemExit(f"--count needs {tool} on PATH")
    counts: dict[str, list[int]] = {}
    arms = list(COUNTED)
    with tempfile.TemporaryDirectory() as folder:
        for batch in range(0, len(arms), 2):
            runs = []
            for arm in arms[batch : batch + 2]:
                out = pathlib.Path(folder, arm)
                out.mkdir()
                command = [
                    "valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
                    "--toggle-collect=_operator_call", "--dump-after=_operator_length_hint",
                    f"--callgrind-out-file={out}/cg", sys.executable, "-m", __spec__.name,
                    "--count", what, "--count-arm", arm, "--requests", str(requests),
                ]  # fmt: skip
                env = {**os.environ, "PYTHONHASHSEED": "0"}
                runs.append(
                    (arm, out, subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL))
                )
            for arm, out, process in runs:
                if process.wait() != 0:
                    raise RuntimeError(f"callgrind run of {arm} failed")
                # cg.1 holds what preceded the first dump (nothing); then one a layout.
                dumps = sorted(out.glob("cg.*"), key=lambda p: int(p.suffix[1:]))[1:]
                counts[arm] = [int(_TOTALS.findall(dump.read_text())[0]) for dump in dumps]
                if len(counts[arm]) != len(LAYOUTS) or 0 in counts[arm]:
                    raise RuntimeError(f"{arm}: callgrind counted {counts[arm]}")
    return counts


def count_table(requests: int, what: str) -> None:
    counts = counted(requests, what)
    print(
        f"{what} instructions (callgrind), millions, a warm run of {requests} requests "
        f"a layout; ratio to vLLM"
    )
    modes = [mode.value for mode in Mode]
    print(f"  {'vLLM':>8}" + "".join(f"  {m:>9}  {'ratio':>6}" for m in modes) + "  layout")
    rows = [(name, [counts[arm][i] for arm in COUNTED]) for i, name in enumerate(LAYOUTS)]
    for name, values in [*rows, ("all layouts, summed", [sum(c) for c in counts.values()])]:
        own, *theirs = values
        cells = "".join(f"  {v / 1e6:9.1f}  {v / own:6.3f}" for v in theirs)
        print(f"  {own / 1e6:8.1f}{cells}  {name}")


def timed_table(made: Any, requests: int) -> None:
    benches = {arm: made.bench_time_func(arm, loop_seconds, arm, requests) for arm in ARMS}
    if made.args.worker:
        return
    own = benches["vLLM"].median()
    print(f"scheduler loop, CPU ms over the six layouts' {requests} requests each")
    print(f"  {'median':>8}  {'std dev':>7}  {'ratio':>6}  arm")
    for arm, bench in benches.items():
        median = bench.median()
        spread = f"{bench.stdev() * 1e3:7.1f}" if bench.get_nvalue() > 1 else f"{'-':>7}"
        print(f"  {median * 1e3:8.1f}  {spread}  {median / own:6.3f}  {arm}")


def main() -> None:
    # A worker spends seconds importing vLLM: 6 of them, not pyperf's 20.
    made = runner(__spec__.name, processes=6, forward=("requests",))
    made.argparser.add_argument("--requests", type=int, default=300, help="a layout's workload")
    made.argparser.add_argument("--count", choices=("loop", "decisions"))
    made.argparser.add_argument("--count-arm", choices=COUNTED, help="(internal)")
    args = made.parse_args()
    if args.count_arm:
        count_arm(args.count_arm, args.requests, args.count)
    elif args.count:
        count_table(args.requests, args.count)
    elif args.in_process:
        raise SystemExit("the loop's arms need a process each: run without --in-process")
    else:
        timed_table(made, args.requests)


if __name__ == "__main__":
    main()
