"""What a contained child is denied, set between fork and exec, and what its parent hides.

Run as the child's ``preexec_fn`` (:func:`confinement`): on Linux the child
dies with the thread that started it, enters a new user and PID namespace
where the kernel allows it unprivileged (or, for root, a PID namespace alone
with every capability dropped), can gain no privilege (``no_new_privs``),
writes only beneath the temporary folder and signals no process outside its
own where Landlock allows, and runs under resource limits (address space,
open files, CPU, core dumps, processes). :func:`hide` makes this process non-dumpable while children
run, so a same-user child can neither trace it nor open its ``/proc``
files. Elsewhere only the resource limits apply. Each step that the kernel
refuses is skipped: containment is best effort per step, stated per
platform in docs/fuzzing.md; why each step: docs/design/fuzz-isolation.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import resource
import signal
import struct
import sys
import tempfile
from collections.abc import Callable

__all__ = [
    "ADDRESS_SPACE",
    "OPEN_FILES",
    "PROCESSES",
    "confinement",
    "enter_pid_namespace",
    "hide",
    "unhide",
]

ADDRESS_SPACE = 4 << 30  # bytes of virtual memory a contained child may map
OPEN_FILES = 256
PROCESSES = 256  # processes a contained child may add to its user's count (not for root)

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_PR_SET_PDEATHSIG = 1
_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_CAPABILITY_VERSION_3 = 0x20080522
_LANDLOCK_SYSCALLS = (444, 445, 446)  # create_ruleset, add_rule, restrict_self (x86-64, arm64)
_LANDLOCK_WRITE_V1 = 0b1_1111_1111_0010  # write, remove and make: every write but a read's
_LANDLOCK_WRITE_V2 = 1 << 13  # refer (a rename or link across folders)
_LANDLOCK_WRITE_V3 = 1 << 14  # truncate
_LANDLOCK_SCOPE_SIGNAL = 1 << 1  # ABI 6: no signal to a process outside the domain
_LINUX = sys.platform.startswith("linux")


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc() if _LINUX else None


def _call(name: str, *args: int | ctypes.c_void_p) -> bool:
    """``libc.name(*args)``; whether it returned 0 (False where there is none)."""
    function = getattr(_LIBC, name, None)
    return function is not None and function(*args) == 0


def _drop_capabilities() -> None:
    """Empty the bounding set, then every set: an exec as root regains nothing."""
    for capability in range(64):
        if not _call("prctl", _PR_CAPBSET_DROP, capability, 0, 0, 0) and capability > 40:
            break  # past the last capability this kernel knows

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]

    header, data = Header(_CAPABILITY_VERSION_3, 0), (Data * 2)()
    _call(
        "capset", ctypes.c_void_p(ctypes.addressof(header)), ctypes.c_void_p(ctypes.addressof(data))
    )


def _landlock(writable: tuple[str, ...]) -> None:
    """Allow writes only beneath ``writable`` and signals only inside this domain (Landlock)."""
    syscall = getattr(_LIBC, "syscall", None)
    if syscall is None or not sys.platform.startswith("linux"):
        return
    create, add, restrict = _LANDLOCK_SYSCALLS
    abi = syscall(create, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # the ABI version
    if abi < 1:
        return
    write = _LANDLOCK_WRITE_V1 | (_LANDLOCK_WRITE_V2 if abi >= 2 else 0)
    write |= _LANDLOCK_WRITE_V3 if abi >= 3 else 0
    attr = (ctypes.c_uint64 * 3)(write, 0, _LANDLOCK_SCOPE_SIGNAL if abi >= 6 else 0)
    size = 24 if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = syscall(create, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return
    for folder in writable:
        try:
            beneath = os.open(folder, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        # A file takes only a file's rights (write, truncate): a folder's make it refused.
        rights = write if os.path.isdir(folder) else write & (2 | _LANDLOCK_WRITE_V3)
        rule = struct.pack("=Qi", rights, beneath)  # landlock_path_beneath_attr, packed
        syscall(add, ruleset, 1, ctypes.c_char_p(rule), ctypes.c_uint32(0))
        os.close(beneath)
    syscall(restrict, ruleset, ctypes.c_uint32(0))
    os.close(ruleset)


def _limit(kind: int, value: int) -> None:
    with contextlib.suppress(ValueError, OSError):
        hard = resource.getrlimit(kind)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))


def _user_processes() -> int | None:
    """How many processes this user runs now; ``None`` where there is no ``/proc``."""
    me, count = os.getuid(), 0
    try:
        entries = list(os.scandir("/proc"))
    except OSError:
        return None
    for entry in entries:
        with contextlib.suppress(OSError):
            count += entry.name.isdigit() and entry.stat().st_uid == me
    return count


def confinement(cpu_seconds: float | None) -> Callable[[], None]:
    """The ``preexec_fn`` that confines a child; ``cpu_seconds``: its CPU time (or no cap)."""
    root = hasattr(os, "getuid") and os.getuid() == 0
    running = None if root else _user_processes()  # root is exempt from the count
    processes = None if running is None else running + PROCESSES
    writable = (tempfile.gettempdir(), os.devnull)

    def confine() -> None:
        if _LINUX:
            _call("prctl", _PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if not _call("unshare", _CLONE_NEWUSER | _CLONE_NEWPID) and root:
                _call("unshare", _CLONE_NEWPID)
                _drop_capabilities()
            _call("prctl", _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            _landlock(writable)  # needs no_new_privs first
        _limit(resource.RLIMIT_AS, ADDRESS_SPACE)
        _limit(resource.RLIMIT_NOFILE, OPEN_FILES)
        _limit(resource.RLIMIT_CORE, 0)
        if cpu_seconds is not None:
            _limit(resource.RLIMIT_CPU, math.ceil(cpu_seconds))
        if processes is not None:
            _limit(resource.RLIMIT_NPROC, processes)

    return confine


def enter_pid_namespace() -> None:
    """In a child whose next child starts a PID namespace: fork once; return in that child.

    The process that called :func:`confinement`'s ``unshare`` stays outside
    the namespace it made; its first child is the namespace's init, and
    when that ends the kernel kills every process in it, however detached.
    This process waits for it, hidden, and ends as it ended. Elsewhere a
    no-op.
    """
    try:
        ours = os.readlink("/proc/self/ns/pid")
    except OSError:
        return  # no /proc: no namespace either
    try:
        if os.readlink("/proc/self/ns/pid_for_children") == ours:
            return
    except FileNotFoundError:
        pass  # a namespace made but not yet entered by a child has no link yet
    child = os.fork()
    if child == 0:
        _call("prctl", _PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        return
    _call("prctl", _PR_SET_DUMPABLE, 0, 0, 0, 0)  # the namespace's processes cannot trace it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


_hiding = [0, 1]  # children running that this process hides from; its dumpable before


def hide() -> None:
    """Make this process non-dumpable until as many :func:`unhide` calls (Linux): a
    same-user child can neither ptrace it nor open its ``/proc/<pid>/fd``, ``mem``
    or ``environ``."""
    if _LIBC is None:
        return
    if _hiding[0] == 0:
        _hiding[1] = _LIBC.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
        _call("prctl", _PR_SET_DUMPABLE, 0, 0, 0, 0)
    _hiding[0] += 1


def unhide() -> None:
    """Undo one :func:`hide`; the last one restores what this process was."""
    if _LIBC is None or _hiding[0] == 0:
        return
    _hiding[0] -= 1
    if _hiding[0] == 0 and _hiding[1] > 0:
        _call("prctl", _PR_SET_DUMPABLE, _hiding[1], 0, 0, 0)
