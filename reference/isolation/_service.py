"""Untrusted code asked questions in a contained worker: requests out, plain answers back.

For code the caller judges rather than trusts (a vendored copy, walked by
``vendor verify``): :class:`Service` starts a worker module contained
(:class:`._connection.Worker`) and sends requests and receives messages,
each a frame of plain JSON (:mod:`._frames`), within one deadline for the
run. The worker's messages are answers for the caller to judge, never
verdicts: a forged frame is at most a malformed or wrong answer. Any way
the worker fails to answer, in time and well formed, is a
:class:`ServiceFailed`; on leaving, the worker and everything it started
are killed. :func:`serve` is the worker's side: its first message, then one
answer per request.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Sequence
from typing import Any

from junction.core import JunctionError

from ._confine import enter_pid_namespace
from ._connection import Worker
from ._frames import _ChannelClosed, _ChannelTimeout, _MalformedMessage, read_frame, write_frame

__all__ = ["Service", "ServiceFailed", "serve"]


class ServiceFailed(JunctionError):
    """The worker did not answer: ``timed_out`` (the run's deadline came first), or it
    ended or broke the format (the message says which)."""

    def __init__(self, problem: str, timed_out: bool = False) -> None:
        super().__init__(problem)
        self.timed_out = timed_out


class Service:
    """``python -m module READ_FD WRITE_FD *args``, contained, asked within ``seconds``."""

    def __init__(self, module: str, args: Sequence[str], seconds: float) -> None:
        self.seconds = seconds
        self._deadline = time.monotonic() + seconds
        self._worker = Worker(module, args, cpu_seconds=seconds + 5)

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _failed(self, error: Exception) -> ServiceFailed:
        if isinstance(error, _ChannelTimeout):
            return ServiceFailed(f"no answer within {self.seconds:g} s", timed_out=True)
        if isinstance(error, _ChannelClosed):
            return ServiceFailed(f"it ended (exit status {self._worker.exit_status()})")
        return ServiceFailed(f"it sent a malformed message: {error}")

    def send(self, message: dict[str, Any]) -> None:
        """Send one request (plain JSON data)."""
        try:
            self._worker.send(message, self._deadline)
        except (_ChannelTimeout, _ChannelClosed, _MalformedMessage) as error:
            raise self._failed(error) from None

    def receive(self) -> Any:
        """The worker's next message: plain JSON data, its shape for the caller to check."""
        try:
            return self._worker.receive(self._deadline)
        except (_ChannelTimeout, _ChannelClosed, _MalformedMessage) as error:
            raise self._failed(error) from None

    def close(self) -> None:
        """Kill the worker and everything it started. Idempotent."""
        self._worker.close()


def serve(argv: Sequence[str], start: Callable[[list[str]], tuple[Any, Any]]) -> int:
    """The worker's main: ``argv`` is ``READ_FD WRITE_FD *args``.

    ``start(args)`` gives the first message and the function that answers each
    request (``None``: send the first message and end). Returns the exit status
    once the parent closes its end."""
    read_fd, write_fd = int(argv[0]), int(argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent alone answers a Ctrl-C
    enter_pid_namespace()  # what the worker starts dies with it, where the kernel allows
    first, answer = start(list(argv[2:]))
    write_frame(write_fd, first, None)
    if answer is None:
        return 0
    while True:
        try:
            request = read_frame(read_fd, None)
        except _ChannelClosed:
            return 0
        write_frame(write_fd, answer(request), None)
