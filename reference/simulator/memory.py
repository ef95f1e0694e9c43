"""The memory a simulation will need, estimated before anything is built, and its limit.

The pool and the workload's prompts are where the reference engine's memory
goes, and both are known before the first allocation, so a simulation whose
estimate exceeds :func:`memory_limit` is refused up front with the estimate
and the limit, instead of growing until the machine kills it. The per-block
and per-token constants are measured upper bounds; the limit is half the
physical memory, or 80 % of ``RLIMIT_AS`` when lower
(docs/design/memory-estimate.md).
"""

from __future__ import annotations

import math
import os
import resource

import attrs

from .workload import MESSAGE_TOKENS, OUTPUT_TOKENS

__all__ = [
    "FALLBACK_LIMIT",
    "POOL_BYTES_PER_BLOCK",
    "RUN_BYTES_PER_TOKEN",
    "TIER_BYTES_PER_BLOCK",
    "TRACE_BYTES_PER_FILE_BYTE",
    "WORKLOAD_BYTES_PER_TOKEN",
    "MemoryLimit",
    "SimulationSize",
    "builtin_prompt_tokens",
    "memory_limit",
    "size_in_words",
]

POOL_BYTES_PER_BLOCK = 240
TIER_BYTES_PER_BLOCK = POOL_BYTES_PER_BLOCK
WORKLOAD_BYTES_PER_TOKEN = 16
RUN_BYTES_PER_TOKEN = 24
TRACE_BYTES_PER_FILE_BYTE = 10
FALLBACK_LIMIT = 4 * 2**30


@attrs.frozen
class MemoryLimit:
    """The most a simulation may need, and where that number comes from (for messages)."""

    bytes: int
    source: str


def memory_limit() -> MemoryLimit:
    """Half the physical memory, or :data:`FALLBACK_LIMIT` where it cannot be read."""
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # no sysconf, or no such name here
        physical = -1
    if physical <= 0:
        limit = MemoryLimit(FALLBACK_LIMIT, "a fixed limit: this machine's memory is unknown")
    else:
        limit = MemoryLimit(physical // 2, f"half of this machine's {size_in_words(physical)}")
    address_space = resource.getrlimit(resource.RLIMIT_AS)[0]
    if address_space != resource.RLIM_INFINITY and address_space * 4 // 5 < limit.bytes:
        words = size_in_words(address_space)
        return MemoryLimit(address_space * 4 // 5, f"80 % of the address-space limit of {words}")
    return limit


def builtin_prompt_tokens(sessions: int, turns: int, system_prompt_tokens: int) -> int:
    """The expected prompt tokens of ``builtin_workload``, computed without building it.

    Turn ``t`` (from 1) resends the system prompt, ``t`` messages and ``t - 1``
    replies, each of the mean length of its range.
    """
    message = sum(MESSAGE_TOKENS) // 2
    reply = sum(OUTPUT_TOKENS) // 2
    per_session = (
        turns * system_prompt_tokens
        + message * turns * (turns + 1) // 2
        + reply * turns * (turns - 1) // 2
    )
    return sessions * per_session


@attrs.frozen
class SimulationSize:
    """The estimate for one simulation: the workload (built here or loaded) and one run."""

    prompt_tokens: int
    blocks: int  # one instance's pool
    workload_built: bool  # False: already in memory (a loaded trace)
    instances: int = 1  # engines, each with its own pool of ``blocks``
    tier_blocks: int = 0  # the external tier the instances share

    @property
    def workload_bytes(self) -> int:
        per_token = RUN_BYTES_PER_TOKEN + (WORKLOAD_BYTES_PER_TOKEN if self.workload_built else 0)
        return self.prompt_tokens * per_token

    @property
    def pool_bytes(self) -> int:
        """Every instance's pool and the tier."""
        pools = self.blocks * self.instances * POOL_BYTES_PER_BLOCK
        return pools + self.tier_blocks * TIER_BYTES_PER_BLOCK

    @property
    def total_bytes(self) -> int:
        return self.workload_bytes + self.pool_bytes


def size_in_words(size: int) -> str:
    """``1.5 GiB``; a power of ten of bytes beyond the units."""
    if size >= 1024 * 2**60:
        return f"10^{math.floor(math.log10(size))} bytes"
    for unit, scale in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"
