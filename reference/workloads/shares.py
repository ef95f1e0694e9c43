"""Relative shares of a workload's per-request kinds, and the draw both mixes make.

A finish mix (``finishes``) and a resend mix (``resends``) each give a kind
of an enum a relative share (any scale, not all 0) and draw a request's kind
from its submission index and the mix's seed alone, so that changing one mix
changes no other draw of the workload.
"""

from __future__ import annotations

import enum
import math
import random
from collections.abc import Sequence
from typing import TypeVar

import attrs

from junction.core import InvalidArgument

__all__ = ["check_share", "describe_shares", "draw"]

Kind = TypeVar("Kind", bound=enum.Enum)


def check_share(instance: object, attribute: attrs.Attribute[float], value: object) -> None:
    """An attrs validator: a share is a finite number ``>= 0`` (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(attribute.name, value, "must be a finite number >= 0")
    if not math.isfinite(value) or value < 0:
        raise InvalidArgument(attribute.name, value, "must be a finite number >= 0")


def draw(kinds: Sequence[Kind], shares: Sequence[float], seed: int, index: int) -> Kind:
    """Request ``index``'s kind: each of ``kinds`` with its share of the total."""
    nonzero = [kind for kind, share in zip(kinds, shares, strict=True) if share]
    if len(nonzero) == 1:
        return nonzero[0]
    point = random.Random(f"{seed}/{index}").random() * sum(shares)
    for kind, share in zip(kinds, shares, strict=True):
        if point < share:
            return kind
        point -= share
    return nonzero[-1]  # rounding at the top end


def describe_shares(kinds: Sequence[enum.Enum], shares: Sequence[float]) -> str:
    """``stopped 0.8, length_capped 0.2``: the non-zero shares, normalised."""
    total = sum(shares)
    return ", ".join(
        f"{kind.value} {share / total:.3g}"
        for kind, share in zip(kinds, shares, strict=True)
        if share
    )
