"""Pytest runs of vLLM's tests in child processes, under the suite's plugin.

Child processes because the runs must not share a process: the count run's
wrappers and the drop-in's installation both rebind vLLM's classes, and
vLLM's tests keep module-level state (the none-hash, registries) a second
session in the same interpreter would inherit. A run is split into
``jobs`` processes side by side (CI has two cores; vLLM's tests are
single-threaded), each collecting everything and keeping its share of the
tests (the plugin's ``--junction-shard``). Test ids reach pytest through an
argument file (pytest's ``@file``): a run names hundreds of them.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .outcome import TestOutcome, read_outcomes
from .workspace import Workspace

__all__ = ["run_tests"]


def run_tests(
    workspace: Workspace, mode: str, tests: Sequence[str], reports: Path, jobs: int
) -> dict[str, TestOutcome]:
    """Run ``tests`` (files, or test ids) in ``mode`` (``count`` or ``dropin``); their outcomes.

    Failing tests are the data, so pytest's exit status 1 is a normal run;
    any other but 0 (interrupted, internal or usage error, nothing
    collected) raises ``RuntimeError``, as does a test given by id that was
    not reported (the run crashed, or the id no longer exists).
    """
    reports.mkdir(parents=True, exist_ok=True)
    arguments = reports / f"{mode}.args"
    arguments.write_text("\n".join(tests) + "\n", encoding="utf-8")
    processes = []
    for index in range(jobs):
        report = reports / f"{mode}-{index}.jsonl"
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "junction.audit.vllm.suite.plugin",
            f"--junction-mode={mode}",
            f"--junction-report={report.resolve()}",
            f"--junction-shard={index}/{jobs}",
            "-p",
            "no:cacheprovider",
            "-q",
            "-W",
            "ignore",
            f"--rootdir={workspace.root}",
            f"@{arguments.resolve()}",
        ]
        processes.append(
            (
                report,
                subprocess.Popen(
                    command,
                    cwd=workspace.root,
                    env=workspace.environment(),
                    stdout=subprocess.DEVNULL,
                ),
            )
        )
    outcomes: dict[str, TestOutcome] = {}
    for report, process in processes:
        if (status := process.wait()) not in (0, 1):
            raise RuntimeError(f"the {mode} run's pytest exited with status {status}")
        outcomes.update(read_outcomes(report))
    missing = [test for test in tests if "::" in test and test not in outcomes]
    if missing:
        raise RuntimeError(
            f"the {mode} run reported no outcome for {len(missing)} tests, e.g. {missing[0]}"
        )
    return outcomes
