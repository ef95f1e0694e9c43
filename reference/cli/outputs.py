"""A command's output files: checked before the run, written all at once after it.

A command that runs for minutes must not find out at the end that it cannot
write, nor leave half a result. :func:`check_folder` / :func:`check_file`
refuse an output that cannot be written before any work (status 2, naming
the option, the path and the rule), and take a lock so a second run into the
same output is refused (its file created ``O_EXCL|O_NOFOLLOW`` in the shared
temporary folder, never through a planted link, and removed when released).
:func:`commit` writes the whole set after the work: every file rendered,
written to a temporary file beside its target, then all moved into place
(:func:`commit_files`: in several folders, every one staged and journalled,
then one decision file, before any move); a failure leaves the previous set,
and files of the set not produced this time are removed. :func:`rewrite`
does the same for a file edited in place; :func:`write_set` is
:func:`commit` as a command's last step. A journal makes a set one unit
even against a kill (docs/design/output-sets.md).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from junction.core import JunctionError

__all__ = [
    "OutputError",
    "check_file",
    "check_folder",
    "commit",
    "commit_files",
    "lock_file",
    "rewrite",
    "write_set",
]


class OutputError(JunctionError):
    """An output that cannot be written; the message names the option or path and why."""


JOURNAL_PREFIX = ".junction-commit-"  # a set's journal: this, its names' digest, ".json"
DECISION_PREFIX = ".junction-decided-"  # a set over several folders: committed once present
# output (real path) -> the descriptor holding its lock, and the lock file
_held: dict[str, tuple[int, Path]] = {}


def _writable(path: Path) -> bool:
    """Whether a file can be created in the folder ``path``: its mode, then a real try."""
    if not os.access(path, os.W_OK | os.X_OK):
        return False
    probe = path / f".junction-probe.{secrets.token_hex(4)}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.unlink()
    return True


def lock_file(output: Path) -> Path:
    """The lock file of ``output`` (one per real path, in the temporary folder)."""
    name = hashlib.sha256(os.path.realpath(output).encode()).hexdigest()[:24]
    return Path(tempfile.gettempdir()) / f"junction-output-{name}.lock"


def _open_lock(option: str, output: Path, path: Path) -> int:
    """A descriptor of the lock file ``path``: created new, or one of this user's already
    there; never through a link planted in the shared temporary folder."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        try:
            return os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            fd = os.open(path, flags | os.O_NONBLOCK)
    except OSError as error:
        raise OutputError(
            f"{option} {output}: cannot take its lock {path} ({error.strerror or error}); "
            "remove it if no run holds it"
        ) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise OutputError(
            f"{option} {output}: its lock {path} is not a file of this user's; remove it"
        )
    return fd


def _lock(option: str, output: Path) -> None:
    """Hold an exclusive lock on ``output`` for this process, or raise naming the holder.

    The lock file is removed when released (:func:`_unlock`); a run that opened it
    just before checks, once it holds the lock, that the file is still the one
    named, and otherwise tries again.
    """
    key = os.path.realpath(output)
    if key in _held:
        return
    path = lock_file(output)
    for _ in range(_LOCK_TRIES):
        fd = _open_lock(option, output, path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise OutputError(
                f"{option} {output}: another run is writing into it (pid {holder}); "
                "wait for it or choose another"
            ) from None
        with contextlib.suppress(FileNotFoundError):
            named = os.stat(path, follow_symlinks=False)
            held = os.fstat(fd)
            if (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino):
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode())
                _held[key] = (fd, path)
                return
        os.close(fd)  # removed by the run that released it: take the new one
    raise OutputError(f"{option} {output}: another run is writing into it; try again")


_LOCK_TRIES = 8


def _unlock(output: Path) -> None:
    held = _held.pop(os.path.realpath(output), None)
    if held is not None:
        fd, path = held
        with contextlib.suppress(OSError):  # removed while held: no one else holds it
            path.unlink()
        os.close(fd)


@atexit.register
def _release_all() -> None:
    """Locks a run took and never committed (it was refused or ended early) go with it."""
    for key in list(_held):
        _unlock(Path(key))


def _journal(folder: Path, names: Iterable[str]) -> Path:
    """The journal of the set ``names`` in ``folder`` (sets of other names have their own)."""
    digest = hashlib.sha256("\0".join(sorted(names)).encode()).hexdigest()[:12]
    return folder / f"{JOURNAL_PREFIX}{digest}.json"


