"""The parent's side of a worker: the process, its two pipes, a policy's first message checked.

:class:`Worker` starts a worker module (a policy's, :mod:`._worker`, or
any other :mod:`._service` runs) contained (:mod:`._processes`) and sends
and receives frames (:mod:`._frames`) with deadlines, this side's
descriptors non-blocking; :func:`read_loaded` checks a policy worker's
first message field by field into a :class:`Loaded` or the
:class:`PolicyError` the worker met while loading.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import attrs

from junction.reference.engine.finish import FinishReason
from junction.reference.engine.policy import PolicyError

from ._frames import FrameReader, _MalformedMessage, write_frame
from ._processes import python_module

__all__ = ["MAX_NAME", "MAX_TEXT", "Loaded", "Worker", "one_line", "read_loaded"]

MAX_NAME = 200  # characters of a policy's name
MAX_TEXT = 400  # characters of a message the worker sends (an exception, a load failure)


def one_line(value: object, limit: int = MAX_TEXT) -> str | None:
    """``value`` as one printable line of at most ``limit`` characters, if it is an exact str."""
    if type(value) is not str:
        return None
    line = "".join(c if c.isprintable() else " " for c in " ".join(value.split()))
    return line if len(line) <= limit else line[: limit - 3] + "..."


class Worker:
    """The worker process and its two pipes (this side non-blocking), with deadlines."""

    def __init__(
        self,
        module: str,
        args: Sequence[str],
        path: Sequence[str] = (),
        cpu_seconds: float | None = None,
    ) -> None:
        """Start ``python -m module READ_FD WRITE_FD *args``, importing first from ``path``
        (its alone)."""
        to_worker, requests = os.pipe()
        answers, from_worker = os.pipe()
        try:
            self.process = python_module(
                module,
                [str(to_worker), str(from_worker), *args],
                (to_worker, from_worker),
                path=path,
                cpu_seconds=cpu_seconds,
            )
        finally:
            os.close(to_worker)
            os.close(from_worker)
        os.set_blocking(requests, False)
        os.set_blocking(answers, False)
        self._requests, self._answers = requests, answers
        self._reader = FrameReader(answers)
        self.closed = False

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: dict[str, Any], deadline: float) -> None:
        write_frame(self._requests, message, deadline)

    def receive(self, deadline: float) -> Any:
        return self._reader.read(deadline, self.alive)

    def exit_status(self) -> int | None:
        """The worker's exit status, waiting a moment for it (it may be dying)."""
        return self.process.exit_status(wait=0.5)

    def close(self) -> None:
        """Kill the worker and everything it started; close the pipes. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self.process.kill()
        os.close(self._requests)
        os.close(self._answers)


@attrs.frozen
class Loaded:
    """What the worker reported of the policy it loaded: its name and declarations."""

    name: str
    fixed_boundaries: bool
    writes_prefill_checkpoints: bool
    keeps_decode_checkpoints: bool
    keeps_declared_checkpoints: bool
    # The finishes on which the engine publishes decode checkpoints (none when it keeps none).
    decode_checkpoint_finishes: frozenset[FinishReason]
    # Turns per path whose decode checkpoints stay (None: no retirement), how far
    # below the answer's end the earliest lies, and the later requests within which one
    # must be resumed from (all as engine.policy.CheckedPolicy reads).
    decode_checkpoint_budget: int | None = None
    decode_checkpoint_margin: int = 0
    decode_checkpoint_ttl: int | None = None
    # Whether an expired turn's path keeps its last state (the checkpoint below it).
    decode_checkpoint_keep_path: bool = False


def _load_failure(fields: object) -> PolicyError:
    """The worker's ``load_failed``: the policy, call and problem of its error, each a line."""
    keys = {"policy", "call", "problem"}
    if type(fields) is not dict or set(fields) != keys:
        raise _MalformedMessage(f"load_failed must have exactly {sorted(keys)}")
    policy, call = one_line(fields["policy"], MAX_NAME), one_line(fields["call"], 100)
    problem = one_line(fields["problem"])
    if not (policy and call and problem):
        raise _MalformedMessage("load_failed's fields must be printable, non-empty strings")
    return PolicyError(policy, call, problem)


def read_loaded(message: object) -> Loaded | PolicyError:
    """The worker's first message, checked field by field."""
    if type(message) is dict and set(message) == {"load_failed"}:
        return _load_failure(message["load_failed"])
    if type(message) is not dict or set(message) != {"loaded"}:
        raise _MalformedMessage("the first message must be loaded or load_failed")
    fields = message["loaded"]
    keys = {
        "name",
        "fixed_boundaries",
        "writes_prefill_checkpoints",
        "keeps_decode_checkpoints",
        "keeps_declared_checkpoints",
        "decode_checkpoint_finishes",
        "decode_checkpoint_budget",
        "decode_checkpoint_margin",
        "decode_checkpoint_ttl",
        "decode_checkpoint_keep_path",
    }
    if type(fields) is not dict or set(fields) != keys:
        raise _MalformedMessage(f"loaded must have exactly {sorted(keys)}")
    name = fields["name"]
    if type(name) is not str or not name or len(name) > MAX_NAME or not name.isprintable():
        raise _MalformedMessage(f"the policy's name must be 1 to {MAX_NAME} printable characters")
    flags = (
        fields["fixed_boundaries"],
        fields["writes_prefill_checkpoints"],
        fields["keeps_decode_checkpoints"],
        fields["keeps_declared_checkpoints"],
        fields["decode_checkpoint_keep_path"],
    )
    if any(type(flag) is not bool for flag in flags):
        raise _MalformedMessage("the policy's declarations must be bools")
    budget, margin = fields["decode_checkpoint_budget"], fields["decode_checkpoint_margin"]
    ttl = fields["decode_checkpoint_ttl"]
    for declaration, value in (
        ("decode_checkpoint_budget", budget),
        ("decode_checkpoint_ttl", ttl),
    ):
        if value is not None and (type(value) is not int or value < 1):
            raise _MalformedMessage(f"{declaration} must be null or an int >= 1")
    if type(margin) is not int or margin < 0:
        raise _MalformedMessage("decode_checkpoint_margin must be an int >= 0")
    if (budget is not None or margin or ttl is not None or flags[4]) and not flags[2]:
        raise _MalformedMessage(
            "a decode checkpoint budget, margin, time to live or kept path without the checkpoints"
        )
    finishes = _finishes(fields["decode_checkpoint_finishes"], flags[2])
    return Loaded(name, *flags[:4], finishes, budget, margin, ttl, flags[4])


def _finishes(names: object, keeps_decode_checkpoints: bool) -> frozenset[FinishReason]:
    """The declared finishes: distinct names of :class:`FinishReason`, none without
    decode checkpoints."""
    known = {reason.value: reason for reason in FinishReason}
    if (
        type(names) is not list
        or any(type(value) is not str or value not in known for value in names)
        or len(set(names)) != len(names)
    ):
        raise _MalformedMessage(
            f"decode_checkpoint_finishes must be a list of distinct names from {sorted(known)}"
        )
    if names and not keeps_decode_checkpoints:
        raise _MalformedMessage("decode_checkpoint_finishes without keeps_decode_checkpoints")
    return frozenset(known[value] for value in names)
