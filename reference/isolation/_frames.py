"""The message format between the parent and a contained child: plain data, bounded, checked.

Every message is one *frame*: a 4-byte big-endian length, then that many
bytes of UTF-8 JSON. Decoding runs no code of the sender's and refuses what
a message never needs: a frame over :data:`MAX_FRAME` bytes (checked on the
length, before the body is read), floats, ``NaN``/``Infinity``, duplicate
keys, deep nesting, integers past 64 bits; :func:`decode` gives plain values
whose shapes the reader checks. Both ends read and write with deadlines, so
a peer that stops costs its deadline, never a hang. Length-prefixed, not
lines: a policy's stray write would splice into a line undetected; no pickle
(docs/design/fuzz-isolation.md).
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_FRAME", "FrameReader", "decode", "encode", "read_frame", "write_frame"]

MAX_FRAME = 1 << 20  # bytes of JSON in one message: a mask of a chunk is far smaller
MAX_DEPTH = 4  # nesting of lists and objects a message may have
_MAX_INT = 1 << 63
_HEADER = struct.Struct(">I")
_POLL = 0.05  # seconds between checks that the writer is still alive while nothing arrives


# The three signals below never leave this package: each reader turns them into a
# verdict, a policy error or a typed result of its own.
class _MalformedMessage(Exception):
    """A frame that is not a message of this format; the text says which rule it broke."""


class _ChannelClosed(Exception):
    """The peer closed its end (or died) before a whole frame arrived."""

    def __init__(self, message: str = "the peer closed its end before a whole frame") -> None:
        super().__init__(message)


class _ChannelTimeout(Exception):
    """The deadline passed before a whole frame was read or written."""

    def __init__(self, message: str = "the deadline passed before a whole frame") -> None:
        super().__init__(message)


def _reject_constant(name: str) -> Any:
    raise _MalformedMessage(f"{name} is not a value of this format")


def _reject_float(text: str) -> Any:
    raise _MalformedMessage(f"a float ({text[:20]}) is not a value of this format")


def _int(text: str) -> int:
    if len(text) > 20:
        raise _MalformedMessage(f"an integer of {len(text)} digits is past 64 bits")
    value = int(text)
    if not -_MAX_INT <= value < _MAX_INT:
        raise _MalformedMessage(f"the integer {value} is past 64 bits")
    return value


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _MalformedMessage(f"the key {key[:40]!r} appears twice")
        result[key] = value
    return result


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object,
    parse_float=_reject_float,
    parse_int=_int,
    parse_constant=_reject_constant,
    strict=True,
)


def _depth(value: object, limit: int) -> None:
    """Raise unless ``value`` nests at most ``limit`` lists/objects (level by level:
    only containers are kept, never the scalars)."""
    level: list[Any] = [value] if type(value) is list or type(value) is dict else []
    depth = 0
    while level:
        if depth >= limit:
            raise _MalformedMessage(f"nested deeper than {limit} levels")
        below = []
        for item in level:
            for child in item.values() if type(item) is dict else item:
                if type(child) is list or type(child) is dict:
                    below.append(child)
        level, depth = below, depth + 1


def decode(body: bytes) -> Any:
    """A frame's body as plain data; :class:`_MalformedMessage` for anything else.

    Deep nesting ends the C decoder's recursion (``RecursionError``, caught)
    long before it costs memory; what decodes is then held to :data:`MAX_DEPTH`.
    """
    if len(body) > MAX_FRAME:
        raise _MalformedMessage(f"a message of {len(body)} bytes is over {MAX_FRAME}")
    try:
        text = body.decode("utf-8")
        value = _DECODER.decode(text)
    except _MalformedMessage:
        raise
    except (ValueError, RecursionError) as error:  # JSONDecodeError and UnicodeDecodeError
        raise _MalformedMessage(f"not JSON: {' '.join(str(error).split())[:120]}") from None
    _depth(value, MAX_DEPTH)
    return value


def encode(message: object) -> bytes:
    """``message`` (plain data) as one frame, header included."""
    body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode("utf-8")
    if len(body) > MAX_FRAME:
        raise _MalformedMessage(f"a message of {len(body)} bytes is over {MAX_FRAME}")
    return _HEADER.pack(len(body)) + body


def _wait(fd: int, writing: bool, deadline: float | None) -> None:
    """Until ``fd`` is ready (``deadline`` ``None``: however long that takes)."""
    left = None if deadline is None else deadline - time.monotonic()
    if left is not None and left <= 0:
        raise _ChannelTimeout
    ready = select.select([], [fd], [], left) if writing else select.select([fd], [], [], left)
    if not any(ready):
        raise _ChannelTimeout


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    while size:
        _wait(fd, False, deadline)
        try:
            chunk = os.read(fd, min(size, 1 << 16))
        except BlockingIOError:
            continue
        except OSError:
            raise _ChannelClosed from None
        if not chunk:
            raise _ChannelClosed
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, deadline: float | None) -> Any:
    """The next message on ``fd``, decoded, by ``deadline`` (``time.monotonic``; ``None``: none).

    The parent's descriptors are non-blocking, so a short read never blocks
    past the deadline.

    Raises :class:`_ChannelTimeout`, :class:`_ChannelClosed`, or
    :class:`_MalformedMessage` (an oversized length is refused before its body is read).
    """
    (size,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size, deadline))
    if size > MAX_FRAME:
        raise _MalformedMessage(f"a message of {size} bytes is over {MAX_FRAME}")
    return decode(_read_exactly(fd, size, deadline))


def write_frame(fd: int, message: object, deadline: float | None) -> None:
    """Write ``message`` as one frame by ``deadline``; :class:`_ChannelClosed`: the peer is gone."""
    data = memoryview(encode(message))
    while data:
        _wait(fd, True, deadline)
        try:
            written = os.write(fd, data)
        except BlockingIOError:
            continue
        except OSError:  # EPIPE: the reader is gone
            raise _ChannelClosed from None
        data = data[written:]


class FrameReader:
    """Frames from a non-blocking descriptor, read with a deadline and a liveness check.

    A writer that died while something else (a grandchild it forked) still
    holds the pipe open would never produce end-of-file, so while nothing
    arrives the reader asks ``alive()`` every few hundredths of a second and
    gives up (:class:`_ChannelClosed`) once it says no. The buffer holds at
    most one frame and one read beyond it.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()

    def _frame(self) -> bytes | None:
        if len(self._buffer) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack_from(self._buffer)
        if size > MAX_FRAME:
            raise _MalformedMessage(f"a message of {size} bytes is over {MAX_FRAME}")
        end = _HEADER.size + size
        if len(self._buffer) < end:
            return None
        body = bytes(self._buffer[_HEADER.size : end])
        del self._buffer[:end]
        return body

    def read(self, deadline: float, alive: Callable[[], bool]) -> Any:
        """The next message, decoded; :class:`_ChannelTimeout` at ``deadline``,
        :class:`_ChannelClosed` at end-of-file or once ``alive()`` is false,
        :class:`_MalformedMessage` for a frame that breaks the format."""
        while True:
            body = self._frame()
            if body is not None:
                return decode(body)
            left = deadline - time.monotonic()
            if left <= 0:
                raise _ChannelTimeout
            ready, _, _ = select.select([self._fd], [], [], min(left, _POLL))
            if not ready:
                if not alive():
                    raise _ChannelClosed
                continue
            try:
                chunk = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                raise _ChannelClosed from None
            if not chunk:
                raise _ChannelClosed
            self._buffer += chunk
