"""Engines' layouts (``reference.replay.layouts``): a budget's pools, and the replay of each.

SGLang's own arithmetic is checked against its functions in
``tests/audit/sglang/test_layouts.py``; here, what holds whatever the engine:
the budget split as the rule says, a state pool apart whose books stay whole
and whose states leave with their KV, and no hit without prefix caching.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from junction.command import dispatch as main
from junction.core import GroupKind, GroupSpec, HybridGeometry
from junction.reference.replay import Point, ReplayPool, ReplayRequest, replay
from junction.reference.replay.config_fields import ModelConfigError
from junction.reference.replay.layouts import Layout, layout_of, sglang_pools
from junction.reference.replay.models import GIB, catalog_fields, memory_model
from junction.reference.replay.stream import hash_trace_requests

TRACE = Path(__file__).resolve().parents[2] / "examples/traces/mooncake-conversation.jsonl.gz"
HYBRIDS = ("qwen3-next-80b-a3b", "nemotron-h-8b")


def _layout(name: str, model: str = "qwen3-next-80b-a3b", **options: float) -> Layout:
    fields = catalog_fields(model)
    return layout_of(name, memory_model(model, fields), fields, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("model", HYBRIDS)
@pytest.mark.parametrize("ratio", [0.9, 0.25, 4.0])
@pytest.mark.parametrize("gib", [8, 24.5, 1024])
def test_sglang_gives_the_states_their_share_and_the_kv_the_rest(
    model: str, ratio: float, gib: float
) -> None:
    layout = _layout("sglang", model, ratio=ratio)
    cell = layout.block_bytes // layout.block_size
    slots, tokens = sglang_pools(gib, layout.slot_bytes, cell, ratio)
    share = gib * GIB * ratio / (1 + ratio)
    # The pool's padding slot is charged with the slots; what is left is KV.
    assert (slots + 1) * layout.slot_bytes <= share < (slots + 2) * layout.slot_bytes
    rest = gib * GIB - (slots + 1) * layout.slot_bytes
    assert tokens * cell <= rest < (tokens + 1) * cell
    pools = layout.pools(gib)
    assert (pools.blocks, pools.state_slots) == (tokens // layout.block_size + 1, slots)


@pytest.mark.parametrize("model", HYBRIDS)
@pytest.mark.parametrize("seqs", [1, 256])
def test_per_request_slot_keeps_a_slot_per_running_request_beside_the_blocks(
    model: str, seqs: int
) -> None:
    layout = _layout("per-request-slot", model, max_num_seqs=seqs)
    vllm = _layout("vllm", model)
    kept = (seqs + 1) * vllm.model.state_bytes * vllm.model.state_layers
    blocks = layout.pools(1024).blocks
    assert blocks * layout.block_bytes <= 1024 * GIB - kept < (blocks + 1) * layout.block_bytes
    assert all(g.kind is not GroupKind.MAMBA for g in layout.groups)
    assert not layout.caching and layout.pools(1024).state_slots is None


def test_per_request_slot_at_32_gib_is_the_hand_computed_figure() -> None:
    """Qwen3-Next at 32 GiB: #3413's ``max_num_reqs + 1`` = 257 slots of vLLM's bf16
    state, 36 layers x ((2 x 16 x 128 + 32 x 128) x 3 conv + 32 x 128 x 128 ssm) x 2 B
    = 39,518,208 B, leave 34,359,738,368 - 257 x 39,518,208 = 24,203,558,912 B; a
    block is 12 layers' pages of 544 tokens x 2 x 2 KV heads x 256 x 2 B = 1,114,112 B,
    13,369,344 B, so 1,810 blocks (1,810.4)."""
    layout = _layout("per-request-slot")
    assert (layout.running_slots, layout.slot_bytes, layout.block_bytes) == (
        257,
        39_518_208,
        13_369_344,
    )
    assert layout.pools(32).blocks == 1_810


def test_the_sglang_replay_charges_the_running_requests_ping_pong_pair(
    tmp_path: Path,
) -> None:
    """SGLang's pool of 5 slots (its least: ``_calculate_mamba_ratio``'s 3 + 2) leaves
    the replay 3 for the running request's state and the cached ones: never more
    than 3 cached."""
    layout = _layout("sglang")
    pools = layout.pools(0.99)
    assert (pools.state_slots, layout.replay_slots(pools)) == (5, 3)
    out = tmp_path / "small.json"
    argv = ["hbm", "--model", "qwen3-next-80b-a3b", "--layout", "sglang", "--hbm", "0.99"]
    assert main([*argv, "--requests", "60", "--json", str(out)]) == 0
    points = json.loads(out.read_text())["points"]
    assert {p["state_slots"] for p in points} == {5}
    assert max(p["retained_peak"][1] for p in points) == 3


@pytest.mark.parametrize(
    ("model", "where", "slot"),
    [
        ("qwen3-next-80b-a3b", None, 77_266_944),
        ("qwen3-next-80b-a3b", "root", 39_518_208),
        ("nemotron-h-8b", "root", 51_806_208),
        ("qwen3-next-80b-a3b", "text_config", 39_518_208),
    ],
)
def test_sglang_reads_mamba_ssm_dtype_of_every_state_model(
    model: str, where: str | None, slot: int
) -> None:
    """SGLang's ``mamba2_state_dtype`` takes the config's ``mamba_ssm_dtype`` (a
    ``text_config``'s first) for every state model, float32 where none is named."""
    fields = catalog_fields(model)
    if where == "root":
        fields = {**fields, "mamba_ssm_dtype": "bfloat16"}
    elif where == "text_config":
        fields = {
            **fields,
            "mamba_ssm_dtype": "float32",
            "text_config": {"mamba_ssm_dtype": "bfloat16"},
        }
    layout = layout_of("sglang", memory_model(model, fields), fields)
    assert layout.slot_bytes == slot


def test_an_ssm_dtype_sglang_does_not_know_is_one_line() -> None:
    fields = {**catalog_fields("qwen3-next-80b-a3b"), "mamba_ssm_dtype": "fp8"}
    model = memory_model("x.json", fields)
    with pytest.raises(ModelConfigError, match=r"x\.json: mamba_ssm_dtype: must be one of"):
        layout_of("sglang", model, fields)


def test_the_vllm_layout_is_the_memory_models() -> None:
    layout = _layout("vllm")
    assert layout.groups == layout.model.groups() and layout.caching
    assert [layout.pools(g).blocks for g in (8, 1024)] == [642, 82_241]


def test_a_state_pool_apart_keeps_its_books_and_no_state_past_its_kv() -> None:
    """Between requests nothing is held, every cached state is a free slot of its own
    pool, and a state whose KV block (the same prefix) was evicted went with it:
    SGLang's cascade from a node's full attention to its state."""
    layout = _layout("sglang")
    geometry = HybridGeometry(layout.groups, layout.block_size)
    requests = hash_trace_requests(TRACE, layout.block_size, 300)
    width = len(geometry.groups)
    seen: list[int] = []

    def check(index: int, pool: ReplayPool) -> None:
        states = pool._states
        assert states is not None and states.held == 0 and pool.held == 0
        assert len(states.free) == pool.count[1] <= states.usable
        assert len(pool.free) == pool.count[0]
        for state in states.free:
            assert state - state % width in pool.cached, (index, state)
        seen.append(pool.evictions)

    # 0.5 GiB: 64 state slots' worth of KV blocks evict, and the states with them.
    point = Point("junction", 0, 60, "lru", 64)
    replay(geometry, requests, [point], observe=check)
    assert seen[-1] > 0


def test_a_state_pool_apart_that_never_fills_hits_as_one_shared_pool() -> None:
    """Neither pool evicting, where a state lives changes no hit."""
    layout = _layout("sglang")
    geometry = HybridGeometry(layout.groups, layout.block_size)
    requests = hash_trace_requests(TRACE, layout.block_size, 200)
    apart = Point("junction", 0, 400_000, "lru", 100_000)
    shared = Point("junction", 0, 500_000, "lru")
    one, two = replay(geometry, requests, [apart, shared], keep_records=True)
    assert one.evictions == two.evictions == 0
    assert [r.hit for r in one.records] == [r.hit for r in two.records]
    assert one.hit_tokens > 0


def test_a_state_slot_per_request_never_hits_where_vllms_pool_does() -> None:
    requests = hash_trace_requests(TRACE, 544, 300)
    found = []
    for name in ("per-request-slot", "vllm"):
        layout = _layout(name)
        geometry = HybridGeometry(layout.groups, layout.block_size)
        point = Point("junction", 0, layout.pools(512).blocks, "lru", None, layout.caching)
        (result,) = replay(geometry, requests, [point])
        found.append(result)
    slot, vllm = found
    assert slot.hit_tokens == slot.evictions == sum(slot.retained_peak) == 0
    assert slot.prefill_tokens_computed == slot.prompt_tokens
    assert vllm.hit_tokens > 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--layout", "tpu"], "argument --layout: invalid choice: 'tpu'"),
        (["--layout", "sglang"], "--layout sglang needs --model or --model-config"),
        (
            ["--model", "llama-3.1-8b", "--layout", "sglang"],
            "llama-3.1-8b: --layout: needs a model with state layers",
        ),
        (
            ["--model", "nemotron-h-8b", "--layout", "sglang", "--evictions", "lru,belady"],
            "--layout sglang: lru eviction only",
        ),
        (
            ["--model", "nemotron-h-8b", "--mamba-full-memory-ratio", "0.5"],
            "--mamba-full-memory-ratio needs --layout sglang",
        ),
        (
            ["--model", "nemotron-h-8b", "--layout", "sglang", "--mamba-full-memory-ratio", "0"],
            "--mamba-full-memory-ratio: '0': must be above 0",
        ),
        (
            ["--model", "nemotron-h-8b", "--layout", "per-request-slot", "--hbm", "16"],
            "--hbm 16 GiB: not one block of this model beside 257 state slots",
        ),
        (
            ["--model", "qwen3-next-80b-a3b", "--layout", "sglang", "--hbm", "0.2,8"],
            "--hbm 0.2 GiB: fewer than 5 state slots, SGLang serves none",
        ),
        (
            ["--model", "nemotron-h-8b", "--layout", "sglang", "--hbm", "1.1,8"],
            "--hbm 1.1 GiB: fewer than 5 state slots, SGLang serves none",
        ),
    ],
    ids=[
        "unknown",
        "no-model",
        "no-states",
        "belady",
        "ratio-alone",
        "ratio-0",
        "too-small",
        "too-few-slots",
        "four-slots",
    ],
)
def test_a_layout_the_run_cannot_take_is_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        raise SystemExit(main(["hbm", "--requests", "5", *argv]))
    assert exit_.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert message in line, line


