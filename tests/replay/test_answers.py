"""Answers keyed as the next turn resends them (``stream.answered_requests``) equal the
reference engine running the same requests with those answers scripted
(``simulator.workload.hash_trace_workload(answers_from_continuations=True)``),
request by request: the first 150 requests of the Mooncake conversation trace, and a
partial block its continuation's blocks finish with another id."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from junction.command import dispatch as main
from junction.core import GroupSpec, HybridGeometry
from junction.reference.cli import inputs
from junction.reference.replay.stream import answered_requests, replay_requests
from junction.reference.simulator.workload import hash_trace_workload
from junction.reference.workloads.mooncake import HashTraceRequest, parse_hash_trace

from .engine_side import assert_equal, engine_records, replay_records

TRACE = Path(__file__).resolve().parents[2] / "examples/traces/mooncake-conversation.jsonl.gz"
GEOMETRY = HybridGeometry([GroupSpec.full(16)], 16)  # Llama 3.1 8B's blocks


def _both_sides(requests: list[HashTraceRequest], pool: int) -> tuple[int, int]:
    """Assert the replay keying answers equals the engine scripting them; the hit
    tokens with answers keyed, then with every answer keyed afresh."""
    turns = hash_trace_workload("trace", requests, answers_from_continuations=True).turns
    found = replay_records(GEOMETRY, "dense", pool, "lru", 2048, answered_requests(turns, 16))
    prompts = [(turn.prompt, turn.max_output_tokens) for turn in turns]
    answers = [turn.answer for turn in turns]
    assert_equal(engine_records(GEOMETRY, "dense", pool, "lru", 2048, prompts, answers), found)
    fresh = replay_records(GEOMETRY, "dense", pool, "lru", 2048, replay_requests(requests, 16))
    return sum(r.hit for r in found[0]), sum(r.hit for r in fresh[0])


def test_keyed_answers_equal_the_engine_on_the_trace() -> None:
    requests = parse_hash_trace(gzip.decompress(TRACE.read_bytes()).decode(), str(TRACE))
    first = sorted(requests, key=lambda r: r.timestamp)[:150]  # stable: file order on ties
    answered, fresh = _both_sides(first, 8_000)  # a pool that evicts (123,698 blocks)
    assert (answered, fresh) == (85_296, 76_288)


def test_a_partial_block_finished_by_another_id_is_keyed_as_the_engine_builds_it() -> None:
    """D's partial block 2 is rebuilt as E's block 3; R's partial block 9 as C's block
    2, so as 3 in turn, while R's answer is C's tokens after it, of block 2: one block
    of two ids. Its twin R' computes the same block, which the pool already holds."""

    def request(at: int, length: int, output: int, ids: list[int]) -> HashTraceRequest:
        return HashTraceRequest(at + 1, at, length, output, tuple(ids))

    answered, fresh = _both_sides(
        [
            request(0, 612, 30, [1, 2]),  # D
            request(1, 1024, 1, [1, 3]),  # E, D's continuation
            request(2, 612, 50, [5, 9]),  # R
            request(3, 612, 50, [5, 9]),  # R', R's twin
            request(4, 1536, 1, [5, 2, 7]),  # C, R's continuation (and R''s)
        ],
        200,
    )
    assert (answered, fresh) == (1760, 1632)  # E resends D's answer: 128 tokens more


def test_the_memory_check_counts_the_answers_units(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R (600 tokens, 1,000 out) is answered by C (2,000 tokens): 37 + 125 prompt units
    of 16 tokens, and R's answer keys the 63 units up to its 1,600th token."""
    trace = tmp_path / "two.jsonl"
    rows = [(600, 1000, [1, 2]), (2000, 1, [1, 3, 4, 5])]
    trace.write_text(
        "".join(
            json.dumps({"timestamp": t, "input_length": n, "output_length": o, "hash_ids": ids})
            + "\n"
            for t, (n, o, ids) in enumerate(rows)
        )
    )
    sizes: list[inputs.ReplaySize] = []

    def stop(option: str, size: inputs.ReplaySize, unit: int) -> None:
        sizes.append(size)
        raise inputs.InputError("stopped")

    monkeypatch.setattr(inputs, "check_replay_memory", stop)
    argv = ["hbm", "--trace", str(trace), "--model", "llama-3.1-8b", "--hbm", "8"]
    assert main(argv) == 2
    assert main([*argv, "--answers", "continuations"]) == 2
    # Each run's check, once more for the Python pools where the compiled books do not fit.
    assert list(dict.fromkeys(size.units for size in sizes)) == [162, 225]
