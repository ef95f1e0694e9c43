"""The engine compiled by mypyc: the same source, built in a tree of its own, run only fresh.

Why: the engine's bookkeeping is a few hundred small Python calls per
request (a chunk's allocation, its caching through the policy's mask, the
window's release, the Mamba state's hand-over), each a handful of attribute
and dict operations. Interpreted, ``make bench-engine`` runs 0.5 to 0.8
million block operations per second on this project's machines; the same
modules compiled by mypyc (which ships with the project's pinned mypy, and
reads the types the code already has for ``mypy --strict``) run about 1.5
times as many, over a million (BENCHMARKS.md, "The engine compiled by mypyc").
What stays interpreted (``core``, the policies, the pool's dicts and the
garbage collector) is most of what is left.

What: :func:`build` copies the ``junction`` package (links followed) into
a directory of its own, with a ``mypy.ini`` of the project's ``strict`` setting
(``build/compiled-engine`` by default), compiles :data:`COMPILED_MODULES`
there into extension modules, and writes a manifest: the SHA-256 of every
source file it copied. :func:`environment` gives the environment a child
process runs that tree in, after :func:`check_fresh` confirmed that every
source still matches the working tree: a stale build raises
:class:`StaleBuild` naming the first file that differs, it is never run.
``python -m junction.reference.engine.compiled run MODULE ARGS`` runs
``python -m MODULE ARGS`` that way (the simulator, say, on a long trace).
The child's own :func:`assert_compiled` confirms the extension modules,
not the ``.py`` files, were imported (an extension built for another
Python is silently skipped by the import system).

Why a tree of its own and not extension modules beside the sources: an
extension module shadows its ``.py``, so an edit would silently not run
until the next build; the bug zoo's mutants subclass the engine's classes
and some tests patch them, which compiled classes refuse; mutmut mutates
the ``.py`` files. So every test runs the interpreted engine, and
``tests/engine/test_compiled.py`` proves the compiled one equal to it: the
same chunks, metrics, cache map and operation counts at every step of
many runs, ``check()`` passing after each.

What is not compiled, and why: ``config.py``, ``eviction.py`` and
``tier.py`` hold attrs classes (mypyc compiles none); ``protocol.py`` is a
runtime-checkable ``Protocol``; ``invariants.py`` subclasses
``AssertionError`` (mypyc compiles no subclass of it). None of them is on
the per-chunk path. ``core`` stays interpreted too: it is vendored as
source, its values are attrs classes, and its calls are a small part of a
chunk. Rejected: Cython (a second language, and annotations the code does
not have), and a hand-written C pool (a second implementation to prove
equal, for the pool's share of the time only).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = [
    "COMPILED_MODULES",
    "DEFAULT_DIRECTORY",
    "StaleBuild",
    "assert_compiled",
    "build",
    "check_fresh",
    "environment",
    "interpreted_environment",
    "source_digests",
]

#: The engine's modules on the per-chunk path, compiled.
COMPILED_MODULES = (
    "junction.reference.engine.block_pool",
    "junction.reference.engine.coordinator",
    "junction.reference.engine.engine",
    "junction.reference.engine.group_managers",
    "junction.reference.engine.hash_chain",
    "junction.reference.engine.policy",
    "junction.reference.engine.request",
)

# The checkout (reference/ is linked from junction/). In a built tree this is the
# tree itself: only assert_compiled runs there.
ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "junction"
DEFAULT_DIRECTORY = ROOT / "build" / "compiled-engine"
MANIFEST = "junction-manifest.json"


class StaleBuild(Exception):
    """The compiled tree is missing, or was built from other sources than the working tree's."""