def _decision(folder: Path) -> Path:
    """A new decision file's path: a set spanning folders is committed once it exists."""
    return folder / f"{DECISION_PREFIX}{secrets.token_hex(6)}.json"


def _finish_journal(folder: Path) -> None:
    """Complete the moves killed commits into ``folder`` left in their journals; undo a
    journal whose set's decision was never written; drop decisions no journal needs."""
    with contextlib.suppress(OSError):
        entries = list(os.scandir(folder))
        for journal in (Path(e.path) for e in entries if _JOURNAL_NAME.fullmatch(e.name)):
            record = _read_json(journal)
            moves = record.get("moves", [])
            decided = record.get("decision")
            if isinstance(decided, str) and not Path(decided).exists():
                for temp, _ in moves:  # killed before the set was decided: undone
                    (folder / Path(temp).name).unlink(missing_ok=True)
            else:
                for temp, target in moves:
                    source = folder / Path(temp).name
                    if source.exists():
                        os.replace(source, folder / Path(target).name)
                for name in record.get("stale", []):
                    (folder / Path(name).name).unlink(missing_ok=True)
            journal.unlink(missing_ok=True)
        for decision in (Path(e.path) for e in entries if _DECISION_NAME.fullmatch(e.name)):
            journals = _read_json(decision).get("journals", [])
            if not any(Path(j).exists() for j in journals if isinstance(j, str)):
                decision.unlink(missing_ok=True)


def _read_json(path: Path) -> dict[str, Any]:
    """A journal's or decision's record; an unreadable one is empty (nothing to redo)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if type(record) is dict else {}


_JOURNAL_NAME = re.compile(rf"{re.escape(JOURNAL_PREFIX)}[0-9a-f]{{12}}\.json")
_DECISION_NAME = re.compile(rf"{re.escape(DECISION_PREFIX)}[0-9a-f]{{12}}\.json")


def _remove_leftovers(folder: Path, names: Iterable[str], keep: set[Path]) -> None:
    """Remove this module's temporary files for ``names`` and for any journal (a killed
    run's), but ``keep``."""
    patterns = [re.compile(rf"\.{re.escape(n)}\.[0-9a-f]{{8}}\.tmp") for n in names]
    for name in (_JOURNAL_NAME, _DECISION_NAME):
        patterns.append(re.compile(rf"\.{name.pattern}\.[0-9a-f]{{8}}\.tmp"))
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if any(p.fullmatch(entry.name) for p in patterns) and Path(entry.path) not in keep:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


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
    """Raise :class:`OutputError` unless ``folder`` can receive the files ``names``.

    Takes the folder's lock (held until :func:`commit` into it ends) and
    finishes a commit a killed run left half done.
    """
    _check_creatable(option, folder, folder)
    for name in names:
        _check_target(option, folder / name)
    _lock(option, folder)
    if folder.is_dir():
        _finish_journal(folder)


def check_file(option: str, path: Path) -> None:
    """Raise :class:`OutputError` unless the file ``path`` can be written (and lock it)."""
    _check_creatable(option, path, path.parent)
    _check_target(option, path)
    _lock(option, path)
    if path.parent.is_dir():
        _finish_journal(path.parent)


def _temporary(target: Path) -> Path:
    """A new empty file beside ``target``, with ``target``'s mode or the umask's."""
    temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    if target.exists():
        os.chmod(temp, stat.S_IMODE(target.stat().st_mode))
    return temp


