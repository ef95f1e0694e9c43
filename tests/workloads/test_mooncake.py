"""Hash-id (Mooncake) traces: detection, gzip, strict lines, prompts built from the ids.

The figure test parses the committed conversation trace (no engine run) and
recomputes the two figures ``examples/traces/README.md`` states.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from junction.reference.engine.hash_chain import HashChain
from junction.reference.workloads.hash_prompts import PromptBuilder, block_tokens
from junction.reference.workloads.mooncake import HashTraceRequest, parse_hash_trace
from junction.reference.workloads.trace import TraceError, TraceRequest
from junction.reference.workloads.tracefile import load_any_trace, parse_any_trace

CONVERSATION = Path(__file__).parents[2] / "examples" / "traces" / "mooncake-conversation.jsonl.gz"
LINE = {"timestamp": 0, "input_length": 1030, "output_length": 12, "hash_ids": [7, 8, 9]}


def _text(*records: dict[str, object]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def test_the_format_is_detected_from_the_fields_and_gzip_from_the_bytes(tmp_path: Path) -> None:
    hashed = tmp_path / "plain-name.jsonl"
    hashed.write_bytes(gzip.compress(_text(LINE).encode()))
    assert load_any_trace(hashed, 10**6) == [HashTraceRequest(1, 0, 1030, 12, (7, 8, 9))]
    tokens = tmp_path / "t.jsonl.gz"  # a gzip name, plain bytes
    tokens.write_text('{"prompt": [1, 2]}\n')
    assert load_any_trace(tokens, 10**6) == [TraceRequest(1, (1, 2), 16, None)]


def test_decompressed_text_over_the_cap_is_an_error(tmp_path: Path) -> None:
    bomb = tmp_path / "b.jsonl.gz"
    bomb.write_bytes(gzip.compress(b"\n" * 10_000))
    with pytest.raises(TraceError, match="decompressed text is over 1,000 bytes"):
        load_any_trace(bomb, 1_000)


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        ({"hash_ids": None}, "hash_ids", "missing"),
        ({"timestamp": None}, "timestamp", "missing"),
        ({"hash_ids": [7, 8]}, "hash_ids", "has 2 ids; input_length 1,030 needs 3"),
        ({"hash_ids": [7, 8, 9, 10]}, "hash_ids", "has 4 ids; input_length 1,030 needs 3"),
        ({"hash_ids": [7, "8", 9]}, "hash_ids", "element 1 is '8'; hash ids must be ints"),
        ({"hash_ids": [7, 8.0, 9]}, "hash_ids", "element 1 is 8.0; hash ids must be ints"),
        ({"hash_ids": [7, -1, 9]}, "hash_ids", "element 1 is -1; hash ids must be ints"),
        ({"hash_ids": [7, 10**30, 9]}, "hash_ids", "element 1 is an int of 31 digits"),
        ({"hash_ids": 7}, "hash_ids", "must be a list of ints, got int"),
        ({"input_length": 0}, "input_length", "must be an int in [1, 2,147,483,647], got 0"),
        ({"output_length": True}, "output_length", "must be an int in [1, 1,048,576]"),
        ({"timestamp": 1.5}, "timestamp", "must be an int in [0, "),
        ({"session": 1}, "session", "unknown field (known: timestamp, input_length"),
    ],
)
def test_a_malformed_line_names_the_file_the_line_and_the_field(
    change: dict[str, object], field: str, problem: str
) -> None:
    record = {**LINE, **change}
    record = {key: value for key, value in record.items() if value is not None}
    with pytest.raises(TraceError) as error:
        parse_any_trace(_text(LINE, record), "t.jsonl")
    assert str(error.value).startswith(f"t.jsonl:2: field {field!r}: {problem}")


def test_json_itself_is_as_strict_as_for_token_id_traces() -> None:
    twice = (
        '{"timestamp": 0, "timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1]}'
    )
    with pytest.raises(TraceError, match=r"t\.jsonl:1: field 'timestamp': given twice"):
        parse_hash_trace(twice, "t.jsonl")


def test_a_block_is_512_tokens_from_its_id_alone_and_distinct_ids_differ_first() -> None:
    assert block_tokens(5) == block_tokens(5) and len(block_tokens(5)) == 512
    assert block_tokens(5)[0] == 5 and block_tokens(6)[0] == 6
    assert all(0 <= token < 2**31 for token in block_tokens(2**31 - 1))
    prompt = PromptBuilder().prompt(HashTraceRequest(1, 0, 1030, 1, (7, 8, 9)))
    assert prompt == (block_tokens(7) + block_tokens(8) + block_tokens(9))[:1030]


@pytest.mark.parametrize("block", [16, 64, 528])
def test_prompts_share_exactly_the_blocks_their_hash_ids_share(block: int) -> None:
    builder = PromptBuilder()
    first = builder.prompt(HashTraceRequest(1, 0, 1500, 1, (1, 2, 3)))
    second = builder.prompt(HashTraceRequest(2, 0, 1536, 1, (1, 2, 4)))
    hashes = []
    for prompt in (first, second):
        chain = HashChain(block)
        chain.extend(prompt)
        hashes.append(chain.hashes)
    shared = sum(a == b for a, b in zip(*hashes, strict=False))
    assert shared == 1024 // block  # ids 1 and 2: up to token 1,024, not one block more


def test_the_conversation_trace_has_the_figures_its_readme_states() -> None:
    requests = load_any_trace(CONVERSATION, 2**30)
    assert all(isinstance(request, HashTraceRequest) for request in requests)
    hashed = [r for r in requests if isinstance(r, HashTraceRequest)]
    assert len(hashed) == 12_031
    assert sum(r.input_length for r in hashed) == 144_793_823
    assert sum(r.output_length for r in hashed) == 4_122_048
    seen: set[int] = set()
    covered = hit = looked_up = 0
    for request in hashed:
        run = 0
        while run < len(request.hash_ids) and request.hash_ids[run] in seen:
            run += 1
        length = request.input_length
        covered += min(512 * run, length)
        hit += min(512 * run, length - 1) // 16 * 16
        looked_up += length - 1
        seen.update(request.hash_ids)
    assert round(covered / sum(r.input_length for r in hashed), 3) == 0.374
    assert (hit, looked_up) == (54_097_440, 144_781_792)
