"""The one registry of retention policies: a row per policy, read by every command.

``simulate`` and ``sweep`` compare the ``RETENTION`` rows (and any
``module:attribute`` policy given), ``findings`` judges the
``COMPATIBILITY`` rows, and ``fuzz``, ``replay`` and the harness resolve any
name here. Adding a policy is one row of :data:`POLICIES`
(docs/architecture.md, "Walk-through: adding a policy").
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable

import attrs

from junction.reference.engine.policy import Policy, PolicyError

from .builtin import (
    DECODE_CHECKPOINT_TTL,
    DensePolicy,
    IntervalPolicy,
    JunctionPolicy,
    junction_with_decode_checkpoints,
    junction_with_retired_decode_checkpoints,
    junction_with_two_decode_checkpoints,
)
from .vllm import VllmPolicy, VllmPR47782Policy, VllmPR50551Policy

__all__ = ["POLICIES", "PolicyEntry", "Role", "policy_names", "resolve_policy"]


class Role(enum.Enum):
    """What a registered policy is for."""

    RETENTION = "retention"  # a retention alternative: simulate and sweep compare it
    COMPATIBILITY = "compatibility"  # an engine's formulas: findings judges them
    NEXT_TURN = (
        "next turn"  # a retention alternative keeping decode checkpoints: compared when asked
    )


@attrs.frozen
class PolicyEntry:
    """A registered policy: its name (on the command line and in reports) and its factory."""

    name: str
    factory: Callable[[], Policy]
    role: Role
    summary: str


POLICIES: tuple[PolicyEntry, ...] = (
    PolicyEntry(
        "junction",
        JunctionPolicy,
        Role.RETENTION,
        "the default: the replay boundary and the junction pinned, segments under R > 0",
    ),
    PolicyEntry("dense", DensePolicy, Role.RETENTION, "every materialised block and state"),
    PolicyEntry(
        "interval",
        IntervalPolicy,
        Role.RETENTION,
        "segments and the replay boundary, the junction never pinned (before vLLM #47782)",
    ),
    PolicyEntry("vllm-0.33", VllmPolicy, Role.COMPATIBILITY, "vLLM 0.33.0's formulas"),
    PolicyEntry("vllm-pr47782", VllmPR47782Policy, Role.COMPATIBILITY, "vLLM PR #47782's formula"),
    PolicyEntry(
        "junction+decode",
        junction_with_decode_checkpoints,
        Role.NEXT_TURN,
        "the default with each finished request's decode checkpoint kept (the next turn)",
    ),
    PolicyEntry(
        "junction+decode-retired",
        junction_with_retired_decode_checkpoints,
        Role.NEXT_TURN,
        "junction+decode, a turn's checkpoint retired once the next turn on its path publishes"
        f" or no request resumed from it within {DECODE_CHECKPOINT_TTL} requests (its path"
        " keeping its last state)",
    ),
    PolicyEntry(
        "junction+decode2",
        junction_with_two_decode_checkpoints,
        Role.NEXT_TURN,
        "junction+decode-retired with a second checkpoint below a cut stop string",
    ),
    PolicyEntry(
        "vllm-pr50551",
        VllmPR50551Policy,
        Role.NEXT_TURN,
        "vLLM 0.33.0 with PR #50551's latest scheduler-aligned decode state",
    ),
)


def policy_names(role: Role | None = None) -> tuple[str, ...]:
    """The registered names (of one role), in registry order (``junction`` first)."""
    return tuple(e.name for e in POLICIES if role is None or e.role is role)


def resolve_policy(name: str) -> Policy:
    """A registered policy by name, or ``module:attribute`` for a user's policy.

    Raises :class:`PolicyError` naming the policy when the name is unknown,
    the module cannot be imported, the attribute is missing, or what it names
    is not a :class:`Policy` (after calling it, if it is a class or factory).
    """
    registered = {e.name: e for e in POLICIES}
    if name in registered:
        return registered[name].factory()
    if ":" not in name:
        known = ", ".join(registered)
        raise PolicyError(name, "resolve", f"not a built-in policy ({known}) nor module:attribute")
    module_name, _, attribute = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise PolicyError(
            name, "import", f"cannot import {module_name!r}: {type(error).__name__}: {error}"
        ) from error
    if not hasattr(module, attribute):
        raise PolicyError(name, "resolve", f"module {module_name!r} has no attribute {attribute!r}")
    target = getattr(module, attribute)
    if isinstance(target, type) or (not isinstance(target, Policy) and callable(target)):
        try:
            target = target()
        except Exception as error:
            raise PolicyError(
                name, f"{attribute}()", f"raised {type(error).__name__}: {error}"
            ) from error
    if not isinstance(target, Policy):
        raise PolicyError(name, "resolve", f"{target!r} does not implement the Policy protocol")
    return target
