"""Child processes that run untrusted or long work, and ending them with everything they started.

A policy that forks keeps the caller's pipes open and its children outlive
the run; one that calls ``setsid`` leaves the process group too. So
:class:`Contained` starts a child in a session and process group of its own,
with ``/dev/null`` as its standard streams and no descriptor but the ones
named, confined (:mod:`._confine`: namespaces, no new privileges, resource
limits, this process hidden from it), and marks it and its descendants with
a token.
:meth:`Contained.kill` sends SIGKILL to its group, then to every process
still carrying the token or orphaned under this one (a child subreaper where
Linux allows), until none is found. SIGKILL without SIGTERM first: these
children hold no state worth saving, and one ignoring SIGTERM would cost a
grace period.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from ._confine import confinement, hide, unhide

__all__ = ["MARK", "Contained", "python_module"]

MARK = "JUNCTION_CONTAINED"  # the environment variable that marks a contained process tree
_PROC = Path("/proc")
_PR_SET_CHILD_SUBREAPER = 36
_KILL_SECONDS = 2.0  # how long a kill keeps sweeping for processes that keep appearing


def _become_subreaper() -> None:
    """Make orphaned descendants re-parent to this process (Linux); elsewhere a no-op."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _children() -> set[int]:
    """The pids whose parent is this process (empty where there is no ``/proc``)."""
    me, found = os.getpid(), set()
    for pid in _pids():
        stat = _stat(pid)
        if stat is not None and stat[1] == me:
            found.add(pid)
    return found


def _pids() -> Iterable[int]:
    try:
        names = os.listdir(_PROC)
    except OSError:
        return ()
    return (int(name) for name in names if name.isdigit())


def _stat(pid: int) -> tuple[str, int] | None:
    """``(state, parent pid)`` of ``pid``, or ``None`` once it is gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return fields[0], int(fields[1])


def _marked(token: bytes) -> set[int]:
    """Live processes whose environment carries ``token``."""
    found = set()
    for pid in _pids():
        try:
            environ = (_PROC / str(pid) / "environ").read_bytes()
        except OSError:
            continue
        if token in environ:
            found.add(pid)
    return found


def _reap(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


class Contained:
    """A child process in its own session, killable with every descendant.

    ``argv`` runs with ``pass_fds`` as its only inherited descriptors and
    ``/dev/null`` as its standard streams. :meth:`kill` may be called any
    number of times, from ``finally`` blocks and signal paths alike.
    """

    def __init__(
        self,
        argv: Sequence[str],
        pass_fds: Sequence[int] = (),
        env: dict[str, str] | None = None,
        cpu_seconds: float | None = None,
    ) -> None:
        _become_subreaper()
        self._before = _children()
        self._token = secrets.token_hex(12)
        environment = dict(os.environ if env is None else env)
        environment[MARK] = self._token
        hide()
        try:
            self.process = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                pass_fds=tuple(pass_fds),
                start_new_session=True,
                env=environment,
                preexec_fn=confinement(cpu_seconds),
            )
        except BaseException:
            unhide()
            raise
        self.pid = self.process.pid
        self._group = True  # whether the process group may still have members
        self._hidden = True  # whether this process still hides from the child

    def poll(self) -> int | None:
        """The child's exit status once it ended (negative: the signal), else ``None``."""
        return self.process.poll()

    def exit_status(self, wait: float) -> int | None:
        """The exit status, waiting up to ``wait`` seconds for it (the child may be dying)."""
        try:
            return self.process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """SIGKILL the child, its process group and every descendant found; reap them.

        Sweeps until a sweep finds nothing (or about two seconds pass, against
        a fork loop): the group, the processes carrying this child's token,
        and the orphans re-parented here since the child started.
        """
        token = f"{MARK}={self._token}".encode()
        stop = time.monotonic() + _KILL_SECONDS
        while True:
            found = self._sweep(token)
            if not found or time.monotonic() > stop:
                break
            time.sleep(0.01)
        with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL: it ends
            self.process.wait(timeout=1.0)
        if self._hidden:
            self._hidden = False
            unhide()

    def _sweep(self, token: bytes) -> bool:
        """One round of SIGKILL; whether anything was still alive."""
        alive = False
        if self._group:  # never again once empty: its number could name a new group
            try:
                os.killpg(self.pid, signal.SIGKILL)
                alive = True
            except (ProcessLookupError, PermissionError):
                self._group = False
        orphans = _children() - self._before - {self.pid}
        for pid in _marked(token) | orphans:
            state = _stat(pid)
            if state is None or state[0] == "Z":
                continue
            try:
                os.kill(pid, signal.SIGKILL)
                alive = True
            except (ProcessLookupError, PermissionError):
                pass
        _reap(orphans)
        self.process.poll()
        return alive


def python_module(
    module: str,
    args: Sequence[str],
    pass_fds: Sequence[int],
    path: Sequence[str] = (),
    cpu_seconds: float | None = None,
) -> Contained:
    """``python -m module *args``, contained, with ``pass_fds`` as its only descriptors.

    The child imports what this process can, and first from ``path`` (the
    folders only the child may import from): they and this process's
    ``sys.path`` become the child's ``PYTHONPATH``, not just the
    environment's. ``cpu_seconds`` caps its CPU time.
    """
    folders = [*(os.path.abspath(p) for p in path), *(p or os.getcwd() for p in sys.path)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(folders)}
    argv = [sys.executable, "-m", module, *args]
    return Contained(argv, pass_fds=pass_fds, env=env, cpu_seconds=cpu_seconds)
