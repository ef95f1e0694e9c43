"""Every Python example of the README and docs/usage.md runs, and every output claim is checked.

Each output claim in a comment (``print(x)  # ...`` or a ``# -> ...`` line
after a print) is parsed and checked exactly; a claim no checker recognises
fails the test, so adding a claim means adding its check. A block that
claims no output must assert something. The results and the figures derived
from them are ``test_results.py``'s.
"""

from __future__ import annotations

import contextlib
import io
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
DOCUMENTS = ("README.md", "docs/usage.md")
BLOCKS = [
    (name, block)
    for name in DOCUMENTS
    for block in re.findall(r"```python\n(.*?)```", (ROOT / name).read_text(), flags=re.DOTALL)
]


def output_claims(source: str) -> list[str]:
    """Comments that state printed output: after ``print(...)`` on its line, or ``# ->``."""
    claims = re.findall(r"^print\(.*\)\s+#\s+(.+)$", source, flags=re.MULTILINE)
    claims += re.findall(r"^#\s*->\s*(.+)$", source, flags=re.MULTILINE)
    return claims


def run_block(
    name: str, source: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], list[str]]:
    """Run a document's block; returns its namespace (with ``kernel_calls``) and printed lines."""
    calls: list[dict[str, Any]] = []
    real_split = kernels.mamba_block_aligned_split

    def recording_split(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return real_split(**kwargs)

    monkeypatch.setattr(kernels, "mamba_block_aligned_split", recording_split)
    namespace: dict[str, Any] = {"kernel_calls": calls, "__source__": source}
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(source, str(ROOT / name), "exec"), namespace)
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
    step, start, end = (int(claim[k]) for k in ("step", "start", "end"))
    assert printed[1] == str(step) and ns["step"] == step == end - start
    assert (start, end) == (ns["hits"].hit_length, ns["hits"].shared_prefix_boundary)


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
        r"(?P<step>\d+) tokens: the chunk \[(?P<start>\d+), (?P<end>\d+)\) ends at the junction, "
        r"so its Mamba state is saved$",
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


@pytest.mark.parametrize(
    ("name", "source"), BLOCKS, ids=[f"{name}-block{i}" for i, (name, _) in enumerate(BLOCKS)]
)
def test_every_output_claim_of_an_example_is_checked(
    name: str, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "junction.audit" in source or "junction import dropin" in source:
        pytest.importorskip("vllm")  # CI installs it (--require-vllm); elsewhere optional
    namespace, printed = run_block(name, source, monkeypatch)
    claims = output_claims(source)
    if not claims:
        assert re.search(r"^assert ", source, flags=re.MULTILINE), f"{name}: claims nothing"
        return
    checked = 0
    for claim in claims:
        matches = [(m, check) for p, check in CHECKERS if (m := re.match(p, claim))]
        assert len(matches) == 1, f"no single checker for the README claim {claim!r}"
        match, check = matches[0]
        check(match, namespace, printed)
        checked += 1
    assert checked == len(claims)


def test_the_examples_carry_the_claims_the_checkers_know() -> None:
    # A block or claim dropped from the documents must be noticed too.
    assert sum(len(output_claims(source)) for _, source in BLOCKS) == len(CHECKERS)
