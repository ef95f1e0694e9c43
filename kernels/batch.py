"""Batched inputs: Python scalars or 1-D tensors, validated like ``core``.

A batch is a set of requests, one row each. Every per-request argument is a
1-D integer tensor with one entry per row, or a Python scalar for every row.
Core's rules are checked with one vectorised comparison each, and a
violation raises :class:`core.InvalidArgument` naming the argument and the
first offending row (``num_tokens[3]``), its value and the rule: never a
silently clamped or skipped row. Rows are int64, so a value int64 cannot
hold is rejected, not wrapped (a scalar outside int64; a uint16/32/64
tensor), and :func:`require_sum_at_most` checks a sum against a bound without
forming it (docs/design/int64-offsets.md).
"""

from __future__ import annotations

import torch

from junction.core import InvalidArgument

__all__ = [
    "BatchShape",
    "flag_rows",
    "int_rows",
    "require_at_least",
    "require_int64",
    "require_integer_dtype",
    "require_rows",
    "require_sum_at_most",
]

# The integer dtypes whose every value int64 holds.
_INTEGER_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
_INT64 = torch.iinfo(torch.int64)


class BatchShape:
    """The number of rows and the device shared by every tensor argument."""

    def __init__(self, arguments: dict[str, object]) -> None:
        rows: int | None = None
        device: torch.device | None = None
        for name, value in arguments.items():
            if not isinstance(value, torch.Tensor):
                continue
            if value.dim() != 1:
                raise InvalidArgument(
                    name, tuple(value.shape), "a batched argument must be a 1-D tensor"
                )
            if rows is None:
                rows, device = value.shape[0], value.device
            elif value.shape[0] != rows:
                raise InvalidArgument(
                    name, value.shape[0], f"every batched argument needs {rows} rows"
                )
            elif value.device != device:
                raise InvalidArgument(name, str(value.device), f"must be on {device}")
        if rows is None or device is None:
            raise InvalidArgument(
                "arguments", sorted(arguments), "at least one must be a 1-D tensor (the batch)"
            )
        self.rows = rows
        self.device = device


def int_rows(name: str, value: object, shape: BatchShape) -> torch.Tensor:
    """``value`` as an int64 tensor of ``shape.rows`` rows.

    A scalar becomes a stride-0 view of one element, so a shared argument
    costs no memory traffic in the vectorised formulas.
    """
    if isinstance(value, torch.Tensor):
        return require_integer_dtype(name, value).to(torch.int64)
    if type(value) is not int:
        raise InvalidArgument(name, value, "must be an int or a 1-D integer tensor")
    return torch.full(
        (1,), require_int64(name, value), dtype=torch.int64, device=shape.device
    ).expand(shape.rows)


def require_int64(name: str, value: int) -> int:
    """``value`` if int64 holds it (core takes any Python int; these paths cannot)."""
    if not _INT64.min <= value <= _INT64.max:
        raise InvalidArgument(name, value, "must fit in int64 (the batched paths compute in it)")
    return value


def require_integer_dtype(name: str, value: torch.Tensor) -> torch.Tensor:
    """``value`` if its dtype is an integer type whose every value int64 holds."""
    if value.dtype not in _INTEGER_DTYPES:
        raise InvalidArgument(
            name, str(value.dtype), "must be an int8, int16, int32, int64 or uint8 tensor"
        )
    return value


def flag_rows(name: str, value: object, shape: BatchShape) -> tuple[torch.Tensor, bool | None]:
    """``value`` as bool rows, plus the flag itself when one bool applies to every row."""
    if isinstance(value, torch.Tensor):
        if value.dtype is not torch.bool:
            raise InvalidArgument(name, str(value.dtype), "must be a bool tensor")
        return value, None
    if type(value) is not bool:
        raise InvalidArgument(name, value, "must be a bool or a 1-D bool tensor")
    rows = torch.full((1,), value, dtype=torch.bool, device=shape.device).expand(shape.rows)
    return rows, value


def require_at_least(name: str, values: torch.Tensor, minimum: int, rule: str) -> None:
    """Raise for the first row below ``minimum`` (one reduction when all rows pass)."""
    if values.numel() and int(values.min()) < minimum:
        require_rows(name, values, values < minimum, rule)


def require_rows(name: str, values: torch.Tensor, bad: torch.Tensor, rule: str) -> None:
    """Raise for the first row where ``bad`` holds."""
    if bool(bad.any()):
        row = int(bad.nonzero()[0, 0])
        raise InvalidArgument(f"{name}[{row}]", int(values[row]), rule)


def require_sum_at_most(
    name: str,
    values: torch.Tensor,
    addends: tuple[torch.Tensor, ...],
    limit: torch.Tensor,
    rule: str,
) -> None:
    """Raise for the first row where ``values + sum(addends) > limit``, exactly.

    Every operand must be ``>= 0``. The sum itself may leave int64, so this
    subtracts from the room left instead: ``limit - values`` fits, and
    clamping the room at ``-1`` before each subtraction keeps a row that is
    already over negative while the difference stays ``>= -1 - (2**63 - 1)``.
    """
    room = limit - values
    for addend in addends:
        room = room.clamp(min=-1) - addend
    require_rows(name, values, room < 0, rule)
