"""What every command refuses in its inputs before any work: one set of checks.

``simulate``, ``sweep``, ``hbm`` and ``replay`` read their input files and
size their work here, so each refuses alike, in one line naming the option,
the value and the rule (:class:`InputError`; the command exits 2). An input
file is a regular file within a cap (``workloads.files``: no device, pipe
or folder; a gzip's text capped too); a trace is loaded whole before any
run, its file size checked against memory before it is read and its lines
parsed in linear time; ``--requests N`` is its first N lines in file order;
a clock a run's float time cannot resolve (one line stamped 0 among
epoch-nanosecond ones) is refused naming the gap; and the memory a run will
need is estimated from what was read (``simulator.memory``'s limit) before
anything is built. The outputs are ``cli.outputs``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from junction.core import JunctionError
from junction.reference.harness import Scenario
from junction.reference.replay.sweep import compiled_bytes
from junction.reference.simulator.memory import (
    TRACE_BYTES_PER_FILE_BYTE,
    SimulationSize,
    memory_limit,
    size_in_words,
)
from junction.reference.workloads.mooncake import HashTraceRequest
from junction.reference.workloads.trace import MAX_OUTPUT_TOKENS, TraceError
from junction.reference.workloads.tracefile import (
    TraceRequests,
    parse_any_trace,
    read_trace_text,
    text_digest,
)

__all__ = [
    "CLOCK_SPAN_MS",
    "REPLAY_BYTES_PER_ID",
    "REPLAY_BYTES_PER_KEY",
    "REPLAY_BYTES_PER_UNIT",
    "REPLAY_BYTES_PER_USE",
    "InputError",
    "LoadedTrace",
    "ReplaySize",
    "check_clock",
    "check_memory",
    "check_replay_memory",
    "check_scenario",
    "choose_replay_engine",
    "load_trace",
]

# A run's clock is a float of milliseconds from the first arrival: up to 2**42 ms
# (139 years) it still resolves 2**-10 ms; beyond, a step's time is lost.
CLOCK_SPAN_MS = 2**42
# ``hbm``'s replay, measured with tracemalloc and rounded up: a hash unit's prefix key
# held for the run, its future uses per group (``belady``), and a key a point's pool
# caches, with its books (tests/cli/test_inputs_hostile.py checks they bound a run).
REPLAY_BYTES_PER_UNIT = 64
REPLAY_BYTES_PER_USE = 256
REPLAY_BYTES_PER_KEY = 400
REPLAY_BYTES_PER_ID = 128  # the compiled replay's dense id of a key, in each process


class InputError(JunctionError, ValueError):
    """A bad input or a run too large for memory; the message is the whole line."""


def check_memory(need: int, what: str) -> None:
    """Raise :class:`InputError` when ``need`` bytes exceed the memory limit; ``what``
    says what needs them (and their parts)."""
    limit = memory_limit()
    if need > limit.bytes:
        raise InputError(
            f"{what} would need about {size_in_words(need)}, over the limit of "
            f"{size_in_words(limit.bytes)} ({limit.source})"
        )


@attrs.frozen
class LoadedTrace:
    """A trace read and parsed: its first requests (file order) and its text's digest."""

    requests: TraceRequests
    digest: str