def test_each_layout_runs_and_says_so_in_its_json(tmp_path: Path) -> None:
    for name in ("sglang", "per-request-slot"):
        out = tmp_path / f"{name}.json"
        argv = ["hbm", "--model", "qwen3-next-80b-a3b", "--requests", "30", "--hbm", "64"]
        assert main([*argv, "--layout", name, "--json", str(out)]) == 0
        document = out.read_text()
        assert f'"layout": "{name}"' in document
        assert ('"state_slots": 420' in document) is (name == "sglang")


def test_a_state_pool_apart_on_an_all_mamba_model_leaves_the_blocks_unused() -> None:
    """Every group a Mamba one, its states in a pool of their own: no group takes a
    block, so every request fits whatever the blocks (no longest request)."""
    geometry = HybridGeometry([GroupSpec.mamba(16), GroupSpec.mamba(16)], 16)
    stream = [ReplayRequest(64, 4, [1, 2, 3, 4]), ReplayRequest(80, 4, [1, 2, 3, 4, 5])]
    small, large = (
        replay(geometry, stream, [Point("junction", None, n, state_slots=4)])[0] for n in (2, 99)
    )
    assert small.refused == 0 and small.hit_tokens == 64  # the first request's state
    assert attrs.evolve(large, point=small.point) == small
