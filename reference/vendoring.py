"""Vendored copies of the core: make one, pin it with a stamp, tell when it has drifted.

:func:`vendor` copies ``core/``'s Python files into an engine's tree with a
stamp, ``VENDORED.json`` (junction's version, the git commit, a sha256 per
file and of the set); :func:`drift` reports local edits file by file and,
separately, whether the installed core differs from the copy's source;
:func:`update` refreshes a copy, refusing to discard local edits unless told
to; :func:`load` imports a copy from its folder under a fresh name (in
``vendor verify``'s worker), without the engine's package. What counts is
the regular ``*.py`` files, as bytes (a reformatted copy has drifted), read
and written following no link (:mod:`.vendor_files`). Why the stamp is JSON
holding hashes, and how writes stay whole: docs/design/vendor-stamp.md.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Literal

import attrs

from junction import core
from junction.reference.vendor_files import (
    NotVendorable,
    Stray,
    read_regular,
    remove_files,
    scan,
    write_files,
)

__all__ = [
    "STAMP_NAME",
    "Change",
    "Drift",
    "NotVendorable",
    "Stamp",
    "code_files",
    "content_hashes",
    "drift",
    "load",
    "set_digest",
    "source_folder",
    "source_stamp",
    "update",
    "vendor",
]

STAMP_NAME = "VENDORED.json"
STAMP_FORMAT = 1
_NOTE = (
    "Written by `junction vendor`. This folder is a copy of "
    "junction's core: `vendor check` reports any change to it, `vendor update` refreshes it."
)


@attrs.frozen
class Stamp:
    """Where a copy came from and what it held: ``files`` maps each relative path to its
    sha256; ``digest`` is the sha256 of the whole set (:func:`set_digest`)."""

    version: str
    commit: str | None
    copied_at: str
    files: tuple[tuple[str, str], ...]
    digest: str

    @property
    def hashes(self) -> dict[str, str]:
        return dict(self.files)

    @property
    def origin(self) -> str:
        """``junction 0.1.0 (commit abc123def456)``: the source, in words."""
        if self.commit is None:
            return f"junction {self.version}"
        dirty = "-dirty" if self.commit.endswith("-dirty") else ""
        return f"junction {self.version} (commit {self.commit[:12]}{dirty})"

    def to_json(self) -> str:
        fields = {
            "format": STAMP_FORMAT,
            "note": _NOTE,
            "version": self.version,
            "commit": self.commit,
            "copied_at": self.copied_at,
            "digest": self.digest,
            "files": dict(self.files),
        }
        return json.dumps(fields, indent=2) + "\n"

    @classmethod
    def read(cls, folder: Path) -> Stamp:
        """The stamp of the vendored copy ``folder``; :class:`NotVendorable` if there is none."""
        path = folder / STAMP_NAME
        if not folder.is_dir():
            raise NotVendorable(f"{folder}: not a folder (a vendored copy is a folder)")
        try:
            fields = json.loads(read_regular(path, 1 << 20).decode("utf-8"))
        except FileNotFoundError:
            raise NotVendorable(f"{folder}: not a vendored copy (no {STAMP_NAME})") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise NotVendorable(f"{path}: unreadable stamp: {error}") from None
        try:
            return cls._from_fields(fields)
        except KeyError as error:
            raise NotVendorable(f"{path}: not a stamp: no field {error}") from None
        except (TypeError, ValueError) as error:
            raise NotVendorable(f"{path}: not a stamp of format {STAMP_FORMAT}: {error}") from None

    @classmethod
    def _from_fields(cls, fields: object) -> Stamp:
        if not isinstance(fields, dict):
            raise TypeError("must hold a JSON object")
        if fields["format"] != STAMP_FORMAT:
            raise ValueError(f"format={fields['format']!r}")
        files = fields["files"]
        if not isinstance(files, dict) or not all(
            _is_code_path(name) and _is_sha256(value) for name, value in files.items()
        ):
            raise TypeError("files must map relative paths of .py files to sha256 hex digests")
        commit = fields["commit"]
        strings = (fields["version"], fields["copied_at"])
        if not all(isinstance(v, str) for v in strings) or not isinstance(commit, str | None):
            raise TypeError("version, copied_at and commit must be strings")
        digest = fields["digest"]
        if digest != set_digest(files):
            raise ValueError(f"digest={digest!r} is not the digest of its files")
        return cls(
            fields["version"], commit, fields["copied_at"], tuple(sorted(files.items())), digest
        )


def _is_code_path(name: object) -> bool:
    """A relative ``/``-separated path of a ``.py`` file inside the copy (no ``..``)."""
    if not isinstance(name, str) or not name.endswith(".py") or name.startswith("/"):
        return False
    return all(part not in ("", ".", "..") for part in name.split("/"))


def _is_sha256(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= set("0123456789abcdef")


def code_files(folder: Path) -> list[str]:
    """The relative (``/``-separated) paths of the regular ``*.py`` files under ``folder``
    (``__pycache__`` and linked folders left out: :func:`.vendor_files.scan`)."""
    return list(scan(folder).sources)


def content_hashes(folder: Path) -> dict[str, str]:
    """sha256 of each code file under ``folder``, by relative path."""
    return {
        name: hashlib.sha256(read_regular(folder / name)).hexdigest() for name in code_files(folder)
    }


def set_digest(hashes: Mapping[str, str]) -> str:
    """One sha256 for a set of files: of the sorted ``path NUL sha256 LF`` lines."""
    lines = "".join(f"{name}\0{hashes[name]}\n" for name in sorted(hashes))
    return hashlib.sha256(lines.encode()).hexdigest()


def source_folder() -> Path:
    """The folder of the core installed here (``junction.core``): what copies are made of."""
    return Path(core.__file__).resolve().parent


def _version() -> str:
    try:
        return metadata.version("junction")
    except metadata.PackageNotFoundError:
        return "unknown"


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _commit(folder: Path) -> str | None:
    """The commit of the checkout ``folder`` is tracked in, ``-dirty`` if it has changes
    there; ``None`` outside one (an installed wheel, even inside some other repository)."""
    if _git(folder, "ls-files", "--error-unmatch", "__init__.py") is None:
        return None
    commit = _git(folder, "rev-parse", "HEAD")
    status = _git(folder, "status", "--porcelain", "--", ".")
    if commit is None or status is None:
        return None
    return commit + ("-dirty" if status else "")


def source_stamp(now: datetime | None = None) -> Stamp:
    """The stamp a copy of the installed core made at ``now`` (default: the current time)."""
    folder = source_folder()
    hashes = content_hashes(folder)
    when = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    return Stamp(
        _version(), _commit(folder), when, tuple(sorted(hashes.items())), set_digest(hashes)
    )


def _write_copy(folder: Path, stamp: Stamp) -> None:
    """The core's files as ``stamp`` lists them, then the stamp, into ``folder``."""
    source = source_folder()
    write_files(folder, {name: read_regular(source / name) for name, _ in stamp.files})
    write_files(folder, {STAMP_NAME: stamp.to_json().encode("utf-8")})