def load_trace(option: str, path: str, first: int | None = None) -> LoadedTrace:
    """The trace at ``path``, checked before it is read (a regular file whose loading
    fits memory), read within the cap and parsed; ``first``: only its first N lines."""
    trace = Path(path)
    if trace.exists() and not trace.is_file():  # a device or a pipe: no size to check
        raise InputError(f"{option} {trace}: must be a regular file (its size is checked first)")
    limit = memory_limit()
    file_size = trace.stat().st_size if trace.exists() else 0  # missing: reading says
    if file_size * TRACE_BYTES_PER_FILE_BYTE > limit.bytes:
        raise InputError(
            f"{option} {trace}: a file of {size_in_words(file_size)} would need about "
            f"{size_in_words(file_size * TRACE_BYTES_PER_FILE_BYTE)} to load, over the limit "
            f"of {size_in_words(limit.bytes)} ({limit.source})"
        )
    try:
        text = read_trace_text(trace, limit.bytes // TRACE_BYTES_PER_FILE_BYTE)
        requests = parse_any_trace(text, path)
    except TraceError as error:
        raise InputError(f"{option}: {error}") from None
    return LoadedTrace(requests if first is None else requests[:first], text_digest(text))


def check_clock(option: str, requests: Sequence[object]) -> None:
    """Refuse timestamps spanning more than :data:`CLOCK_SPAN_MS`, naming the widest gap
    (where an outlier sits); a trace without timestamps has no clock."""
    stamps = sorted((r.timestamp, r.line) for r in requests if isinstance(r, HashTraceRequest))
    if len(stamps) < 2 or stamps[-1][0] - stamps[0][0] <= CLOCK_SPAN_MS:
        return
    gap = max(range(len(stamps) - 1), key=lambda i: stamps[i + 1][0] - stamps[i][0])
    (early, early_line), (late, late_line) = stamps[gap], stamps[gap + 1]
    raise InputError(
        f"{option}: timestamps span {stamps[-1][0] - stamps[0][0]:,} ms, over the "
        f"{CLOCK_SPAN_MS:,} ms a run's clock resolves; line {early_line} ({early:,}) and "
        f"line {late_line} ({late:,}) are {late - early:,} ms apart: an outlier? (times in ms)"
    )


@attrs.frozen
class ReplaySize:
    """``hbm``'s replay, estimated from the parsed trace before any key is built."""

    units: int  # hash units of every request's prompt: the prefix keys held for the run
    longest: int  # units of the longest request, its output included: its keys at once
    groups: int
    pools: tuple[int, ...]  # each Python-replayed point's pool, in blocks
    workers: int  # processes replaying points: 1 is this one, more are forked
    belady: bool  # every key's future uses are kept too
    keyed: int = 0  # units of every request to its last token: at most the compiled keys
    compiled: tuple[int, ...] = ()  # the pools of the points the compiled replay may take

    @classmethod
    def of(
        cls,
        requests: Sequence[HashTraceRequest],
        unit: int,
        groups: int,
        pools: Sequence[int],
        workers: int,
        belady: bool,
        compiled: Sequence[int] = (),
    ) -> ReplaySize:
        units = sum(r.input_length // unit for r in requests)
        keyed = sum((r.input_length + r.output_length - 1) // unit + 1 for r in requests)
        longest = max(((r.input_length + r.output_length) // unit + 1 for r in requests), default=0)
        return cls(units, longest, groups, tuple(pools), workers, belady, keyed, tuple(compiled))

    @property
    def keys_bytes(self) -> int:
        """The requests' keys (and uses) in this process and each forked worker (a
        worker touches, so copies, them all), and the longest request's keys in each."""
        per_unit = REPLAY_BYTES_PER_UNIT + (
            REPLAY_BYTES_PER_USE * self.groups if self.belady else 0
        )
        held = self.longest * self.groups * REPLAY_BYTES_PER_UNIT * self.workers
        copies = 1 if self.workers == 1 else self.workers + 1
        return self.units * per_unit * copies + held

    @property
    def pools_bytes(self) -> int:
        """Each point's pool full: at most its blocks, at most every key of every group."""
        keys = (self.units + self.longest) * self.groups
        return sum(min(pool, keys) for pool in self.pools) * REPLAY_BYTES_PER_KEY

    @property
    def compiled_bytes(self) -> int:
        """The compiled replay's books (``replay.sweep.compiled_bytes``: a stamp per key,
        group and point, each point's ring) and, in each process, every key's dense id;
        ``pools`` are the other points' (a compiled point's Python pool stays empty)."""
        if not self.compiled:
            return 0
        books = compiled_bytes(self.compiled, self.keyed * self.groups)
        return books + self.keyed * REPLAY_BYTES_PER_ID * self.workers


def check_replay_memory(option: str, size: ReplaySize, unit: int) -> None:
    """Refuse (:class:`InputError`) an ``hbm`` replay over the memory limit."""
    compiled = ""
    if size.compiled:
        compiled = (
            f"; {len(size.compiled)} points' compiled books: {size_in_words(size.compiled_bytes)}"
        )
    check_memory(
        size.keys_bytes + size.pools_bytes + size.compiled_bytes,
        f"{option}: the replay ({size.units:,} hash units of {unit} tokens: "
        f"{size_in_words(size.keys_bytes)}; {len(size.pools)} points' pools: "
        f"{size_in_words(size.pools_bytes)}{compiled})",
    )


def choose_replay_engine(
    option: str, size: Callable[[list[bool]], ReplaySize], compiled: list[bool], unit: int
) -> str:
    """``auto`` where the replay fits with the ``compiled`` points' books (``size`` of
    which points compile), ``python`` where only the Python pools do (the books grow with
    the trace's keys, a pool with its blocks only: said in one line on stderr), else
    :class:`InputError` naming the Python replay's need."""
    try:
        check_replay_memory(option, size(compiled), unit)
    except InputError as over:
        if not any(compiled):
            raise
        check_replay_memory(option, size([False] * len(compiled)), unit)
        print(f"junction hbm: replaying in Python, {over}", file=sys.stderr)
        return "python"
    return "auto"


def check_scenario(where: str, scenario: Scenario) -> None:
    """Refuse a scenario outside its promise's scope, or whose engines would not fit
    memory (both engines of a check: the policy's and the dense bound's, or a tier's)."""
    problem = scenario.promise.out_of_scope(scenario.geometry)
    if problem is not None:
        raise InputError(f"{where}: {problem}")
    if scenario.max_output_tokens > MAX_OUTPUT_TOKENS:
        raise InputError(
            f"{where}: max_output_tokens {scenario.max_output_tokens:,}: at most "
            f"{MAX_OUTPUT_TOKENS:,} (a trace line's limit)"
        )
    prompts = sum(map(len, scenario.prompts)) + len(scenario.probe)
    tokens = prompts + len(scenario.prompts) * scenario.max_output_tokens
    size = SimulationSize(tokens, scenario.num_blocks, workload_built=True, instances=2)
    check_memory(
        size.total_bytes,
        f"{where}: num_blocks {scenario.num_blocks:,}: two engines' pools "
        f"({size_in_words(size.pool_bytes)}) and {tokens:,} tokens",
    )
