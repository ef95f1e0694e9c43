"""The memory a simulation will need, estimated before anything is built, and its limit.

The reference engine keeps Python objects: a pool of ``--blocks`` blocks and
the workload's prompts are where the memory goes, and both are known (or
computed from the options) before the first allocation. A simulation whose
estimate exceeds :func:`memory_limit` is refused up front with the estimate
and the limit, instead of growing by 100-200 MB/s until the machine kills it.

The constants were measured once with ``tracemalloc`` (CPython 3.11, the
demo's geometries and engine settings; the peak of one run minus what
existed before it), rounded up:

* :data:`POOL_BYTES_PER_BLOCK`: ``BlockPool(n)`` for n = 100,000 and
  1,000,000 holds 219-233 bytes per block at its peak (the ``Block``, its
  list slot, its entry in the free queue).
* :data:`WORKLOAD_BYTES_PER_TOKEN`: ``builtin_workload`` of 200 and 1,000
  sessions holds 13.5 bytes per prompt token (turns share their history's
  int objects, each prompt is its own tuple of pointers).
* :data:`RUN_BYTES_PER_TOKEN`: one run of 24 sessions (285k prompt tokens)
  peaks at 47-54 bytes per prompt token, of which the pool is 32: the engine
  keeps every request and its hashes, about 21 bytes per token.
* :data:`TRACE_BYTES_PER_FILE_BYTE`: loading a trace peaks at 4.1 (ids
  below 100) to 7.4 (5-digit ids) bytes per byte of the file; a trace of
  one-digit ids with no spaces is the worst case, about 10 (two list slots
  of 8 bytes per 2-byte token, and the line).

Runs are one after another, each with a fresh engine, so the peak is the
workload plus one run; a run of several instances holds one pool per
instance, and an external tier holds its blocks too
(:data:`TIER_BYTES_PER_BLOCK`: assumed equal to a pool block, not measured:
an entry of the tier's ordered map and its hash key). The limit is half the
machine's physical memory (``os.sysconf``), leaving the rest to the system
and to the error of the estimate, or, when lower, 80 % of this process's
address-space limit (``RLIMIT_AS``, ``ulimit -v``: past it an allocation
fails outright); where the machine's memory is unknown, a fixed
:data:`FALLBACK_LIMIT`. Rejected: reading cgroup limits (not portable, and a
container's limit is usually its machine's), and guarding the run time too
(a long run shows its progress line and can be stopped; an allocation that
grows without bound cannot).
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