def vendor(target: Path, now: datetime | None = None) -> Stamp:
    """Copy the installed core into ``target`` (a new or empty folder) with its stamp.

    Raises :class:`NotVendorable` when ``target`` exists and is not an empty folder,
    or its parent folder does not exist."""
    if target.exists() or target.is_symlink():
        if (target / STAMP_NAME).exists():
            raise NotVendorable(f"{target}: already a vendored copy; refresh it with `update`")
        if not target.is_dir() or any(target.iterdir()):
            raise NotVendorable(f"{target}: exists and is not empty; refusing to overwrite it")
    if not target.parent.is_dir():
        raise NotVendorable(f"{target}: its parent folder does not exist (it is not created)")
    stamp = source_stamp(now)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        # mkdtemp's folder is private (0700); the copy is an ordinary folder of the tree.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)
        _write_copy(staging, stamp)
        if target.is_dir():
            target.rmdir()
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return stamp


@attrs.frozen
class Change:
    """One file that differs: ``line`` is the first differing line of a changed file,
    when the original text is at hand (``None`` otherwise)."""

    path: str
    kind: Literal["added", "removed", "changed"]
    line: int | None = None

    def describe(self) -> str:
        where = f": first difference at line {self.line}" if self.line else ""
        return f"{self.kind:<8} {self.path}{where}"


