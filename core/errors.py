"""Junction's one error root, and the input validation shared by every decision in ``core``.

:class:`JunctionError` is the root of every error any part of Junction raises
on purpose, defined here because ``core`` imports nothing of ours and every
other part imports ``core`` (docs/design/error-root.md). Engines vendor this
package and want to catch exactly the errors it raises for bad input, and
tests want to assert *which* argument was rejected and *why*:
``InvalidArgument`` carries the argument's name, the offending value and the
rule it broke, and its message states all three. It is also a ``ValueError``
so callers that already catch ``ValueError`` keep working. Rejected
alternative: plain ``assert`` (stripped under ``-O``, and a silent wrong
answer is worse than a crash).

The ``require_*`` helpers are deliberately tiny: they run on every call of the
hot decisions, so each is a couple of comparisons.
"""

from __future__ import annotations

__all__ = [
    "InvalidArgument",
    "JunctionError",
    "int_error",
    "require_int",
    "require_optional_int",
]


class JunctionError(Exception):
    """The root: ``except JunctionError`` catches every error Junction raises on purpose.

    Constructed with its whole message. Each subclass is one meaning and, where
    one fits, also derives from the built-in error it specialises
    (``ValueError``, ``RuntimeError``, ``NotImplementedError``).
    """


class InvalidArgument(JunctionError, ValueError):
    """An argument broke a documented rule; reads ``argument=value: rule``.

    Attributes:
        argument: the parameter (or attribute) name, e.g. ``"block_size"``.
        value: the value that was passed.
        rule: the rule it broke, in words, e.g. ``"must be >= 1"``.
    """

    def __init__(self, argument: str, value: object, rule: str) -> None:
        self.argument = argument
        self.value = value
        self.rule = rule
        super().__init__(f"{argument}={value!r}: {rule}")

    def __reduce__(self) -> tuple[type[InvalidArgument], tuple[str, object, str]]:
        # Rebuilt from its three fields, not its message: a worker process's error
        # arrives whole.
        return type(self), (self.argument, self.value, self.rule)


def require_int(argument: str, value: object, minimum: int, minimum_name: str = "") -> int:
    """Return ``value`` if it is an ``int`` (not ``bool``) that is ``>= minimum``.

    ``minimum_name`` names the argument the minimum comes from, if any, so the
    rule reads ``must be >= start_block (3)`` rather than a bare number.
    """
    if type(value) is not int or value < minimum:
        raise int_error(argument, value, minimum, minimum_name)
    return value


def int_error(
    argument: str, value: object, minimum: int, minimum_name: str = ""
) -> InvalidArgument:
    """The error :func:`require_int` raises for ``value``, for hot paths that test
    inline and build the error only once the test failed."""
    bound = f"{minimum_name} ({minimum})" if minimum_name else str(minimum)
    kind = "an int " if type(value) is not int else ""
    return InvalidArgument(argument, value, f"must be {kind}>= {bound}")


def require_optional_int(argument: str, value: object, minimum: int) -> int | None:
    """Like :func:`require_int`, but ``None`` is also accepted."""
    if value is None:
        return None
    return require_int(argument, value, minimum)
