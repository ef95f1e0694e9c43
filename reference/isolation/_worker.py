"""The process that runs an isolated policy: it answers policy calls, nothing else.

Code in one process can defeat anything else in it, so only the policy's
code runs here; the checks run in the parent (:mod:`._remote`), which asks
one call at a time. Run as ``python -m junction.reference.isolation._worker
READ_FD WRITE_FD SPEC`` in a session of its own with only those two
descriptors (:mod:`._processes`). Every message is a frame of plain JSON
(:mod:`._frames`): first ``loaded`` (the policy's name and declarations) or
``load_failed`` (the policy, call and problem of the :class:`PolicyError`),
then one answer per request with its ``id``: ``value``, ``raised``,
``too_long``, ``unsupported`` or ``element``. Nothing here is trusted by the
parent; the care taken is for honest policies, so a buggy answer comes back
as a precise message.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.policy import CheckedPolicy, Policy, PolicyError
from junction.reference.policies.registry import resolve_policy

from ._confine import enter_pid_namespace
from ._frames import _ChannelClosed, read_frame, write_frame
from ._geometry import geometry_from_json, group_from_json

__all__ = ["WorkerRequest", "main", "plain_answer"]

_INT = 1 << 63


class WorkerRequest:
    """What a policy reads of a request: the four counts the parent sent, as plain ints,
    and the positions its application declared (a tuple of ints, ``()`` for none)."""

    __slots__ = (
        "declared_checkpoints",
        "num_computed_tokens",
        "num_prompt_tokens",
        "num_tokens",
        "shared_prefix_boundary",
    )

    def __init__(self, counts: list[Any]) -> None:
        (
            self.num_prompt_tokens,
            self.num_tokens,
            self.num_computed_tokens,
            self.shared_prefix_boundary,
        ) = counts[:4]
        self.declared_checkpoints = tuple(counts[4]) if len(counts) > 4 else ()


def _one_line(error: BaseException) -> str:
    try:
        text = " ".join(str(error).split())
    except BaseException:
        text = "<str() of the exception raised too>"
    if len(text) > 200:
        text = text[:197] + "..."
    name = type(error).__name__
    return f"{name}: {text}" if text else name


def _type_name(value: object) -> str:
    try:
        name = type(value).__name__
    except BaseException:
        return "object"
    return name if type(name) is str else "object"


def _scalar(value: object) -> bool:
    kind = type(value)
    return value is None or kind is bool or (kind is int and -_INT <= value < _INT)  # type: ignore[operator]


def plain_answer(answer: object, limit: int) -> dict[str, Any]:
    """``answer`` as this format's answer; reads nothing but exact built-in types."""
    if _scalar(answer):
        return {"value": answer}
    if type(answer) is list or type(answer) is tuple:
        items: list[Any] | tuple[Any, ...] = answer
        if len(items) > limit:
            return {"too_long": len(items)}
        for index, item in enumerate(items):
            if not _scalar(item):
                return {"element": index, "type": _type_name(item)}
        return {"value": list(items)}
    return {"unsupported": _type_name(answer)}


def _load(spec: str) -> tuple[Policy, dict[str, Any]]:
    """The policy and its ``loaded`` message; :class:`PolicyError` for anything that goes wrong."""
    try:
        policy = resolve_policy(spec)
        checked = CheckedPolicy(policy)
    except PolicyError:
        raise
    except BaseException as error:  # SystemExit on import, KeyboardInterrupt in a factory
        raise PolicyError(spec, "load", f"raised {_one_line(error)}") from error
    loaded = {
        "name": str.__str__(checked.name),  # an exact str, whatever subclass ``name`` was
        "fixed_boundaries": checked.fixed_boundaries is True,
        "writes_prefill_checkpoints": checked.writes_prefill_checkpoints is True,
        "keeps_decode_checkpoints": checked.keeps_decode_checkpoints is True,
        "keeps_declared_checkpoints": checked.keeps_declared_checkpoints is True,
        "decode_checkpoint_finishes": sorted(r.value for r in checked.decode_checkpoint_finishes),
        "decode_checkpoint_budget": checked.decode_checkpoint_budget,
        "decode_checkpoint_margin": checked.decode_checkpoint_margin,
        "decode_checkpoint_ttl": checked.decode_checkpoint_ttl,
        "decode_checkpoint_keep_path": checked.decode_checkpoint_keep_path is True,
    }
    return policy, loaded


def _call(policy: Policy, request: dict[str, Any], geometry: HybridGeometry) -> object:
    """Ask ``policy`` what ``request`` names; the policy's answer, unread."""
    view = WorkerRequest(request["request"])
    match request["call"]:
        case "checkpoint_positions":
            return policy.checkpoint_positions(geometry, view)
        case "reachable_boundaries":
            return policy.reachable_boundaries(geometry, _group_of(request, geometry), view)
        case "block_mask":
            group = _group_of(request, geometry)
            start, end, boundaries = request["start"], request["end"], tuple(request["boundaries"])
            return policy.block_mask(geometry, group, view, start, end, boundaries)
        case "split":
            return policy.split(geometry, view, request["n"], request["max_prefill"])
        case "prefill_checkpoint":
            ask: Any = policy
            return ask.prefill_checkpoint(geometry, view, request["n"])
        case "decode_checkpoints":
            ask = policy
            return ask.decode_checkpoints(geometry, view)
    raise ValueError(f"no such call: {request['call']!r}")


def _group_of(request: dict[str, Any], geometry: HybridGeometry) -> GroupSpec:
    """The request's group: an index into ``geometry``, or a group's fields."""
    group = request["group"]
    return geometry.groups[group] if type(group) is int else group_from_json(group)


def serve(policy: Policy, read_fd: int, write_fd: int) -> None:
    """Answer requests until the parent closes its end (or kills this process)."""
    geometries: dict[int, HybridGeometry] = {}
    while True:
        try:
            request = read_frame(read_fd, None)
        except _ChannelClosed:
            return
        if "define" in request:
            geometries[request["geometry"]] = geometry_from_json(request["define"])
        try:
            answer = plain_answer(
                _call(policy, request, geometries[request["geometry"]]), request["limit"]
            )
        except BaseException as error:  # the policy's, SystemExit included: an answer too
            answer = {"raised": _one_line(error)}
        answer["id"] = request["id"]
        write_frame(write_fd, answer, None)


def main(argv: list[str]) -> int:
    """The worker's entry point: load the policy named ``argv[2]``, then serve."""
    read_fd, write_fd, spec = int(argv[0]), int(argv[1]), argv[2]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent alone answers a Ctrl-C
    enter_pid_namespace()  # the policy runs as its namespace's init, or here
    try:
        policy, loaded = _load(spec)
    except PolicyError as error:
        failed = {"policy": error.policy, "call": error.call, "problem": error.problem}
        write_frame(write_fd, {"load_failed": failed}, None)
        return 0
    write_frame(write_fd, {"loaded": loaded}, None)
    serve(policy, read_fd, write_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
