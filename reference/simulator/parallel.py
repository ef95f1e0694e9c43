"""Independent simulation runs in parallel: worker processes on one machine, or a Ray cluster.

A run is a :class:`RunSpec`: the workload's source (:class:`BuiltinSource`
or :class:`TraceSource`, never its tokens), the geometry, the
:class:`Variant`, the :class:`Settings`, and optionally a pool size and
arrival mode resolved against the loaded workload. :func:`run_all` is the
whole interface: results in the order of ``specs``, each equal to
``run_one``'s in-process (every run builds its engine from the same seed), so
where a run ran changes nothing. ``jobs=1`` runs here; otherwise a
``forkserver`` process pool of :func:`workers` processes, or one Ray task per
run (``ray="auto"`` or an address; the ``ray`` extra). A failed run or Ctrl-C
ends the others at once. Why specs cross processes and workloads do not, and
the start method: docs/design/parallel-runs.md.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Literal
from urllib.parse import urlsplit

import attrs

from junction.core import InvalidArgument, JunctionError
from junction.reference.errors import int_at_least, non_empty, of_type, one_of
from junction.reference.workloads.trace import TraceError
from junction.reference.workloads.tracefile import parse_any_trace, read_trace_text, text_digest

from .geometries import GEOMETRIES
from .memory import TRACE_BYTES_PER_FILE_BYTE, memory_limit
from .pool import PoolSize
from .result import RunResult
from .run import ARRIVALS, Arrivals, Settings, run_one
from .variants import Variant
from .workload import Workload, builtin_workload, trace_file_workload

__all__ = [
    "CONNECT_SECONDS",
    "ArrivalsChoice",
    "BuiltinSource",
    "NotTimestamped",
    "RayUnreachable",
    "RunSpec",
    "TraceSource",
    "WorkloadSource",
    "load_workload",
    "ray_endpoint",
    "run_all",
    "run_spec",
    "workers",
]

CONNECT_SECONDS = 5.0

_at_least_1 = int_at_least(1)
_at_least_0 = int_at_least(0)


@attrs.frozen
class BuiltinSource:
    """The built-in agent workload (``simulator.workload.builtin_workload``)."""

    seed: int = attrs.field(validator=_at_least_0)
    sessions: int = attrs.field(validator=_at_least_1)
    turns: int = attrs.field(validator=_at_least_1)
    system_prompt_tokens: int = attrs.field(validator=_at_least_1)

    @property
    def option(self) -> str:
        """The command-line options that give this workload, for messages and the report."""
        return (
            f"--sessions {self.sessions} --turns {self.turns} "
            f"--system-prompt {self.system_prompt_tokens} --seed {self.seed}"
        )

    def load(self) -> Workload:
        return builtin_workload(self.seed, self.sessions, self.turns, self.system_prompt_tokens)


@attrs.frozen
class TraceSource:
    """A trace file of either format, plain or gzip; ``requests``: only its first N."""

    path: str = attrs.field(validator=attrs.validators.and_(of_type(str), non_empty))
    requests: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(_at_least_1)
    )
    # The digest of the text the parent checked (``tracefile.text_digest``): a worker
    # refuses a file that changed since, so every row is computed on the text the
    # report names. ``None``: not checked.
    digest: str | None = None

    @property
    def option(self) -> str:
        """The command-line options that give this workload, for messages and the report."""
        head = "" if self.requests is None else f" --requests {self.requests}"
        return f"--trace {self.path}{head}"

    def load(self) -> Workload:
        """The workload; raises ``workloads.trace.TraceError`` naming the file and line."""
        text = read_trace_text(self.path, memory_limit().bytes // TRACE_BYTES_PER_FILE_BYTE)
        if self.digest is not None and text_digest(text) != self.digest:
            raise TraceError(
                self.path, 0, None, "changed since it was checked: its text is not the one read"
            )
        loaded = parse_any_trace(text, self.path)
        requests = loaded[: self.requests] if self.requests is not None else loaded
        return trace_file_workload(self.path, requests)


WorkloadSource = BuiltinSource | TraceSource
# A run's arrival mode: ``default`` is ``simulate``'s rule, resolved on the loaded workload.
ArrivalsChoice = Arrivals | Literal["default"]


@attrs.frozen
class RunSpec:
    """One run: a workload's source, a geometry, a variant and the settings.

    ``pool``, when given, replaces ``settings.num_blocks`` with its size for
    this geometry on the loaded workload; ``arrivals``, when given, replaces
    ``settings.arrivals``, and ``"default"`` means ``trace`` for a workload
    whose every request has a time, else ``sessions`` (``simulate``'s rule).
    """

    source: WorkloadSource = attrs.field(validator=of_type(BuiltinSource, TraceSource))
    geometry: str = attrs.field(validator=one_of(tuple(GEOMETRIES)))
    variant: Variant = attrs.field(validator=of_type(Variant))
    settings: Settings = attrs.field(validator=of_type(Settings))
    pool: PoolSize | None = attrs.field(
        default=None, validator=attrs.validators.optional(of_type(PoolSize))
    )
    arrivals: ArrivalsChoice | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(one_of((*ARRIVALS, "default"))),
    )


class RayUnreachable(JunctionError, ConnectionError):
    """No Ray cluster answers at the address given; the message names it and why."""


class NotTimestamped(JunctionError, ValueError):
    """``trace`` arrivals asked of a workload whose requests have no times (names it)."""


# The one workload this process holds, and the pools resolved on it (the working set of
# a big trace takes seconds to count: once per geometry and pool, not once per run).
_loaded: tuple[WorkloadSource, Workload] | None = None
_pools: dict[tuple[str, PoolSize, bool], int] = {}


def load_workload(source: WorkloadSource) -> Workload:
    """The workload of ``source``, loaded once while the same source keeps being asked for."""
    global _loaded
    if _loaded is None or _loaded[0] != source:
        _loaded = None  # free the previous workload before loading the next
        _pools.clear()
        _loaded = (source, source.load())
    return _loaded[1]


def run_spec(spec: RunSpec) -> RunResult:
    """Run one spec in this process (what every worker calls)."""
    workload = load_workload(spec.source)
    settings = spec.settings
    if spec.pool is not None:
        key = (spec.geometry, spec.pool, settings.use_eagle)
        if key not in _pools:
            geometry = GEOMETRIES[spec.geometry].build(None, settings.use_eagle)
            blocks = spec.pool.blocks(geometry, workload)
            assert blocks is not None  # a loaded workload resolves every kind
            _pools[key] = blocks
        settings = attrs.evolve(settings, num_blocks=_pools[key])
    if spec.arrivals is not None:
        arrivals = spec.arrivals
        if arrivals == "default":
            arrivals = "trace" if workload.timestamped else "sessions"
        elif arrivals == "trace" and not workload.timestamped:
            raise NotTimestamped(f"{spec.source.option}: its requests have no timestamps")
        settings = attrs.evolve(settings, arrivals=arrivals)
    return run_one(spec.geometry, spec.variant, workload, settings)


def run_all(
    specs: Sequence[RunSpec],
    jobs: int | None = None,
    ray: str | None = None,
    on_result: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Every spec's result, in the order of ``specs``; ``on_result`` hears each as it ends.

    ``jobs``: worker processes (``None``: the CPU count; ``1``: this process).
    ``ray``: a Ray address or ``"auto"`` instead (``jobs`` must then be ``None``).
    The first run that raises stops the others and its error is raised here.
    """
    if jobs is not None and (type(jobs) is not int or jobs < 1):
        raise InvalidArgument("jobs", jobs, "must be an int >= 1 or None")
    if ray is not None and jobs is not None:
        raise InvalidArgument("jobs", jobs, f"must be None with ray={ray!r} (the cluster sets it)")
    report = on_result or (lambda result: None)
    if ray is not None:
        return _on_ray(specs, ray, report)
    processes = workers(jobs, len(specs))
    if processes <= 1:
        results = []
        for spec in specs:
            results.append(run_spec(spec))
            report(results[-1])
        return results
    return _in_processes(specs, processes, report)


def workers(jobs: int | None, runs: int) -> int:
    """The processes :func:`run_all` uses for ``runs`` runs (1: this process)."""
    return max(1, min(jobs or os.cpu_count() or 1, runs))


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP arriving inside the block are raised when it ends, to
    the handlers in place before it (in the main thread; elsewhere none can be set)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    numbers = [getattr(signal, name) for name in _DEFERRED if hasattr(signal, name)]
    previous = {number: signal.signal(number, lambda n, _: arrived.append(n)) for number in numbers}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if arrived:
            signal.raise_signal(arrived[0])


# The signals that end a run: a handler set for them raises in the main thread.
_DEFERRED = ("SIGINT", "SIGTERM", "SIGHUP")


def _ignore_ctrl_c() -> None:
    """A worker leaves Ctrl-C to the caller, which ends it (no traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _in_processes(
    specs: Sequence[RunSpec], workers: int, report: Callable[[RunResult], None]
) -> list[RunResult]:
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if context.get_start_method() == "forkserver":
        context.set_forkserver_preload([__name__])
    results: list[RunResult | None] = [None] * len(specs)
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_ignore_ctrl_c) as executor:
        futures: dict[Future[RunResult], int] = {}
        try:
            # Submitting starts the workers. A signal that ended the run while one was
            # starting would leave it unknown to the executor, to start (and fail
            # loudly) after the run: so a signal waits until every worker is known.
            with _signals_deferred():
                for index, spec in enumerate(specs):
                    futures[executor.submit(run_spec, spec)] = index
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in sorted(finished, key=futures.__getitem__):
                    results[futures[future]] = future.result()
                    report(future.result())
        except BaseException:
            # A failed run or Ctrl-C: the other results are not wanted, so the workers end
            # now, not after their current run (minutes on a trace). The executor has no
            # public way to end them before Python 3.14 (terminate_workers).
            for process in list(executor._processes.values()):
                process.terminate()
            executor.shutdown(wait=True, cancel_futures=True)
            raise
    return [result for result in results if result is not None]


def ray_endpoint(address: str) -> tuple[str, int]:
    """The host and port of a Ray ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``);
    :class:`RayUnreachable` when it has neither, so a command refuses it before any work."""
    try:
        split = urlsplit(address if "://" in address else f"ray://{address}")
        host, port = split.hostname, split.port
    except ValueError:  # an unclosed IPv6 bracket, a port that is not a number
        host, port = None, None
    if not host or port is None:
        raise RayUnreachable(f"{address!r} is not HOST:PORT, ray://HOST:PORT or auto")
    return host, port


def _check_reachable(address: str) -> None:
    """Raise :class:`RayUnreachable` unless something accepts a connection at ``address``."""
    host, port = ray_endpoint(address)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_SECONDS):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise RayUnreachable(f"no Ray cluster answers at {address} ({reason})") from None


def _on_ray(
    specs: Sequence[RunSpec], address: str, report: Callable[[RunResult], None]
) -> list[RunResult]:
    import ray  # the `ray` extra: imported only when asked for

    if address != "auto":
        _check_reachable(address)
    started = not ray.is_initialized()
    if started:  # auto: join the cluster running on this machine, or start one
        try:
            ray.init(
                address=None if address == "auto" else address,
                include_dashboard=False,
                logging_level=logging.WARNING,
            )
        except ConnectionError as error:  # it answers, but not as a Ray it can join
            raise RayUnreachable(
                f"something answers at {address} but Ray cannot join it: {error}"
            ) from None
    try:
        remote: Any = ray.remote(run_spec)
        refs = [remote.remote(spec) for spec in specs]
        index = {ref: position for position, ref in enumerate(refs)}
        results: list[RunResult | None] = [None] * len(specs)
        pending = list(refs)
        while pending:
            finished, pending = ray.wait(pending, num_returns=1)
            for ref in finished:
                try:
                    result: RunResult = ray.get(ref)
                except ray.exceptions.RayTaskError as error:
                    for other in pending:
                        ray.cancel(other)
                    raise error.cause from None  # the run's own error, as in a process
                results[index[ref]] = result
                report(result)
        return [result for result in results if result is not None]
    finally:
        if started:
            ray.shutdown()
