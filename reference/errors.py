"""The reference side's one error family: :class:`JunctionError` and its kinds.

The core's :class:`~junction.core.InvalidArgument` names the argument, the
value and the rule; the reference engine, harness, simulator, workloads,
command line and audits raise errors of the same shape, so a caller catches
``JunctionError`` for anything they refuse on purpose and reads the three
fields. An error about a place rather than one argument (a trace's line, a
policy's call, an output path) is raised with its whole message, which is
then its ``rule``. Each subclass is one meaning; most also derive from the
built-in error callers already catch (``ValueError``, ``RuntimeError``).
"""

from __future__ import annotations

__all__ = ["InvalidValue", "JunctionError", "PoolExhausted"]

_MESSAGE_ONLY = object()


class JunctionError(Exception):
    """An error the reference side raises on purpose.

    ``JunctionError(argument, value, rule)`` reads ``argument=value: rule``,
    as the core's errors do; ``JunctionError(message)`` carries a message
    whose subject is not one argument (``argument`` and ``value`` are then
    ``None``, ``rule`` the message).

    Attributes:
        argument: the parameter, attribute or option at fault, or ``None``.
        value: the value it had (``None`` for a message-only error).
        rule: the rule it broke, in words (the whole message when message-only).
    """

    def __init__(self, argument: str, value: object = _MESSAGE_ONLY, rule: str = "") -> None:
        if value is _MESSAGE_ONLY:
            self.argument: str | None = None
            self.value: object = None
            self.rule = argument
            super().__init__(argument)
        else:
            self.argument, self.value, self.rule = argument, value, rule
            super().__init__(f"{argument}={value!r}: {rule}")


class InvalidValue(JunctionError, ValueError):
    """A value given to the reference side broke a documented rule."""


class PoolExhausted(JunctionError, RuntimeError):
    """An audited engine's pool cannot fit a prompt, even after eviction."""