class _Staging:
    """One folder's part of a set: files staged beside their targets, a journal, the moves.

    :meth:`open` creates the folder (and its missing parents), finishes a
    commit a killed run left there and yields temporary files to
    :meth:`stage`; :meth:`prepare` writes the journal (naming the set's
    ``decision`` file when the set spans several folders); :meth:`move` puts
    every file in place, removes the ``stale`` names, then the journal.
    :meth:`abort`, before any move, removes what was staged and the folders
    created. A failure names the folder, or the file being written.
    """

    def __init__(self, folder: Path, stale: Iterable[str]) -> None:
        self.folder, self.stale = folder, list(stale)
        self.missing = [p for p in (folder, *folder.parents) if not p.exists()]
        self.temps: dict[Path, Path] = {}
        self.writing = folder
        self.journal: Path | None = None

    def open(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        _finish_journal(self.folder)

    def stage(self, target: Path) -> Path:
        self.writing = target
        self.temps[target] = _temporary(target)
        return self.temps[target]

    def prepare(self, decision: Path | None) -> None:
        for target in self.temps:  # turned into a folder while the run went on
            if target.is_dir():
                self.writing = target
                raise IsADirectoryError(errno.EISDIR, "it is a folder now, not a file")
        names = [target.name for target in self.temps]
        _remove_leftovers(self.folder, names, set(self.temps.values()))
        record: dict[str, Any] = {
            "moves": [[t.name, target.name] for target, t in self.temps.items()],
            "stale": self.stale,
        }
        if decision is not None:
            record["decision"] = str(decision)
        self.writing = _journal(self.folder, names)
        _write_atomically(self.writing, json.dumps(record))
        self.journal = self.writing  # one folder: from here on a kill is redone

    def abort(self) -> None:
        for temp in self.temps.values():
            temp.unlink(missing_ok=True)
        if self.journal is not None:
            self.journal.unlink(missing_ok=True)
        for made in self.missing:  # innermost first
            if made.exists():
                made.rmdir()

    def move(self) -> None:
        for target, temp in self.temps.items():
            try:
                os.replace(temp, target)
            except OSError as error:  # the journal finishes it at the next commit here
                raise OutputError(f"cannot write {target}: {error.strerror or error}") from None
        for name in self.stale:
            (self.folder / name).unlink(missing_ok=True)
        if self.journal is not None:
            self.journal.unlink(missing_ok=True)


def _write_atomically(path: Path, text: str) -> None:
    staged = _temporary(path)
    staged.write_text(text, encoding="utf-8")
    os.replace(staged, path)


def commit(folder: Path, files: Mapping[str, bytes], stale: Iterable[str] = ()) -> list[Path]:
    """Write ``files`` (name -> bytes) into ``folder`` all at once; remove ``stale`` names.

    Returns the paths written. Raises :class:`OutputError` (the previous set
    left as it was) when a file cannot be written. Takes the output's lock
    unless a check took it (the folder's, or a single file's), and releases
    it when done, whatever happened.
    """
    return _commit({folder: (files, list(stale))})


def commit_files(files: Mapping[Path, bytes]) -> list[Path]:
    """:func:`commit` of files named by path, in one folder or several: every file is
    written beside its target before any is moved into place (a command's
    ``--json`` and ``--plot``), so one that cannot be written leaves every
    previous one."""
    folders: dict[Path, dict[str, bytes]] = {}
    for path, data in files.items():
        folders.setdefault(path.parent, {})[path.name] = data
    _commit({folder: (named, []) for folder, named in folders.items()})
    return list(files)


def _commit(sets: Mapping[Path, tuple[Mapping[str, bytes], list[str]]]) -> list[Path]:
    """Each folder's files and stale names, staged and journalled in every folder before
    any move; several folders are one set by a decision file in the first (a kill before
    it undoes every folder's part at its next commit, a kill after it redoes them)."""
    keys = [
        k for folder, (files, _) in sets.items() for k in (folder, *(folder / n for n in files))
    ]
    stagings: list[_Staging] = []
    decision = None
    at: _Staging | Path = next(iter(sets))  # what a failure names
    try:
        for folder, (files, _) in sets.items():
            if not any(
                os.path.realpath(k) in _held for k in (folder, *(folder / n for n in files))
            ):
                _lock("output", folder)
        try:
            for folder, (files, stale) in sets.items():
                at = _Staging(folder, stale)
                stagings.append(at)
                at.open()
                for name, data in files.items():
                    at.stage(folder / name).write_bytes(data)
            if len(stagings) > 1:
                decision = _decision(stagings[0].folder)
            for at in stagings:
                at.prepare(decision)
            if decision is not None:
                at = decision
                journals = [str(staging.journal) for staging in stagings]
                _write_atomically(decision, json.dumps({"journals": journals}))
        except BaseException as error:
            for staging in reversed(stagings):
                staging.abort()
            if isinstance(error, OSError):
                named = at.writing if isinstance(at, _Staging) else at
                raise OutputError(f"cannot write {named}: {error.strerror or error}") from None
            raise
        for staging in stagings:
            staging.move()
        if decision is not None:
            decision.unlink(missing_ok=True)
    finally:
        for key in keys:
            _unlock(key)
    return [folder / name for folder, (files, _) in sets.items() for name in files]


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
