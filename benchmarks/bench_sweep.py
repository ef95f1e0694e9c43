"""The parallel sweep: one grid of 8 runs with ``--jobs 1``, ``--jobs 2`` and ``--ray auto``.

Each mode is the command a user types (``junction sweep``,
a fresh process, start-up included), run ``--rounds`` times, the modes
alternating within each round so that a load spike on the machine falls on
all of them alike. Prints each mode's median wall time, its speed-up over
``--jobs 1``, and whether every mode wrote the same ``sweep.json`` (it must).
The load average is printed before and after: on a machine busy with other
work (load above the CPU count) the workers share what is left, and no mode
can be faster than that share. Ray's own start-up (import, ``ray.init`` of a
local Ray, shutdown) is timed apart, once per round, so its share of the Ray
mode is visible.

Run: ``.venv/bin/python -m benchmarks.bench_sweep [--rounds 3] [--sessions 400]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODES = {"--jobs 1": ["--jobs", "1"], "--jobs 2": ["--jobs", "2"], "--ray auto": ["--ray", "auto"]}
RAY_START = (
    "import logging, ray; "
    "ray.init(include_dashboard=False, logging_level=logging.WARNING); ray.shutdown()"
)


def grid(sessions: int, out: Path) -> list[str]:
    """8 runs: 2 geometries x (pinned and unpinned at R = 0 and 256)."""
    return [
        *(sys.executable, "-m", "junction", "sweep"),
        *("--sessions", str(sessions), "--policy", "junction", "--policy", "interval"),
        *("--intervals", "0,256", "--out", str(out)),
    ]


def _load() -> str:
    """The 1, 5 and 15 minute load averages: above the CPU count, the modes share the CPUs."""
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=400)
    args = parser.parse_args()
    times: dict[str, list[float]] = {mode: [] for mode in (*MODES, "Ray start-up alone")}
    documents: dict[str, list[bytes]] = {mode: [] for mode in MODES}
    print(f"cpus {os.cpu_count()}, load average before: {_load()}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(args.rounds):
            for mode, flags in MODES.items():
                out = Path(folder) / f"{round_}{flags[-1]}"
                times[mode].append(timed([*grid(args.sessions, out), *flags]))
                documents[mode].append((out / "sweep.json").read_bytes())
            times["Ray start-up alone"].append(timed([sys.executable, "-c", RAY_START]))
            line = ", ".join(f"{mode} {samples[-1]:.1f} s" for mode, samples in times.items())
            print(f"round {round_ + 1}: {line}", flush=True)
    print(f"load average after: {_load()}")
    base = statistics.median(times["--jobs 1"])
    print(f"\n8 runs, --sessions {args.sessions}, median of {args.rounds} rounds:")
    print("| mode | median wall time | speed-up over --jobs 1 |")
    print("| --- | --- | --- |")
    for mode, samples in times.items():
        median = statistics.median(samples)
        ratio = f"{base / median:.2f}x" if mode in MODES else "-"
        print(f"| {mode} | {median:.1f} s | {ratio} |")
    versions = list(dict.fromkeys(d for runs in documents.values() for d in runs))
    identical = len(versions) == 1
    print(f"\nsweep.json identical across every mode and round: {'yes' if identical else 'NO'}")
    if not identical:  # which runs wrote which: a round boundary means the code changed
        for mode, runs in documents.items():
            print(f"{mode}: version by round {[versions.index(d) + 1 for d in runs]}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
