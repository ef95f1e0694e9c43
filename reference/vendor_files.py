"""A vendored copy's files as Python imports them, read and written without following a link.

:func:`scan` lists a copy's folder, entering no linked folder: its sources
(regular ``*.py`` files outside ``__pycache__``) and its *strays*, entries
Python may import in a source's place or that a write could be led through:
anything in ``__pycache__`` (a ``.pyc`` whose header matches its source's
size and time is imported instead of it, whatever code it holds), compiled
modules, ``.pth`` files, links and other non-regular files.
:func:`read_regular` reads only a regular file, within a size;
:func:`write_files` and :func:`remove_files` work from the copy's open
folder: each file is created afresh (``O_CREAT | O_EXCL | O_NOFOLLOW``) and
renamed into place, and no link is followed below the folder named.
"""

from __future__ import annotations

import contextlib
import errno
import importlib.machinery
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import attrs

from junction.core import JunctionError

__all__ = [
    "MAX_FILE",
    "Contents",
    "NotVendorable",
    "Stray",
    "read_regular",
    "remove_files",
    "scan",
    "write_files",
]

MAX_FILE = 16 << 20  # bytes of one file of a copy (the core's largest is about 25 KB)
LINK = "a symbolic link"
NOT_REGULAR = "not a regular file"
_IMPORTABLE = (
    *importlib.machinery.EXTENSION_SUFFIXES,
    *importlib.machinery.BYTECODE_SUFFIXES,
    ".so",
    ".pyd",
    ".pth",
    ".pyw",
)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class NotVendorable(JunctionError):
    """A target the command refuses (bad usage): the message names the path and the rule."""


@attrs.frozen
class Stray:
    """A file of the copy that is not a source, and why it matters (``why``)."""

    path: str
    why: str

    @property
    def planted(self) -> bool:
        """A link or a non-regular file: what a write could be led through."""
        return self.why in (LINK, NOT_REGULAR)

    def describe(self) -> str:
        return f"{self.path} ({self.why})"


@attrs.frozen
class Contents:
    """The copy's sources (relative ``/``-separated paths) and its strays, each sorted."""

    sources: tuple[str, ...]
    strays: tuple[Stray, ...]


def _raise(error: OSError) -> None:
    raise error


def scan(folder: Path) -> Contents:
    """What ``folder`` holds that Python could import; a linked folder is a stray, not entered."""
    sources: list[str] = []
    strays: list[Stray] = []
    for root, folders, files in os.walk(folder, onerror=_raise):
        relative = Path(root).relative_to(folder)
        cache = "__pycache__" in relative.parts
        for name in folders + files:
            path = (relative / name).as_posix()
            mode = os.lstat(os.path.join(root, name)).st_mode
            if stat.S_ISLNK(mode):
                strays.append(Stray(path, LINK))
            elif stat.S_ISDIR(mode):
                continue
            elif cache:
                strays.append(Stray(path, "bytecode Python may import in place of its source"))
            elif not stat.S_ISREG(mode):
                strays.append(Stray(path, NOT_REGULAR))
            elif name.endswith(".py"):
                sources.append(path)
            elif name.endswith(_IMPORTABLE):
                strays.append(Stray(path, "importable, and not a source"))
    return Contents(tuple(sorted(sources)), tuple(sorted(strays, key=lambda s: s.path)))


def read_regular(path: Path, limit: int = MAX_FILE) -> bytes:
    """The bytes of the regular file ``path``: :class:`NotVendorable` for a link, a FIFO,
    a device or a folder (none is followed or read), or past ``limit``."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EMLINK):
            raise NotVendorable(f"{path}: {LINK}; a copy holds regular files only") from None
        raise
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotVendorable(f"{path}: {NOT_REGULAR}")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise NotVendorable(f"{path}: over {limit:,} bytes; not a file of the core")
    return data


def _folder(top: int, parts: Iterable[str], create: bool) -> int:
    """The folder ``parts`` below the open folder ``top``, opened without following a link."""
    fd = top
    for part in parts:
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=fd)
        below = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC, dir_fd=fd)
        if fd != top:
            os.close(fd)
        fd = below
    return fd


def _replace(fd: int, name: str, data: bytes) -> None:
    """Write ``data`` to a fresh file beside ``name`` in the open folder ``fd``; rename it."""
    staged = f".{name}.vendoring"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(staged, dir_fd=fd)  # a leftover (or a link): removed itself, never followed
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
    out = os.open(staged, flags, 0o666, dir_fd=fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]
    finally:
        os.close(out)
    os.replace(staged, name, src_dir_fd=fd, dst_dir_fd=fd)


def _each_at(folder: Path, names: Iterable[str], create: bool) -> Iterator[tuple[int, str, str]]:
    """For each relative path: the open folder that holds it, its last part, and the path."""
    top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        for name in names:
            *parents, base = name.split("/")
            fd = _folder(top, parents, create)
            try:
                yield fd, base, name
            finally:
                if fd != top:
                    os.close(fd)
    finally:
        os.close(top)


def write_files(folder: Path, files: Mapping[str, bytes]) -> None:
    """Write each file (relative path: bytes) inside ``folder``, each whole, by rename."""
    for fd, base, name in _each_at(folder, files, create=True):
        _replace(fd, base, files[name])


def remove_files(folder: Path, names: Iterable[str]) -> None:
    """Remove each file (a relative path) from ``folder``, following no link to find it."""
    for fd, base, _ in _each_at(folder, names, create=False):
        os.unlink(base, dir_fd=fd)
