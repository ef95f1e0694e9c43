"""What the reference side refuses: attrs validators raising core's error; PoolExhausted.

Every error of the reference side derives from ``junction.core.JunctionError``
(the root, docs/design/error-root.md); a bad argument or attribute raises
core's ``InvalidArgument``, naming it, its value and the rule. The validators
here are attrs validators that do so, for the records a caller builds
(attrs's own raise ``TypeError`` or ``ValueError``, outside the root). An
error about a place rather than one argument (a trace's line, a policy's
call, an output path) is a subclass of its own, constructed with its whole
message.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Collection, Sized
from typing import Any, TypeVar

import attrs

from junction.core import InvalidArgument, JunctionError

__all__ = [
    "PoolExhausted",
    "Validator",
    "int_at_least",
    "int_between",
    "member",
    "non_empty",
    "number_between",
    "of_type",
    "one_of",
]

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]
E = TypeVar("E", bound=enum.Enum)


class PoolExhausted(JunctionError, RuntimeError):
    """An audited engine's pool cannot fit a prompt, even after eviction."""


def int_between(low: int, high: int) -> Validator:
    """An ``int`` (not ``bool``) in ``[low, high]``."""

    def validate(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) is not int or not low <= value <= high:
            raise InvalidArgument(attribute.name, value, f"must be an int in [{low}, {high}]")

    return validate


def int_at_least(minimum: int) -> Validator:
    """An ``int`` (not ``bool``) ``>= minimum``."""

    def validate(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) is not int or value < minimum:
            raise InvalidArgument(attribute.name, value, f"must be an int >= {minimum}")

    return validate


def number_between(
    low: float, high: float = math.inf, *, below_high: bool = False, floats: bool = False
) -> Validator:
    """A number (``float``, or ``int`` unless ``floats``; never ``bool``) in ``[low, high]``,
    or ``[low, high)`` with ``below_high``."""
    noun = "a float" if floats else "a number"
    shut = ")" if below_high else "]"
    rule = (
        f"must be {noun} >= {low:g}"
        if high == math.inf
        else f"must be {noun} in [{low:g}, {high:g}{shut}"
    )

    def validate(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, float | int):
            raise InvalidArgument(attribute.name, value, rule)
        if (floats and type(value) is int) or not low <= value <= high:
            raise InvalidArgument(attribute.name, value, rule)
        if below_high and value == high:
            raise InvalidArgument(attribute.name, value, rule)

    return validate


def member(kind: type[E], argument: str, value: E | str) -> E:
    """``value`` as a member of ``kind`` (itself, or its value); :class:`InvalidArgument`
    naming ``argument`` and the choices otherwise."""
    if isinstance(value, kind):
        return value
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(str(choice.value) for choice in kind)
        raise InvalidArgument(argument, value, f"must be one of {choices}") from None


def one_of(choices: Collection[object]) -> Validator:
    """One of ``choices``."""
    rule = f"must be one of {', '.join(repr(choice) for choice in choices)}"

    def validate(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value not in choices:
            raise InvalidArgument(attribute.name, value, rule)

    return validate


def of_type(*kinds: type) -> Validator:
    """An instance of one of ``kinds`` (``bool`` is not an ``int`` here)."""
    rule = f"must be {' or '.join(kind.__name__ for kind in kinds)}"

    def validate(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        strays_bool = isinstance(value, bool) and bool not in kinds
        if not isinstance(value, kinds) or strays_bool:
            raise InvalidArgument(attribute.name, value, rule)

    return validate


def non_empty(instance: object, attribute: attrs.Attribute[Any], value: Sized) -> None:
    """A collection with at least one item."""
    if len(value) == 0:
        raise InvalidArgument(attribute.name, value, "must not be empty")
