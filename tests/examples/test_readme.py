"""Every claim the README prints is checked against what the code and the demo output say.

The README is the first thing a reader trusts, so a claim it prints that no
test checks is a claim that can silently go stale. Three kinds:

* the Python examples: each runs, and each output claim in a comment
  (``print(x)  # ...`` or a ``# -> ...`` line after a print) is parsed and
  checked exactly. A claim no checker recognises fails the test: adding a
  claim means adding its check.
* the demo table: the block after "It prints this table" is
  ``docs/demo/simulate.txt`` verbatim, and the workload it names is the one
  ``docs/demo/simulate.json`` records.
* the figures the prose derives from that table (ratios, differences,
  percentages): each is recomputed from the table.

Rejected: matching claims as substrings of the output (one regex silently
matched nothing, so three of four claims went unchecked).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from junction import kernels
from junction.core import (
    floor_to,
    mamba_block_aligned_split,
    next_grid_point,
    replay_boundary,
)

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DEMO_TXT = ROOT / "docs" / "demo" / "simulate.txt"
DEMO_JSON = ROOT / "docs" / "demo" / "simulate.json"
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
PROSE = " ".join(README.split())  # claims wrap across lines


def output_claims(source: str) -> list[str]:
    """Comments that state printed output: after ``print(...)`` on its line, or ``# ->``."""
    claims = re.findall(r"^print\(.*\)\s+#\s+(.+)$", source, flags=re.MULTILINE)
    claims += re.findall(r"^#\s*->\s*(.+)$", source, flags=re.MULTILINE)
    return claims


def run_block(source: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], list[str]]:
    """Run a README block; returns its namespace (with ``kernel_calls``) and printed lines."""
    calls: list[dict[str, Any]] = []
    real_split = kernels.mamba_block_aligned_split

    def recording_split(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return real_split(**kwargs)

    monkeypatch.setattr(kernels, "mamba_block_aligned_split", recording_split)
    namespace: dict[str, Any] = {"kernel_calls": calls, "__source__": source}
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(source, str(ROOT / "README.md"), "exec"), namespace)
    return namespace, output.getvalue().splitlines()


# Each checker: (pattern of the claim, check(match, namespace, printed lines)).
Check = Callable[[re.Match[str], dict[str, Any], list[str]], None]


def check_hits(claim: re.Match[str], ns: dict[str, Any], printed: list[str]) -> None:
    hit, longest, junction = (int(claim[k]) for k in ("hit", "longest", "junction"))
    hits = ns["hits"]
    assert (hits.hit_length, hits.longest_hit_length, hits.shared_prefix_boundary) == (
        hit,
        longest,
        junction,
    )
    assert printed[0] == repr(hits)
    block = ns["geometry"].groups[1].block_size
    assert hit // block - 1 in ns["mamba_cached"], "the hit is not the Mamba state it names"
    bound = int(re.findall(r"max_hit_length=(\d+)", ns["__source__"])[0])
    assert ns["finders"][0](bound, False) == longest  # what full attention alone finds


def check_step(claim: re.Match[str], ns: dict[str, Any], printed: list[str]) -> None:
    step = int(claim["step"])
    assert printed[1] == str(step) and ns["step"] == step
    assert ns["hits"].hit_length + step == ns["hits"].shared_prefix_boundary  # at the junction


def check_mask(claim: re.Match[str], ns: dict[str, Any], printed: list[str]) -> None:
    mask = eval(printed[2])  # a list of bools, as printed
    junction_block, replay_block = int(claim["junction_block"]), int(claim["replay_block"])
    assert [i for i, keep in enumerate(mask) if keep] == [junction_block, replay_block]
    block = ns["geometry"].groups[1].block_size
    assert (
        (junction_block + 1) * block == int(claim["junction"]) == ns["hits"].shared_prefix_boundary
    )
    replay = floor_to(replay_boundary(200), block)
    assert (replay_block + 1) * block == int(claim["replay"]) == replay


def check_kernel_steps(claim: re.Match[str], ns: dict[str, Any], printed: list[str]) -> None:
    values = [int(v) for v in claim["values"].split(",")]
    assert [line.replace(" ", "") for line in printed] == [f"tensor({values})".replace(" ", "")]
    assert ns["steps"].tolist() == values
    (call,) = ns["kernel_calls"]
    rows = len(values)

    def row(name: str, index: int) -> int:
        value = call[name]
        return int(value[index]) if hasattr(value, "__len__") else int(value)

    names = [
        "num_computed_tokens",
        "num_new_tokens",
        "num_prompt_tokens",
        "num_tokens",
        "block_size",
        "shared_prefix_boundary",
    ]
    for index in range(rows):
        core = mamba_block_aligned_split(**{name: row(name, index) for name in names})
        assert values[index] == core, f"row {index}: kernel {values[index]}, core {core}"
    to_next = int(claim["to_next"])
    (index,) = [i for i, v in enumerate(values) if v == to_next]
    start, block = row("num_computed_tokens", index), row("block_size", index)
    assert start % block and start + to_next == next_grid_point(start, block)


