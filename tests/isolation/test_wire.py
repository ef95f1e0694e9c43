"""The policy worker's message format under hostile input: nothing executed, nothing believed.

Three layers, each driven by Hypothesis with malformed, oversized and
hostile input: the frame decoder (any bytes), the frame reader on a real
pipe (any byte stream), and :class:`RemotePolicy`'s checks of an answer
(any message a worker could send). Whatever arrives, the result is plain
data of the expected shape or a typed refusal; a pickle is never loaded.
"""

from __future__ import annotations

import json
import os
import pickle
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.policy import CheckedPolicy, PolicyError
from junction.reference.engine.request import Request
from junction.reference.isolation import Limits, RemotePolicy
from junction.reference.isolation import _frames as frames
from junction.reference.isolation._connection import Loaded

PLAIN = (dict, list, str, int, bool, type(None))


def _plain(value: object) -> bool:
    """Exactly built-in JSON types all the way down (no subclass, no float)."""
    if type(value) not in PLAIN:
        return False
    if type(value) is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if type(value) is list:
        return all(_plain(v) for v in value)
    return True


class _Planted:
    """Unpickling this would create the file it names: proof that a pickle ran."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (Path(self.path),))


def _frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


@pytest.mark.parametrize(
    "body",
    [
        b'{"a": 1, "a": 2}',
        b"[" * 100_000 + b"]" * 100_000,
        b"[[[[[1]]]]]",
        b"1e5",
        b"NaN",
        b"-Infinity",
        b"123456789012345678901234567890",
        str(2**63).encode(),
        b"\xff\xfe",
        b'"\\ud800"' + b"x" * 10,
        b"",
    ],
)
def test_what_json_allows_and_a_message_never_needs_is_refused(body: bytes) -> None:
    with pytest.raises(frames._MalformedMessage):
        frames.decode(body)


def test_a_pickle_is_never_loaded(tmp_path: Path) -> None:
    planted = tmp_path / "ran"
    with pytest.raises(frames._MalformedMessage):
        frames.decode(pickle.dumps(_Planted(str(planted))))
    assert not planted.exists()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes_decode_to_plain_data_or_a_refusal(body: bytes) -> None:
    try:
        value = frames.decode(body)
    except frames._MalformedMessage:
        return
    assert _plain(value)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.binary(max_size=64) | _json_values.map(lambda v: json.dumps(v).encode()), max_size=6
    )
)
def test_a_byte_stream_on_a_pipe_reads_as_plain_frames_or_a_refusal(chunks: list[bytes]) -> None:
    read_fd, write_fd = os.pipe()
    try:
        os.set_blocking(read_fd, False)
        stream = b"".join(_frame(c) if i % 2 == 0 else c for i, c in enumerate(chunks))
        os.write(write_fd, stream[:60_000])
        os.close(write_fd)
        write_fd = -1
        reader = frames.FrameReader(read_fd)
        for _ in range(len(chunks) + 1):
            try:
                value = reader.read(time.monotonic() + 1.0, lambda: True)
            except (frames._MalformedMessage, frames._ChannelClosed):
                return
            assert _plain(value)
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


def test_an_oversized_frame_is_refused_from_its_length_before_its_body() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.write(write_fd, struct.pack(">I", frames.MAX_FRAME + 1))  # and no body ever
    reader = frames.FrameReader(read_fd)
    started = time.monotonic()
    with pytest.raises(frames._MalformedMessage, match="over"):
        reader.read(time.monotonic() + 5.0, lambda: True)
    assert time.monotonic() - started < 1.0
    os.close(read_fd)
    os.close(write_fd)


def test_a_silent_writer_costs_the_deadline_and_a_dead_one_less() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    reader = frames.FrameReader(read_fd)
    with pytest.raises(frames._ChannelTimeout):
        reader.read(time.monotonic() + 0.2, lambda: True)
    started = time.monotonic()
    with pytest.raises(frames._ChannelClosed):  # the pipe is still open: a grandchild's
        reader.read(time.monotonic() + 5.0, lambda: False)
    assert time.monotonic() - started < 1.0
    os.close(read_fd)
    os.close(write_fd)


# -- RemotePolicy's checks of an answer -------------------------------------------
class _ScriptedWorker:
    """Answers every request with one scripted message (after the format's own round trip)."""

    def __init__(self, answer: object) -> None:
        self.answer = answer
        self.closed = False
        self.sent: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any], deadline: float) -> None:
        self.sent.append(frames.decode(frames.encode(message)[4:]))

    def receive(self, deadline: float) -> Any:
        answer = self.answer
        if callable(answer):
            answer = answer(self.sent[-1]["id"])
        return frames.decode(frames.encode(answer)[4:])

    def exit_status(self) -> int | None:
        return None

    def close(self) -> None:
        self.closed = True


