"""``junction`` (and ``python -m junction``): one argparse tree over every subcommand.

``--help`` lists every subcommand and imports none of them; every
subcommand's ``--help`` works on the demo install (no torch, no vLLM) and
names it ``junction SUBCOMMAND``; a subcommand whose extra is missing says
which in one line; the console script is declared and finds the benchmarks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from junction import command

from .in_process import run_in_process

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
SUBCOMMANDS = [
    "simulate",
    "sweep",
    "fuzz",
    "replay",
    "hbm",
    "findings",
    "exhaustive",
    "kernel-sweep",
    "vendor",
    "results",
    "audit",
    "bench",
]
AUDIT = ["findings", "engines", "vllm-suite", "vllm-engine"]
# What the demo install (`.[demo]`: attrs, hypothesis, rich, matplotlib) lacks.
NOT_IN_THE_DEMO = ("torch", "triton", "numpy", "vllm", "sglang", "transformers", "ray")
# The demo install, simulated: these imports fail as if they were not installed.
DEMO = f"import sys\nfor name in {NOT_IN_THE_DEMO!r}:\n    sys.modules[name] = None\n"


def paths() -> list[list[str]]:
    """Every subcommand's command line (``audit findings`` for a group's)."""
    found: list[list[str]] = []
    for row in command.COMMANDS:
        if isinstance(row, command.Group):
            found += [[row.name, c.name] for c in row.commands]
        else:
            found.append([row.name])
    return found


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def listed(help_text: str) -> list[str]:
    """The subcommands a help text lists, in order."""
    rows = help_text.split("subcommands:\n", 1)[1].splitlines()[1:]
    return [row.split()[0] for row in rows if row.startswith("    ") and row[4] != " "]


def test_help_lists_every_subcommand_and_audit_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    ended = run_in_process(command.dispatch, ["--help"], capsys)
    assert ended.code == 0 and ended.out.startswith("usage: junction ")
    assert listed(ended.out) == SUBCOMMANDS == [row.name for row in command.COMMANDS]
    audit = run_in_process(command.dispatch, ["audit", "--help"], capsys)
    assert audit.code == 0 and audit.out.startswith("usage: junction audit ")
    assert listed(audit.out) == AUDIT
    # The top-level help names the same (its line wrapped anywhere, at a hyphen too).
    entry = ended.out.split("\n    audit ", 1)[1].split("\n    bench ", 1)[0]
    assert "".join(entry.split()).endswith(":" + "|".join(AUDIT))


def test_every_help_works_on_the_demo_install() -> None:
    """Each ``junction PATH --help`` in one process where the demo's missing packages
    cannot be imported: exit 0, ``usage: junction PATH``, nothing of the old spellings."""
    code = DEMO + (
        "import contextlib, io, json\n"
        "from junction.command import dispatch\n"
        f"helps = {{}}\n"
        f"for path in {paths()!r}:\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        try:\n"
        "            dispatch([*path, '--help'])\n"
        "        except SystemExit as exit:\n"
        "            helps[' '.join(path)] = (exit.code, out.getvalue())\n"
        "print(json.dumps(helps))\n"
    )
    done = python(code)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    helps = json.loads(done.stdout)
    assert sorted(helps) == sorted(" ".join(path) for path in paths())
    for name, (status, text) in helps.items():
        assert status == 0, name
        assert text.startswith(f"usage: junction {name} "), text[:200]
        assert "python -m" not in text, name


def test_a_missing_extra_is_one_line_naming_it() -> None:
    code = DEMO + "from junction.command import main\nraise SystemExit(main(['kernel-sweep']))"
    done = python(code)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "junction kernel-sweep: error: needs the `kernels` extra (torch is not installed): "
        "pip install 'junction[kernels]'\n"
    )


def test_help_imports_no_subcommand() -> None:
    heavy = ("junction.reference", "junction.audit", "junction.kernels", "rich", "hypothesis")
    heavy += ("torch", "vllm")
    code = (
        "import contextlib, io, sys\n"
        "from junction.command import dispatch\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    dispatch(['--help'])\n"
        f"print(sorted(m for m in sys.modules if m.startswith({heavy!r})))"
    )
    done = python(code)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_the_console_script_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"junction": "junction.command:main"}


def test_a_subcommand_runs_with_the_rest_of_the_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "junction", "exhaustive", "--bound", "1"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "bound 1" in done.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nosuch"], "junction: error: argument SUBCOMMAND: invalid choice: 'nosuch'"),
        (["audit", "nosuch"], "junction audit: error: argument SUBCOMMAND: invalid choice:"),
        (["bench", "nosuch"], "junction bench: error: argument NAME: invalid choice: 'nosuch'"),
        ([], "junction: error: the following arguments are required: SUBCOMMAND"),
        (["hbm", "--hbm", "8"], "junction hbm: error: --hbm needs --model or --model-config"),
        (["fuzz", "--seconds", "x"], "junction fuzz: error: argument --seconds: "),
        (["simulate", "--trace", "{bad}"], "junction simulate: error: --trace: "),
        (["sweep", "--trace", "{bad}"], "junction sweep: error: --trace: "),
        (["hbm", "--trace", "{bad}", "--model", "llama-3.1-8b"], "junction hbm: error: --trace"),
        (["replay", "{bad}"], "junction replay: error: "),
    ],
)
def test_a_usage_error_exits_2_with_one_line_naming_the_subcommand(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A refused argument or input is the one line, no usage printed above it.
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{bad\n")
    argv = [str(bad) if a == "{bad}" else a for a in argv]
    ended = run_in_process(command.dispatch, argv, capsys)
    assert ended.code == 2 and ended.last_line.startswith(message)
    assert len(ended.err.strip().splitlines()) == 1, ended.err


def test_replay_reaches_the_reference_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    ended = run_in_process(command.dispatch, ["replay", str(bad)], capsys)
    assert ended.code == 2
    assert ended.last_line.startswith("junction replay: error: ")
    assert "neither a scenario nor a fuzz --json report" in ended.last_line


def test_the_console_script_runs_a_benchmark_from_any_folder(tmp_path: Path) -> None:
    """The console script's path starts at its own folder, never the checkout's: the
    package alone is on the path here (a link to it), as an installed one would be."""
    script = Path(sys.executable).parent / "junction"
    if not script.is_file():
        pytest.skip("no junction console script beside this interpreter")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "junction").symlink_to(ROOT / "junction")
    done = subprocess.run(
        [str(script), "bench", "engine", "--help"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ")


def test_bench_knows_every_benchmark_of_the_checkout() -> None:
    files = {p.stem.removeprefix("bench_") for p in (ROOT / "benchmarks").glob("bench_*.py")}
    assert set(command.BENCHMARKS) == files