def check_dropin(claim: re.Match[str], ns: dict[str, Any], printed: list[str]) -> None:
    states = [claim[k] == "True" for k in ("installed", "block", "after")]
    assert printed == [" ".join(str(state) for state in states)]
    dropin = ns["dropin"]
    assert not dropin.installed()
    unwrap = lambda attribute: getattr(attribute, "__func__", attribute)  # noqa: E731
    for (owner, name), adapter in dropin.decision_points().items():
        assert unwrap(owner.__dict__[name]) is not unwrap(adapter), f"{owner.__name__}.{name}"


CHECKERS: list[tuple[str, Check]] = [
    (
        r"hit (?P<hit>\d+) \(the Mamba state at (?P=hit)\), longest (?P<longest>\d+) "
        r"\(full attention\): junction (?P<junction>\d+)$",
        check_hits,
    ),
    (
        r"(?P<step>\d+): the chunk stops at the junction so its Mamba state is materialised$",
        check_step,
    ),
    (
        r"True only at block (?P<junction_block>\d+) \(the junction state, (?P<junction>\d+)\) "
        r"and block (?P<replay_block>\d+) \(the replay state, (?P<replay>\d+)\)$",
        check_mask,
    ),
    (
        r"tensor\(\[(?P<values>[\d, ]+)\]\): core's answer for each row "
        r"\((?P<to_next>\d+): to the next block\)$",
        check_kernel_steps,
    ),
    (
        r"(?P<installed>True|False) (?P<block>True|False) (?P<after>True|False): installed, "
        r"swapped in, vLLM's own code after$",
        check_dropin,
    ),
]


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_every_output_claim_of_an_example_is_checked(
    index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = BLOCKS[index]
    if "junction.audit" in source:
        pytest.importorskip("vllm")  # CI installs it (--require-vllm); elsewhere optional
    namespace, printed = run_block(source, monkeypatch)
    claims = output_claims(source)
    assert claims, "a README example that claims no output"
    checked = 0
    for claim in claims:
        matches = [(m, check) for p, check in CHECKERS if (m := re.match(p, claim))]
        assert len(matches) == 1, f"no single checker for the README claim {claim!r}"
        match, check = matches[0]
        check(match, namespace, printed)
        checked += 1
    assert checked == len(claims)


def test_the_examples_carry_the_claims_the_checkers_know() -> None:
    # A block or claim dropped from the README must be noticed too.
    assert sum(len(output_claims(source)) for source in BLOCKS) == len(CHECKERS)


# -- the demo table and the figures derived from it ---------------------------

ROW = re.compile(r"^(?P<policy>\S.*?)\s{2,}(?P<numbers>\d[\d.,%e+\s]*)$")
COLUMNS = ["hit", "sys", "prefill", "saved", "steps", "peak", "final", "evictions", "flops"]


def demo_table() -> str:
    match = re.search(r"It prints this table.*?```\n(.*?)```", README, flags=re.DOTALL)
    assert match, "the README no longer introduces the demo table"
    return match[1]


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


TABLE = parse_table(DEMO_TXT.read_text())
MAMBA, SWA = TABLE["full+mamba"], TABLE["full+swa"]
DENSE, PINNED, UNPINNED = "dense", "R=0 pinned", "R=0 unpinned"


def test_the_readme_prints_the_demo_output_verbatim() -> None:
    assert demo_table() == DEMO_TXT.read_text()


def test_the_workload_the_readme_describes_is_the_one_the_demo_ran() -> None:
    demo = json.loads(DEMO_JSON.read_text())
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
    assert claimed == computed, f"README says {claimed}, the table gives {computed}"
    assert not also or claimed == also, f"README says {claimed}, the table gives {also}"


@pytest.mark.parametrize(
    ("pattern", "check"), PROSE_CLAIMS, ids=[f"claim{i}" for i in range(len(PROSE_CLAIMS))]
)
def test_each_figure_the_prose_derives_from_the_table_is_right(
    pattern: str, check: Callable[[re.Match[str]], None]
) -> None:
    match = re.search(pattern, PROSE)
    assert match, f"the README no longer states {pattern!r}; update this test with it"
    check(match)
