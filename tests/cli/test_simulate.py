"""``junction simulate``: the numbers, the outputs, traces, and its errors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from junction.command import dispatch as main
from junction.reference.simulator.result import RunResult
from junction.reference.simulator.run import Settings, simulate
from junction.reference.simulator.variants import Variant, table_variants
from junction.reference.simulator.workload import builtin_workload
from junction.reference.workloads.trace import TraceError, parse_trace

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_TRACE = ROOT / "examples" / "trace.jsonl"

# Sessions one after another, prefill in one chunk: every number is exact.
TINY = ["--sessions", "6", "--turns", "2", "--system-prompt", "300", "--concurrency", "1"]
TINY += ["--chunk", "0", "--intervals", "256"]


def run(argv: list[str], out: Path) -> dict[str, Any]:
    # In this process: worker processes give the same report (test_simulate_arrivals) and
    # would only add their start-up to every test here.
    jobs = [] if "--jobs" in argv else ["--jobs", "1"]
    assert main(["simulate", *argv, *jobs, "--out", str(out)]) == 0
    report: dict[str, Any] = json.loads((out / "simulate.json").read_text())
    return report


def by_label(report: dict[str, Any], geometry: str) -> dict[str, dict[str, Any]]:
    return {r["label"]: r for r in report["runs"] if r["geometry"] == geometry}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    out = tmp_path_factory.mktemp("tiny")
    report = run([*TINY, "--no-plot"], out)
    return report, (out / "simulate.txt").read_text()


@pytest.mark.parametrize("geometry", ["full+mamba", "full+swa"])
def test_pinning_keeps_the_system_prompt_with_few_sparse_blocks(
    tiny: tuple[dict[str, Any], str], geometry: str
) -> None:
    report, _ = tiny
    runs = by_label(report, geometry)
    dense, pinned, unpinned = runs["dense"], runs["R=0 pinned"], runs["R=0 unpinned"]
    requests = report["workload"]["requests"]
    # At most the first request to see the system prompt a second time pays
    # (it leaves the junction state); dense may have cached a state there already.
    assert pinned["system_prompt_hit_rate"] >= dense["system_prompt_hit_rate"] - 1 / requests
    assert pinned["sparse_retained_peak"] < dense["sparse_retained_peak"]
    # Without pinning no session but the first reuses the system prompt on its first turn.
    assert unpinned["system_prompt_hit_rate"] == 0.5
    assert unpinned["token_hit_rate"] < pinned["token_hit_rate"]
    assert unpinned["prefill_tokens_computed"] > pinned["prefill_tokens_computed"]
    for run_ in runs.values():
        assert run_["evictions"] == 0
        assert run_["hit_tokens"] <= run_["lookup_tokens"]
        sparse = [g for g in run_["groups"] if g["kind"] != "full"]
        assert run_["sparse_retained_peak"] == sum(g["retained_peak"] for g in sparse)


def test_full_mamba_pinned_matches_dense_exactly(tiny: tuple[dict[str, Any], str]) -> None:
    runs = by_label(tiny[0], "full+mamba")
    assert runs["R=0 pinned"]["system_prompt_hit_rate"] == runs["dense"]["system_prompt_hit_rate"]


def test_report_holds_the_table_and_the_sweep(tiny: tuple[dict[str, Any], str]) -> None:
    report, table = tiny
    assert report["table"] == ["dense", "interval R=256", "R=0 unpinned", "R=0 pinned"]
    labels = {(r["geometry"], r["label"]) for r in report["runs"]}
    assert ("full+swa", "pinned R=256") in labels  # the sweep's extra point
    assert report["workload"]["requests"] == 12
    assert report["workload"]["system_prompt_tokens"] == 300
    for geometry in ("full+mamba", "full+swa"):
        assert f"{geometry}: full attention" in table
    # one line in each geometry's table and one in its times
    assert table.count("R=0 pinned") == 4 and "pinned R=256" not in table


def test_prints_the_table_and_progress_and_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--sessions", "2", "--turns", "1", "--system-prompt", "64"]
    argv += ["--geometry", "full+swa", "--intervals", "64", "--interval", "64"]
    run([*argv, "--jobs", "1"], tmp_path)  # in this process: the last run's label is known
    captured = capsys.readouterr()
    assert "R=0 pinned" in captured.out and "sparse peak" in captured.out
    assert captured.out == (tmp_path / "simulate.txt").read_text()  # the table and nothing else
    # the progress line counts requests: 5 runs of 2
    assert "10/10" in captured.err and "full+swa pinned R=64 done" in captured.err
    assert "times are modelled, not measured" in captured.out
    for name in ("simulate.png", "simulate-ttft.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_simulate_reports_every_run_as_it_ends() -> None:
    workload = builtin_workload(0, sessions=2, turns=1, system_prompt_tokens=64)
    settings = Settings(
        num_blocks=1000,
        max_num_batched_tokens=512,
        chunk_tokens=0,
        use_eagle=False,
        concurrency=1,
        seed=0,
    )
    heard: list[RunResult] = []
    results = simulate(workload, ["full+swa"], table_variants(64), settings, heard.append)
    assert heard == results and [r.variant.label for r in heard] == [
        "dense",
        "interval R=64",
        "R=0 unpinned",
        "R=0 pinned",
    ]


@pytest.mark.parametrize(
    ("policy", "interval", "message"),
    [
        ("nosuch", 0, "policy='nosuch': must be a registered policy or module:attribute"),
        ("dense", 0, "retention_interval=0: must be None for dense"),
        ("junction", -1, "retention_interval=-1: must be an int >= 0"),
        ("interval", None, "retention_interval=None: must be an int >= 0"),
    ],
)
def test_a_variant_is_a_registered_policy_at_an_interval(
    policy: str, interval: int | None, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Variant(policy, interval)
    assert Variant(policy="junction", retention_interval=0).make_policy().name == "junction"
    assert Variant("vllm-0.33", 0).label == "vllm-0.33 R=0"  # any registered policy is a row


def test_eagle_and_pool_pressure_run(tmp_path: Path) -> None:
    argv = ["--sessions", "4", "--turns", "2", "--system-prompt", "200", "--eagle"]
    argv += ["--blocks", "200", "--geometry", "full+swa+mamba", "--intervals", "128", "--no-plot"]
    argv += ["--interval", "128"]
    report = run(argv, tmp_path)
    assert report["settings"]["use_eagle"] is True
    assert any(r["evictions"] > 0 for r in report["runs"])


def test_eviction_under_pressure_is_reported_with_the_flops_saved(tmp_path: Path) -> None:
    argv = ["--sessions", "4", "--turns", "2", "--system-prompt", "200", "--no-plot"]
    argv += ["--blocks", "200", "--geometry", "full+swa+mamba", "--intervals", "none"]
    reports = {
        name: run([*argv, "--eviction", name], tmp_path / name) for name in ("lru", "flop-aware")
    }
    for name, report in reports.items():
        assert report["settings"]["eviction"] == name
        assert all(r["eviction"] == name for r in report["runs"])
        assert any(r["evictions"] > 0 for r in report["runs"])
        assert any(r["prefill_flops_saved"] > 0 for r in report["runs"])
        table = (tmp_path / name / "simulate.txt").read_text()
        assert "FLOPs saved" in table and f"eviction: {name};" in table


def test_replays_the_example_trace(tmp_path: Path) -> None:
    argv = ["--trace", str(EXAMPLE_TRACE), "--concurrency", "1", "--no-plot"]
    argv += ["--intervals", "256"]
    report = run(argv, tmp_path)
    assert report["workload"]["requests"] == 8 and report["workload"]["sessions"] == 4
    runs = by_label(report, "full+mamba")
    assert runs["R=0 pinned"]["token_hit_rate"] > runs["R=0 unpinned"]["token_hit_rate"]


def test_a_pool_too_small_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--sessions", "1", "--turns", "1", "--blocks", "4", "--no-plot"]
    assert main([*argv, "--out", str(tmp_path)]) == 1
    assert "request 0 (" in (err := capsys.readouterr().err) and "use more --blocks" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sessions", "0"], "argument --sessions: 0 must be >= 1"),
        (["--blocks", "many"], "argument --blocks: 'many' is not an int"),
        (["--geometry", "mamba"], "unknown geometry 'mamba'"),
        (["--interval", "100"], "--interval 100: must be a multiple of the scheduler block L=64"),
        (["--intervals", "64,x"], "argument --intervals: 'x' is not an int"),
        (["--intervals", "16", "--geometry", "full+mamba"], "--intervals 16: must be a multiple"),
        (["--trace", "/nonexistent/t.jsonl"], "--trace: /nonexistent/t.jsonl:0: cannot read"),
        (["--eviction", "lfu"], "argument --eviction: invalid choice: 'lfu'"),
    ],
)
def test_bad_options_exit_2_naming_the_option(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["simulate", *argv])
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_malformed_trace_exits_2_naming_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"prompt": [1, 2]}\n\n{"prompt": [1, 2], "output_tokens": 0}\n')
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--trace", str(trace), "--out", str(tmp_path)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"{trace}:3: field 'output_tokens': must be an int in [1, 1,048,576], got 0" in err


@pytest.mark.parametrize(
    ("line", "field", "problem"),
    [
        ('{"prompt": [1, 2', None, "not valid JSON"),
        ("[1, 2]", None, "must be a JSON object, got list"),
        ('{"output_tokens": 3}', "prompt", "missing"),
        ('{"prompt": "1 2 3"}', "prompt", "must be a list of token ids, got str"),
        ('{"prompt": []}', "prompt", "must not be empty"),
        ('{"prompt": [1, -1]}', "prompt", "element 1 is -1; token ids must be in [0, 2**31)"),
        ('{"prompt": [1, 2147483648]}', "prompt", "element 1 is 2147483648"),
        ('{"prompt": [1, 2.5]}', "prompt", "element 1 is 2.5; token ids must be ints"),
        ('{"prompt": [true]}', "prompt", "element 0 is True; token ids must be ints"),
        ('{"prompt": [1], "output_tokens": "8"}', "output_tokens", "must be an int in [1, "),
        ('{"prompt": [1], "session": [1]}', "session", "must be a string or an int"),
        ('{"prompt": [1], "promt": [1]}', "promt", "unknown field"),
    ],
)
def test_trace_errors_name_line_and_field(line: str, field: str | None, problem: str) -> None:
    text = '{"prompt": [5, 6], "session": "a"}\n' + line + "\n"
    with pytest.raises(TraceError) as info:
        parse_trace(text, "t.jsonl")
    assert info.value.line == 2 and info.value.field == field
    message = str(info.value)
    assert message.startswith("t.jsonl:2: " + (f"field {field!r}: " if field else ""))
    assert problem in message


def test_trace_sessions_and_defaults() -> None:
    requests = parse_trace(
        '{"prompt": [1]}\n\n{"prompt": [1, 2], "session": 7, "output_tokens": 3}'
    )
    assert [(r.line, r.prompt, r.output_tokens, r.session) for r in requests] == [
        (1, (1,), 16, None),
        (3, (1, 2), 3, 7),
    ]
    with pytest.raises(TraceError, match=r"t\.jsonl:1: the trace has no requests"):
        parse_trace("\n \n", "t.jsonl")


def test_the_results_show_the_demo_table_that_make_demo_wrote() -> None:
    table = (ROOT / "docs" / "demo" / "simulate.txt").read_text()
    assert table in (ROOT / "docs" / "results.md").read_text()
    report = json.loads((ROOT / "docs" / "demo" / "simulate.json").read_text())
    pinned = by_label(report, "full+mamba")["R=0 pinned"]
    assert f"{pinned['token_hit_rate']:.3f}" in table
    assert (ROOT / "docs" / "demo" / "simulate.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("preset", ["gpt-oss", "gemma3", "nemotron-h", "qwen3-next"])
def test_the_results_show_the_trace_tables_that_make_demo_trace_wrote(preset: str) -> None:
    folder = ROOT / "docs" / "demo-trace" / preset
    assert (folder / "simulate.txt").read_text() in (ROOT / "docs" / "results.md").read_text()
    report = json.loads((folder / "simulate.json").read_text())
    assert report["settings"]["arrivals"] == "trace"
    assert report["workload"]["requests"] == 4000  # the Makefile's TRACE_REQUESTS
    makefile = (ROOT / "Makefile").read_text()
    assert "TRACE_REQUESTS ?= 4000" in makefile and "TRACE_POOL ?= 0.5" in makefile
    for name in ("simulate.png", "simulate-ttft.png"):
        assert (folder / name).read_bytes()[:4] == b"\x89PNG"


def test_the_results_show_the_whole_trace_rows_of_its_report() -> None:
    report = json.loads((ROOT / "docs" / "demo-trace" / "gpt-oss-whole-trace.json").read_text())
    assert report["workload"]["requests"] == 12_031
    readme = (ROOT / "docs" / "results.md").read_text()
    for run in report["runs"]:
        ttft = run["ttft_ms"]
        row = (
            f"| {run['label']} | {run['token_hit_rate']:.3f} | "
            f"{run['prefill_tokens_computed']:,} | {run['prefill_saved_share']:.0%} | "
            f"{run['sparse_retained_peak']:,} | {run['evictions']:,} | {round(ttft['p50']):,} | "
            f"{round(ttft['p90']):,} | {round(ttft['p99']):,} | {round(run['queue_ms']['p90']):,} |"
        )
        assert row in readme