def _remote(answer: object) -> tuple[RemotePolicy, _ScriptedWorker]:
    worker = _ScriptedWorker(answer)
    loaded = Loaded("scripted", False, False, False, False, frozenset())
    remote = RemotePolicy(worker, loaded, Limits(60.0, 10.0), time.monotonic() + 60)  # type: ignore[arg-type]
    return remote, worker


GEOMETRY = HybridGeometry([GroupSpec.full(4), GroupSpec.sliding_window(4, 5)], 4)
REQUEST = Request(0, (0,) * 12, 1, 4)

_fields = st.dictionaries(
    st.sampled_from(["value", "raised", "too_long", "unsupported", "element", "type", "id", "x"]),
    _json_values,
    max_size=3,
)


def _answered(fields: dict[str, Any], honest_id: bool) -> Any:
    return lambda key: {**fields, "id": key} if honest_id else fields


@settings(max_examples=400, deadline=None)
@given(_fields, st.booleans())
def test_any_answer_is_plain_and_shaped_or_a_policy_error(
    fields: dict[str, Any], honest_id: bool
) -> None:
    for ask in ("split", "mask", "positions", "boundaries"):
        remote, worker = _remote(_answered(fields, honest_id))
        checked = CheckedPolicy(remote)
        group = GEOMETRY.groups[1]
        try:
            if ask == "split":
                answer: Any = checked.split(GEOMETRY, REQUEST, 8, 16)
                assert type(answer) is int and 0 <= answer <= 8
            elif ask == "mask":
                answer = checked.block_mask(GEOMETRY, group, REQUEST, 0, 3, (11,))
                assert answer is None or (
                    type(answer) is list
                    and len(answer) == 3
                    and all(type(b) is bool for b in answer)
                )
            elif ask == "positions":
                answer = checked.checkpoint_positions(GEOMETRY, REQUEST)
                assert type(answer) is tuple and len(answer) <= REQUEST.num_tokens + 1
                assert all(type(p) is int and p >= 1 for p in answer)
            else:
                answer = checked.reachable_boundaries(GEOMETRY, group, REQUEST)
                assert all(type(p) is int and p >= 0 for p in answer)
        except PolicyError as error:
            assert "\n" not in str(error) and len(str(error)) < 2000
            if not honest_id or set(fields) - {"id"} not in (
                {"value"},
                {"raised"},
                {"too_long"},
                {"unsupported"},
                {"element", "type"},
            ):  # not an answer of the format: the worker is killed and the run ends
                assert worker.closed and remote.gone is not None


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (True, r"must return an int, got True"),
        (8.0, r"malformed message: a float"),
        ([True, False], r"must return an int, got \[True, False\]"),
        ({"type": "int"}, r"must return an int"),
    ],
)
def test_bool_for_int_and_other_shapes_are_refused(answer: object, problem: str) -> None:
    if isinstance(answer, float):  # a worker's raw frame, not a value the encoder writes
        worker = _ScriptedWorker(None)
        worker.receive = lambda deadline: frames.decode(b'{"id": 1, "value": 8.0}')  # type: ignore[method-assign]
        remote = RemotePolicy(
            worker,  # type: ignore[arg-type]
            Loaded("scripted", False, False, False, False, frozenset()),
            Limits(60.0, 10.0),
            time.monotonic() + 60,
        )
        with pytest.raises(PolicyError, match=problem):
            remote.split(GEOMETRY, REQUEST, 8, 16)
        assert remote.gone is not None
        return
    remote, _ = _remote(lambda key: {"id": key, "value": answer})
    with pytest.raises(PolicyError, match=problem):
        CheckedPolicy(remote).split(GEOMETRY, REQUEST, 8, 16)


def test_a_position_list_longer_than_the_request_is_not_read() -> None:
    remote, worker = _remote(lambda key: {"id": key, "too_long": 10_000_000})
    with pytest.raises(PolicyError, match="returned 10000000 positions"):
        remote.checkpoint_positions(GEOMETRY, REQUEST)
    assert worker.sent[-1]["limit"] == REQUEST.num_tokens + 1 and not worker.closed