def source_digests(package: Path = SOURCE) -> dict[str, str]:
    """SHA-256 of every ``.py`` file under ``package`` (links followed), by path from its parent."""
    found = {}
    for folder, _, names in os.walk(package, followlinks=True):
        for name in names:
            if name.endswith(".py"):
                path = Path(folder, name)
                key = str(path.relative_to(package.parent))
                found[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def build(directory: Path = DEFAULT_DIRECTORY) -> None:
    """Copy the package into ``directory`` and compile :data:`COMPILED_MODULES` there."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    shutil.copytree(SOURCE, directory / "junction", ignore=ignore)  # links followed
    # Not pyproject.toml: its [project] table would make mypyc's setuptools build
    # the whole package. mypy reads this first; the engine imports nothing the
    # project's per-module overrides (triton, vLLM) concern.
    (directory / "mypy.ini").write_text("[mypy]\nstrict = True\n")
    files = [module.replace(".", "/") + ".py" for module in COMPILED_MODULES]
    done = subprocess.run(
        [sys.executable, "-m", "mypyc", *files],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"mypyc failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    manifest = {"python": sys.version, "sources": source_digests(directory / "junction")}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))


def check_fresh(directory: Path = DEFAULT_DIRECTORY) -> None:
    """Raise :class:`StaleBuild` unless ``directory`` is a build of the working tree."""
    manifest_path = directory / MANIFEST
    if not manifest_path.exists():
        raise StaleBuild(f"{directory}: no compiled engine (run `make compiled-engine`)")
    manifest = json.loads(manifest_path.read_text())
    if manifest["python"] != sys.version:
        raise StaleBuild(
            f"{directory}: built for Python {manifest['python']!r}, this is {sys.version!r} "
            "(run `make compiled-engine`)"
        )
    built, current = manifest["sources"], source_digests()
    for path in sorted(built.keys() | current.keys()):
        if built.get(path) != current.get(path):
            state = "new" if path not in built else "gone" if path not in current else "changed"
            raise StaleBuild(
                f"{directory}: {path} is {state} since the build (run `make compiled-engine`)"
            )


def environment(directory: Path = DEFAULT_DIRECTORY) -> dict[str, str]:
    """The environment of a child process that imports the compiled ``junction``.

    Run the child with ``python -P`` (no script or working directory in front of
    ``PYTHONPATH``), or the checkout's own ``junction`` shadows the build.
    """
    check_fresh(directory)
    path = os.pathsep.join([str(directory), str(ROOT)])
    return {**os.environ, "PYTHONPATH": path}


def interpreted_environment() -> dict[str, str]:
    """The environment of a child process (``python -P``) that imports the checkout's
    own, interpreted ``junction``: what :func:`environment` is compared against."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def assert_compiled() -> None:
    """In the child: every module of :data:`COMPILED_MODULES` is an extension module."""
    for name in COMPILED_MODULES:
        module = importlib.import_module(name)
        origin = str(getattr(module, "__file__", ""))
        if not origin.endswith(".so"):
            raise StaleBuild(f"{name} was imported from {origin}, not from its compiled build")


# What `run` hands the child: confirm the build was imported, then run the module.
_RUN_MODULE = (
    "import runpy, sys; from junction.reference.engine.compiled import assert_compiled; "
    "assert_compiled(); sys.argv = sys.argv[1:]; "
    "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)"
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="run MODULE [ARGS...]: python -m MODULE ARGS on the compiled engine, "
        "e.g. `run junction.reference simulate --trace FILE`",
    )
    parser.add_argument("command", choices=["build", "check", "run"])
    parser.add_argument("--directory", type=Path, default=DEFAULT_DIRECTORY)
    parser.add_argument("module", nargs="?", help="with run: the module to run")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="with run: its arguments")
    args = parser.parse_args()
    if (args.command == "run") != (args.module is not None):
        parser.error("a module to run goes with `run`, and only with it")
    if args.command == "build":
        build(args.directory)
    try:
        check_fresh(args.directory)
    except StaleBuild as stale:
        raise SystemExit(f"compiled engine: {stale}") from None
    if args.command == "run":
        argv = [sys.executable, "-P", "-c", _RUN_MODULE, args.module, *args.arguments]
        os.execve(sys.executable, argv, environment(args.directory))
    print(f"compiled engine: {args.directory} is fresh ({len(COMPILED_MODULES)} modules)")


if __name__ == "__main__":
    main()
