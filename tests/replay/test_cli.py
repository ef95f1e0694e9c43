"""``junction hbm``: the table, the JSON and the plot."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from junction.command import dispatch as main


def test_replay_prints_the_table_and_writes_every_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "points.json"
    argv = ["hbm", "--requests", "60", "--pools", "600,3000", "--evictions", "lru,belady"]
    assert main([*argv, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "hit rate, lru eviction; pool in blocks:" in printed
    assert "hit rate, belady eviction" in printed
    points = json.loads(out.read_text())["points"]
    assert len(points) == 4 * 2 * 2  # variants x pools x evictions
    assert {p["eviction"] for p in points} == {"lru", "belady"}
    assert all(p["requests"] + p["refused"] == 60 for p in points)


def test_replay_draws_the_curve(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / "curve.png"
    argv = ["hbm", "--requests", "30", "--pools", "600,3000", "--evictions", "lru,belady"]
    assert main([*argv, "--plot", str(plot)]) == 0
    assert plot.stat().st_size > 0


def test_a_bad_pool_list_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["hbm", "--pools", "1,x"])
    assert "expected integers" in capsys.readouterr().err


def test_jobs_share_the_points_and_change_no_number(tmp_path: Path) -> None:
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    argv = ["hbm", "--requests", "40", "--pools", "600,3000", "--evictions", "lru,fifo"]
    assert main([*argv, "--json", str(one)]) == 0
    assert main([*argv, "--jobs", "2", "--json", str(two)]) == 0
    assert json.loads(one.read_text()) == json.loads(two.read_text())


def test_progress_and_the_run_time_go_to_standard_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "points.json"
    assert main(["hbm", "--requests", "40", "--pools", "600", "--json", str(out)]) == 0
    printed = capsys.readouterr()
    assert "160/160" in printed.err  # 40 requests x 4 variants, every one told
    assert re.search(r"junction hbm: ran in \d+\.\d s\n$", printed.err), printed.err
    assert "160/160" not in printed.out and "ran in" not in printed.out
    assert len(json.loads(out.read_text())["points"]) == 4


def test_answers_keyed_as_the_next_turn_resends_them_are_counted_and_hit_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["hbm", "--requests", "300", "--model", "llama-3.1-8b", "--hbm", "8"]
    fresh, continued = tmp_path / "fresh.json", tmp_path / "continued.json"
    assert main([*argv, "--json", str(fresh)]) == 0
    assert "answers keyed" not in capsys.readouterr().out
    assert main([*argv, "--answers", "continuations", "--json", str(continued)]) == 0
    assert "answers keyed as the next turn resends them: 44 of 300" in capsys.readouterr().out
    before, after = (json.loads(path.read_text()) for path in (fresh, continued))
    assert (before["answers"], before["answers_matched"]) == ("fresh", None)
    assert (after["answers"], after["answers_matched"]) == ("continuations", 44)
    rates = [[p["token_hit_rate"] for p in doc["points"]] for doc in (before, after)]
    assert all(b < a for b, a in zip(*rates, strict=True))


@pytest.mark.whole_trace
@pytest.mark.parametrize(
    ("model", "refused"),
    [("llama-3.1-8b", [1_525, 78, 0, 0, 0, 0]), ("qwen3-8b", [1_808, 113, 0, 0, 0, 0])],
)
def test_the_lru_curve_does_not_fall_as_the_budget_grows(
    tmp_path: Path, model: str, refused: list[int]
) -> None:
    """The whole trace at 3 to 200 GiB: small pools refuse long requests, which count
    as misses, so the curve cannot rise for serving fewer of them."""
    out = tmp_path / "points.json"
    argv = ["hbm", "--model", model, "--hbm", "3,12,20,48,96,200", "--json", str(out)]
    assert main(argv) == 0
    points = json.loads(out.read_text())["points"]
    for variant in {(p["policy"], p["retention_interval"]) for p in points}:
        row = sorted(
            (p["pool"], p["refused"], p["token_hit_rate"])
            for p in points
            if (p["policy"], p["retention_interval"]) == variant
        )
        assert [n for _, n, _ in row] == refused
        rates = [rate for _, _, rate in row]
        assert rates == sorted(rates), (variant, rates)


@pytest.mark.parametrize(
    ("choice", "header"),
    [
        ([], "blocks of 1040 tokens"),  # vLLM's own: Nemotron-H's SSM state in float32
        (["--state-dtype", "bfloat16"], "blocks of 528 tokens"),
        (["--kv-dtype", "fp8"], "KV cache fp8"),
    ],
    ids=["auto", "bf16-state", "fp8-kv"],
)
def test_the_dtype_options_reach_the_layout(
    choice: list[str], header: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["hbm", "--model", "nemotron-h-8b", "--hbm", "3", "--requests", "5", *choice]
    assert main(argv) == 0
    assert header in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--kv-dtype", "fp8"], "--kv-dtype and --state-dtype need --model or --model-config"),
        (
            ["--model", "nemotron-h-8b", "--kv-dtype", "float16"],
            "nemotron-h-8b: --kv-dtype: must be auto or bfloat16, the dtype vLLM runs the model",
        ),
    ],
    ids=["no-model", "not-the-weights-dtype"],
)
def test_a_dtype_the_layout_cannot_take_is_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["hbm", "--requests", "5", *argv]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert message in line


def test_ttft_and_what_prefill_saves_equal_simulates_at_two_budgets(tmp_path: Path) -> None:
    # Each request alone in the engine: simulate --arrivals sequential, the same chunking.
    trace = str(
        Path(__file__).resolve().parents[2] / "examples/traces/mooncake-conversation.jsonl.gz"
    )
    common = ["--trace", trace, "--requests", "150", "--chunk", "256", "--interval", "2176"]
    points = tmp_path / "hbm.json"
    assert main(["hbm", *common, "--pools", "2000,16000", "--json", str(points)]) == 0
    replayed = {
        (p["policy"], p["retention_interval"], p["pool_blocks"]): p
        for p in json.loads(points.read_text())["points"]
    }
    for pool in (2000, 16000):
        out = tmp_path / f"simulate-{pool}"
        argv = ["simulate", *common, "--geometry", "qwen3-next", "--arrivals", "sequential"]
        assert main([*argv, "--blocks", str(pool), "--out", str(out), "--no-plot"]) == 0
        for run in json.loads((out / "simulate.json").read_text())["runs"]:
            point = replayed[(run["policy"], run["retention_interval"], pool)]
            ours, theirs = point["ttft_ms"], run["ttft_ms"]  # sums in another order: approx
            assert ours["percentiles"] == pytest.approx(theirs["percentiles"], rel=1e-9)
            assert ours["mean"] == pytest.approx(theirs["mean"], rel=1e-9), run["label"]
            assert point["prefill_flops_saved"] == run["prefill_flops_saved"]
            computed = point["served_prompt_tokens"] - point["prefill_tokens_saved"]
            assert computed == run["prefill_tokens_computed"]
