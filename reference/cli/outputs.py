"""A command's output files: checked before the run, written all at once after it.

A command that runs for minutes must not find out at the end that it cannot
write its result, nor leave half a result behind. So every command that
writes files does two things with this module:

* before it starts working, :func:`check_folder` / :func:`check_file` refuse
  an output that cannot be written: a folder that is a file or cannot be
  created (nothing is created yet), a target that is a folder or read-only,
  a parent that is not writable. The message names the option, the path and
  the rule; the command exits with status 2.
* after it has computed everything, :func:`commit` writes the whole set:
  every file's bytes are rendered first, each is written to a temporary file
  in the target folder, and only then are they all moved into place with
  ``os.replace`` (atomic per file on POSIX). A failure before the moves
  removes the temporary files and the folders this call created, leaving the
  previous set untouched. Files of the set not produced this time (the PNG
  under ``--no-plot``) are removed after the moves, so the folder never
  holds a stale file beside fresh ones. :func:`rewrite` does the same for a
  file edited by a function that reads and writes a path (docs/findings.md's
  sections): the function edits a private copy, committed at the end.
  :func:`write_set` is :func:`commit` for a command's last step: it says on
  standard error what was written, or why nothing was, and gives the exit
  status.

The moves themselves are the only window: a failure between two
``os.replace`` calls in one folder (the folder removed or made read-only
meanwhile) can still leave a mix; nothing cheaper closes it. Rejected:
writing into a fresh folder and renaming it over the old one (the output
folder is a user's folder that may hold other files, such as ``docs/``),
and ``NamedTemporaryFile`` (it creates files with mode 0600, which the
replaced files would inherit; here the temporary file gets the umask's mode,
or the replaced file's).
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from junction.reference.errors import JunctionError

__all__ = ["OutputError", "check_file", "check_folder", "commit", "rewrite", "write_set"]


class OutputError(JunctionError):
    """An output that cannot be written; the message names the option or path and why."""


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK | os.X_OK)


def _check_creatable(option: str, value: Path, folder: Path) -> None:
    """``folder`` exists as a writable folder, or its nearest existing ancestor does.

    ``value`` is what the option named (``folder`` itself, or a file in it).
    """
    named = "" if value == folder else f"{folder} "
    if folder.exists():
        if not folder.is_dir():
            raise OutputError(f"{option} {value}: {named}is a file, not a folder")
        if not _writable(folder):
            raise OutputError(f"{option} {value}: the folder {named}is not writable")
        return
    ancestor = next(p for p in folder.absolute().parents if p.exists())
    if not ancestor.is_dir():
        raise OutputError(f"{option} {value}: cannot create the folder: {ancestor} is a file")
    if not _writable(ancestor):
        raise OutputError(f"{option} {value}: cannot create the folder: {ancestor} is not writable")


def _check_target(option: str, target: Path) -> None:
    if target.is_dir():
        raise OutputError(f"{option} {target}: is a folder, not a file")
    if target.exists() and not os.access(target, os.W_OK):
        raise OutputError(f"{option} {target}: the file is read-only")


def check_folder(option: str, folder: Path, names: Iterable[str]) -> None:
    """Raise :class:`OutputError` unless ``folder`` can receive the files ``names``."""
    _check_creatable(option, folder, folder)
    for name in names:
        _check_target(option, folder / name)


def check_file(option: str, path: Path) -> None:
    """Raise :class:`OutputError` unless the file ``path`` can be written."""
    _check_creatable(option, path, path.parent)
    _check_target(option, path)


def _temporary(target: Path) -> Path:
    """A new empty file beside ``target``, with ``target``'s mode or the umask's."""
    temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    if target.exists():
        os.chmod(temp, stat.S_IMODE(target.stat().st_mode))
    return temp


@contextmanager
def _staged(folder: Path) -> Iterator[Callable[[Path], Path]]:
    """Yield ``stage(target) -> temporary file``; on a clean exit move every one into place.

    ``folder`` (and its missing parents) is created first. On any failure
    the temporary files and the folders created are removed and an
    ``OSError`` becomes an :class:`OutputError`; nothing is moved.
    """
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    temps: dict[Path, Path] = {}
    writing = [folder]  # what a failure names: the folder, then the file being written

    def stage(target: Path) -> Path:
        writing[0] = target
        temps[target] = _temporary(target)
        return temps[target]

    try:
        folder.mkdir(parents=True, exist_ok=True)
        yield stage
    except BaseException as error:
        for temp in temps.values():
            temp.unlink(missing_ok=True)
        for made in missing:  # innermost first
            if made.exists():
                made.rmdir()
        if isinstance(error, OSError):
            raise OutputError(f"cannot write {writing[0]}: {error.strerror or error}") from None
        raise
    for target, temp in temps.items():
        os.replace(temp, target)


def commit(folder: Path, files: Mapping[str, bytes], stale: Iterable[str] = ()) -> list[Path]:
    """Write ``files`` (name -> bytes) into ``folder`` all at once; remove ``stale`` names.

    Returns the paths written. Raises :class:`OutputError` (the previous set
    left as it was) when a file cannot be written.
    """
    with _staged(folder) as stage:
        for name, data in files.items():
            stage(folder / name).write_bytes(data)
    for name in stale:
        (folder / name).unlink(missing_ok=True)
    return [folder / name for name in files]


def write_set(
    prog: str, folder: Path, files: Mapping[str, bytes], stale: Iterable[str] = ()
) -> int:
    """:func:`commit`, then a line on standard error: the paths written (status 0),
    or why nothing was (status 1, the previous set left as it was)."""
    try:
        written = commit(folder, files, stale=stale)
    except OutputError as error:
        print(f"{prog}: error: {error}; nothing written", file=sys.stderr)
        return 1
    print(f"wrote {', '.join(map(str, written))}", file=sys.stderr)
    return 0


def rewrite(path: Path, edit: Callable[[Path], None]) -> None:
    """Let ``edit`` rewrite a copy of ``path``, then :func:`commit` the copy in its place.

    ``edit`` reads and writes the path it is given (a missing ``path`` gives
    it no file, as the real one would); if it fails, ``path`` is left as it
    was. The copy lives in a private temporary folder, not beside ``path``, so
    a long edit (a run of minutes) leaves nothing in the user's folder while
    it goes on, nor after a kill. Raises :class:`OutputError` when the copy
    cannot be made or the result cannot be written.
    """
    with tempfile.TemporaryDirectory(prefix="junction-") as private:
        copy = Path(private) / path.name
        try:
            if path.exists():
                shutil.copyfile(path, copy)
        except OSError as error:
            raise OutputError(f"cannot read {path}: {error.strerror or error}") from None
        try:
            edit(copy)
            data = copy.read_bytes()
        except OSError as error:
            raise OutputError(f"cannot write {path}: {error.strerror or error}") from None
    commit(path.parent, {path.name: data})
