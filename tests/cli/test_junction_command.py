"""``junction`` (and ``python -m junction``): one command over every entry point.

``--help`` lists every subcommand; each hands its arguments to the entry
point it names, imported only when it runs; the console script is declared.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from junction import command

from .in_process import run_in_process

ROOT = Path(__file__).resolve().parents[2]
SUBCOMMANDS = {
    "simulate",
    "sweep",
    "fuzz",
    "replay",
    "hbm",
    "findings",
    "exhaustive",
    "kernel-sweep",
    "vendor",
    "audit",
    "bench",
}


def junction(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "junction", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_help_lists_every_subcommand() -> None:
    done = junction("--help")
    assert done.returncode == 0 and done.stderr == ""
    listed = {
        line.split()[0]
        for line in done.stdout.split("subcommands:\n")[1].splitlines()
        if line.startswith("  ")
    }
    assert listed == SUBCOMMANDS == {c.name for c in command.COMMANDS}


def test_the_console_script_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"junction": "junction.command:main"}


def test_a_subcommand_runs_its_entry_point_with_the_rest_of_the_line() -> None:
    done = junction("exhaustive", "--bound", "1")
    assert done.returncode == 0, done.stderr
    assert "bound 1" in done.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nosuch"], "junction: error: unknown subcommand 'nosuch' (one of simulate,"),
        (["bench", "nosuch"], "junction bench: error: unknown benchmark 'nosuch' (one of core,"),
    ],
)
def test_an_unknown_name_exits_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ended = run_in_process(command.main, argv, capsys)
    assert ended.code == 2 and ended.last_line.startswith(message)


def test_no_subcommand_prints_the_usage_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    ended = run_in_process(command.main, [], capsys)
    assert ended.code == 2 and ended.out.startswith("usage: junction SUBCOMMAND")


def test_replay_reaches_the_reference_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    ended = run_in_process(command.main, ["replay", str(bad)], capsys)
    assert ended.code == 2 and "neither a scenario nor a fuzz --json report" in ended.last_line


def test_the_dispatcher_imports_no_entry_point_until_one_runs() -> None:
    heavy = "('junction.reference', 'junction.audit', 'junction.kernels', 'rich', 'hypothesis')"
    code = (
        "import sys, junction.command; "
        f"print(sorted(m for m in sys.modules if m.startswith({heavy})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_bench_knows_every_benchmark_of_the_checkout() -> None:
    files = {p.stem.removeprefix("bench_") for p in (ROOT / "benchmarks").glob("bench_*.py")}
    assert set(command.BENCHMARKS) == files
