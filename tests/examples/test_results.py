"""Every result docs/results.md shows is what a command wrote, and every figure is recomputed.

* a fenced block after ``<!-- output: PATH -->`` is PATH verbatim
  (``make results`` copies them in: ``junction results``);
* the workload the prose describes is the one ``docs/demo/simulate.json``
  records;
* the figures the prose derives from the demo table (ratios, differences,
  percentages): each is recomputed from the table.

Rejected: matching claims as substrings of the output (one regex silently
matched nothing, so three of four claims went unchecked).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from junction.reference.cli.results import generated_blocks, refresh

ROOT = Path(__file__).resolve().parents[2]
RESULTS = (ROOT / "docs" / "results.md").read_text()
PROSE = " ".join(RESULTS.split())  # claims wrap across lines
DEMO = "docs/demo/simulate.txt"
DEMO_JSON = "docs/demo/simulate.json"
TRACE_TABLES = [
    f"docs/demo-trace/{preset}/simulate.txt"
    for preset in ("gpt-oss", "gemma3", "nemotron-h", "qwen3-next")
]

# -- the demo table and the figures derived from it ---------------------------

ROW = re.compile(r"^(?P<policy>\S.*?)\s{2,}(?P<numbers>\d[\d.,%e+\s]*)$")
COLUMNS = ["hit", "sys", "prefill", "saved", "steps", "peak", "final", "evictions", "flops"]


def demo_table() -> str:
    shown = dict(generated_blocks(RESULTS))
    assert DEMO in shown, f"docs/results.md no longer shows {DEMO}"
    return shown[DEMO]


def parse_table(text: str) -> dict[str, dict[str, dict[str, float]]]:
    """``{geometry: {policy: {column: value}}}`` of the hit-rate tables (``saved`` as a share).

    The sections after them (the step-time model's line, the modelled times)
    are not hit-rate tables and are skipped.
    """
    tables: dict[str, dict[str, dict[str, float]]] = {}
    for section in text.strip().split("\n\n"):
        lines = section.splitlines()
        if len(lines) < 2 or lines[1].split()[:3] != ["policy", "hit", "rate"]:
            continue
        title, _, *rows = lines
        table = tables.setdefault(title.split(":")[0], {})
        for line in rows:
            row = ROW.match(line)
            assert row, line
            numbers = [
                float(n.rstrip("%").replace(",", "")) / (100 if n.endswith("%") else 1)
                for n in row["numbers"].split()
            ]
            table[row["policy"]] = dict(zip(COLUMNS, numbers, strict=True))
    return tables


TABLE = parse_table((ROOT / DEMO).read_text())
MAMBA, SWA = TABLE["full+mamba"], TABLE["full+swa"]
DENSE, PINNED, UNPINNED = "dense", "R=0 pinned", "R=0 unpinned"


def test_every_generated_block_is_its_file_verbatim() -> None:
    blocks = generated_blocks(RESULTS)
    assert {DEMO, *TRACE_TABLES} <= {path for path, _ in blocks}
    for path, shown in blocks:
        assert shown == (ROOT / path).read_text(), f"{path}: run `make results`"
    assert refresh(RESULTS, ROOT) == RESULTS


def test_refresh_rewrites_a_stale_block_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("new table\n")
    stale = "# T\n\n<!-- output: out.txt -->\n```\nold table\n```\n\nprose\n"
    assert generated_blocks(stale) == [("out.txt", "old table\n")]
    assert refresh(stale, tmp_path) == stale.replace("old table", "new table")


def test_the_workload_the_readme_describes_is_the_one_the_demo_ran() -> None:
    demo = json.loads((ROOT / DEMO_JSON).read_text())
    workload, settings = demo["workload"], demo["settings"]
    match = re.search(
        r"(?P<sessions>\d+) sessions of (?P<turns>\d+) turns, (?P<open>\d+) sessions open at a "
        r"time, every session starting with the same (?P<system>[\d,]+)-token system prompt",
        PROSE,
    )
    assert match
    assert int(match["sessions"]) == workload["sessions"]
    assert int(match["sessions"]) * int(match["turns"]) == workload["requests"]
    assert int(match["open"]) == settings["concurrency"]
    assert int(match["system"].replace(",", "")) == workload["system_prompt_tokens"]
    assert "interval R=256" in TABLE["full+mamba"] and settings["interval"] == 256
    sweep = re.search(r"sweeps the retention interval `R` over ([\d, and]+) tokens", PROSE)
    assert sweep
    assert [int(r) for r in re.findall(r"\d+", sweep[1])] == [0, *settings["intervals"]]


def _pair(match: re.Match[str], first: int) -> tuple[float, float]:
    return float(match[first]), float(match[first + 1])


PROSE_CLAIMS: list[tuple[str, Callable[[re.Match[str]], None]]] = [
    (
        r"pinned policy reuses the system prompt as dense retention does \((\d\.\d+) vs "
        r"(\d\.\d+) with Mamba, (\d\.\d+) vs (\d\.\d+) with sliding window\)",
        lambda m: (
            _check_equal(_pair(m, 1), (MAMBA[PINNED]["sys"], MAMBA[DENSE]["sys"])),
            _check_equal(_pair(m, 3), (SWA[PINNED]["sys"], SWA[DENSE]["sys"])),
        ),
    ),
    (
        r"holding (\d+\.\d)x fewer Mamba blocks and (\d+\.\d)x fewer sliding-window blocks",
        lambda m: _check_equal(
            _pair(m, 1),
            tuple(
                round(t[DENSE][column] / t[PINNED][column], 1)
                for t in (MAMBA, SWA)
                for column in ("final",)
            ),
            also=tuple(round(t[DENSE]["peak"] / t[PINNED]["peak"], 1) for t in (MAMBA, SWA)),
        ),
    ),
    (
        r"Without pinning the system-prompt hit rate drops to (\d\.\d+)",
        lambda m: _check_equal(
            (float(m[1]), float(m[1])), (MAMBA[UNPINNED]["sys"], SWA[UNPINNED]["sys"])
        ),
    ),
    (
        r"prefill grows by (\d+)-(\d+)%",
        lambda m: _check_equal(
            _pair(m, 1),
            tuple(
                sorted(
                    round(100 * (t[UNPINNED]["prefill"] / t[PINNED]["prefill"] - 1))
                    for t in (MAMBA, SWA)
                )
            ),
        ),
    ),
    (
        r"Pinning trails dense by (\d\.\d+)",
        lambda m: _check_equal(
            (float(m[1]), float(m[1])),
            tuple(round(t[DENSE]["sys"] - t[PINNED]["sys"], 3) for t in (MAMBA, SWA)),
        ),
    ),
]


def _check_equal(
    claimed: tuple[float, ...], computed: tuple[float, ...], also: tuple[float, ...] = ()
) -> None:
    assert claimed == computed, f"results.md says {claimed}, the table gives {computed}"
    assert not also or claimed == also, f"results.md says {claimed}, the table gives {also}"


@pytest.mark.parametrize(
    ("pattern", "check"), PROSE_CLAIMS, ids=[f"claim{i}" for i in range(len(PROSE_CLAIMS))]
)
def test_each_figure_the_prose_derives_from_the_table_is_right(
    pattern: str, check: Callable[[re.Match[str]], None]
) -> None:
    match = re.search(pattern, PROSE)
    assert match, f"docs/results.md no longer states {pattern!r}; update this test with it"
    check(match)
