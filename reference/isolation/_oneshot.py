"""A contained child that does one job and sends one result, believed only as that frame.

For work that may loop, exit or crash the interpreter (a vendored copy's
walk): :func:`run_in_child` runs a module contained (:mod:`._processes`)
with a deadline and returns the one frame the child sent with
:func:`send_result`, or a :class:`NoResult` saying why there was none. A
child that ends without a result has failed, whatever its exit status.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import attrs

from ._frames import FrameReader, _ChannelClosed, _ChannelTimeout, _MalformedMessage, write_frame
from ._processes import python_module

__all__ = ["ChildResult", "NoResult", "run_in_child", "send_result"]


@attrs.frozen
class ChildResult:
    """The child's result: plain JSON data, its shape unchecked (the caller checks it)."""

    message: Any


@attrs.frozen
class NoResult:
    """No result came: ``timed_out`` (the deadline came first), or the child ended without
    a whole, well-formed one (``exit_status``: its status, ``None`` if still unknown)."""

    timed_out: bool
    exit_status: int | None


def run_in_child(module: str, args: Sequence[str], seconds: float) -> ChildResult | NoResult:
    """Run ``python -m module WRITE_FD *args`` contained; its result within ``seconds``.

    The child sends its result on ``WRITE_FD`` with :func:`send_result`. On
    return, the child and everything it started have been killed.
    """
    deadline = time.monotonic() + seconds
    results, sender = os.pipe()
    try:
        child = python_module(module, [str(sender), *args], (sender,), cpu_seconds=seconds + 5)
    finally:
        os.close(sender)
    os.set_blocking(results, False)
    try:
        return ChildResult(FrameReader(results).read(deadline, lambda: child.poll() is None))
    except _ChannelTimeout:
        return NoResult(timed_out=True, exit_status=None)
    except (_ChannelClosed, _MalformedMessage):
        return NoResult(timed_out=False, exit_status=child.exit_status(wait=5.0))
    finally:
        child.kill()
        os.close(results)


def send_result(write_fd: int, result: object) -> None:
    """In the child: send ``result`` (plain JSON data, at most 1 MiB encoded) as the one result."""
    write_frame(write_fd, result, None)