@attrs.frozen
class Drift:
    """A copy against its stamp (``local``: edits made to the copy), the stamp against
    the core installed here (``upstream``: what an update would change), and the files
    beside the sources that Python may import in their place (``strays``)."""

    stamp: Stamp
    installed: Stamp
    local: tuple[Change, ...]
    upstream: tuple[Change, ...]
    strays: tuple[Stray, ...]


def _first_difference(old: bytes, new: bytes) -> int:
    """The 1-based number of the first line where ``old`` and ``new`` differ (they do)."""
    pairs = itertools.zip_longest(old.splitlines(keepends=True), new.splitlines(keepends=True))
    return next(number for number, (a, b) in enumerate(pairs, start=1) if a != b)


def _changes(
    was: Mapping[str, str], now: Mapping[str, str], originals: Path | None, copy: Path | None
) -> tuple[Change, ...]:
    """Files of ``now`` that differ from ``was`` (path -> sha256). A changed file's line is
    found when ``originals`` holds a file of the stamped hash and ``copy`` the new one."""
    changes = [Change(name, "removed") for name in sorted(was.keys() - now.keys())]
    changes += [Change(name, "added") for name in sorted(now.keys() - was.keys())]
    for name in sorted(was.keys() & now.keys()):
        if was[name] == now[name]:
            continue
        line = None
        original = originals / name if originals else None
        if copy and original and original.is_file():
            old = original.read_bytes()
            if hashlib.sha256(old).hexdigest() == was[name]:
                line = _first_difference(old, read_regular(copy / name))
        changes.append(Change(name, "changed", line))
    return tuple(sorted(changes, key=lambda change: change.path))


def drift(target: Path) -> Drift:
    """How the copy ``target`` differs from its stamp, and its stamp from the installed core.

    Raises :class:`NotVendorable` when ``target`` is not a vendored copy."""
    stamp = Stamp.read(target)
    installed = source_stamp()
    local = _changes(stamp.hashes, content_hashes(target), source_folder(), target)
    upstream = _changes(stamp.hashes, installed.hashes, None, None)
    return Drift(stamp, installed, local, upstream, scan(target).strays)


def update(target: Path, discard_local_edits: bool = False, now: datetime | None = None) -> Drift:
    """Refresh the vendored copy ``target`` to the installed core; the drift it had.

    Refuses (:class:`NotVendorable`) a copy with local edits unless
    ``discard_local_edits``; then added files are removed too, so the copy is
    exactly the core. Refuses, before writing anything, a copy holding a
    link or another non-regular file; writes each file afresh by rename
    (:func:`.vendor_files.write_files`: no link followed) and the stamp last."""
    before = drift(target)
    planted = [stray for stray in before.strays if stray.planted]
    if planted:
        raise NotVendorable(
            f"{target}: holds {planted[0].describe()}; `update` writes only regular files "
            "inside the copy and follows no link: remove it first"
        )
    if before.local and not discard_local_edits:
        edited = ", ".join(change.path for change in before.local)
        raise NotVendorable(f"{target}: has local edits ({edited}); `update --force` discards them")
    stamp = source_stamp(now)
    remove_files(target, sorted(set(code_files(target)) - stamp.hashes.keys()))
    _write_copy(target, stamp)
    return before


_loaded = itertools.count()


def load(target: Path) -> ModuleType:
    """Import the copy in ``target`` from its folder, under a name of its own.

    Each call imports afresh (``junction_vendored_0``, ``_1``, ...), so two
    copies, or one copy before and after an edit, never share modules. Works
    for any copy of the core: it imports itself by relative imports only."""
    init = target / "__init__.py"
    if not init.is_file():
        raise NotVendorable(f"{target}: not a package folder (no __init__.py)")
    name = f"junction_vendored_{next(_loaded)}"
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(target)]
    )
    if spec is None or spec.loader is None:  # a path to an existing .py file always has one
        raise NotVendorable(f"{target}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]
        raise
    return module
