"""The vendoring commands against a copy written to fool them (issue 38, point 3).

Each case is an attack on the code as an attacker reads it: ``verify``
believed a result frame from the process that imported the copy, and that
process's ``__main__``; ``check`` hashed the ``.py`` files while Python
imports a timestamp-valid ``__pycache__`` entry in their place, and took any
version and commit the stamp named; ``update`` wrote through a symlink planted
in the copy. Each made the command pass (or write outside the copy) before.
"""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from junction.command import dispatch as reference
from junction.reference import vendor_files, vendoring

ROOT = Path(__file__).resolve().parents[2]
ALWAYS_ZERO = "\n\ndef mamba_block_aligned_split(**kwargs):\n    return 0\n"
# An input where the faithful split answers 192 tokens.
ASK = dict(
    num_computed_tokens=0,
    num_new_tokens=200,
    num_prompt_tokens=200,
    num_tokens=200,
    block_size=64,
)


def _verify(target: Path) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "junction", "vendor", "verify", str(target), "--bound", "1"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr


def _break_free_split(copy: Path, init_prefix: str) -> None:
    """The free split always 0; ``init_prefix`` runs first when the copy is imported."""
    split = copy / "split.py"
    split.write_text(split.read_text() + ALWAYS_ZERO)
    init = copy / "__init__.py"
    init.write_text(init_prefix + init.read_text())


FORGE_FRAMES = """\
import json as _j, os as _o, struct as _s
_b = _j.dumps({"status": 0, "report": "every input agrees\\n", "error": ""}).encode()
for _fd in range(3, 64):
    try:
        _o.write(_fd, _s.pack(">I", len(_b)) + _b)
    except OSError:
        pass
"""

PATCH_MAIN = """\
import sys as _sys
from junction.reference.oracle.exhaustive import Coverage as _Coverage
_main = _sys.modules["__main__"]
_main.check_exhaustively = lambda core, bound, *a, **k: _Coverage({"all": 1}, (), 0)
_main.free_function_disagreements = lambda copy, bound: (1, [])
"""


# Against the judge as it is now: a worker that says it loaded, then answers a request
# before it was asked (all None), on every descriptor the copy finds.
FORGE_ANSWERS = """\
import json as _j, os as _o, struct as _s
def _frame(message):
    body = _j.dumps(message).encode()
    return _s.pack(">I", len(body)) + body
for _fd in range(3, 64):
    try:
        _o.write(_fd, _frame({"loaded": True}) + _frame({"id": 0, "answers": [None] * 1000}))
    except OSError:
        pass
"""


@pytest.mark.parametrize(
    ("attack", "verdict"),
    [
        (FORGE_FRAMES, "neither loaded nor load_failed"),
        (PATCH_MAIN, "disagreements; first ones:"),
        (FORGE_ANSWERS, "the copy stopped answering: it sent no answers to request 1"),
    ],
    ids=["forged-result", "patch-main", "forged-answers"],
)
def test_verify_judges_answers_not_what_the_copy_says(
    vendored: Path, attack: str, verdict: str
) -> None:
    _break_free_split(vendored, attack)
    code, out, err = _verify(vendored)
    assert code == 1, (out, err)
    assert "every input agrees" not in out
    assert "Traceback" not in err and err.count("\n") <= 1
    assert verdict in out + err


def _same_size_pyc(copy: Path) -> None:
    """A ``__pycache__`` entry for ``split.py`` whose code always answers 0, stamped with
    the source's size and modification time, so the import system takes it."""
    split = copy / "split.py"
    text = split.read_text()
    end = text.index('"""', 3)  # the module docstring's end: cut its text to make room
    evil = text[: end - len(ALWAYS_ZERO)] + text[end:] + ALWAYS_ZERO
    assert len(evil.encode()) == len(text.encode())
    code = compile(evil, str(split), "exec", dont_inherit=True)
    status = split.stat()
    header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
    header += (int(status.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
    header += (status.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    cache = Path(importlib.util.cache_from_source(str(split)))
    cache.parent.mkdir(exist_ok=True)
    cache.write_bytes(header + marshal.dumps(code))


def test_check_reports_bytecode_that_replaces_a_source(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _same_size_pyc(vendored)
    assert vendoring.load(vendored).mamba_block_aligned_split(**ASK) == 0  # what is imported
    code = reference(["vendor", "check", str(vendored)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "__pycache__/split." in out


def test_check_reports_the_bytecode_python_compiled_itself(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What every engine that imported its copy holds: nothing tells it from a forged one."""
    command = f"import sys; sys.path.insert(0, {str(vendored.parent)!r}); import retention_core"
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", command], env=environment, check=True)
    assert reference(["vendor", "check", str(vendored)]) == 1
    out = capsys.readouterr().out
    assert "files Python may import in place of the sources (10)" in out
    assert "__pycache__/split." in out and "remove them" in out


@pytest.mark.parametrize("name", ["extra.pth", "__pycache__/notes.txt", "split.abi3.so"])
def test_check_reports_other_files_python_may_import(
    vendored: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (vendored / name).parent.mkdir(exist_ok=True)
    (vendored / name).write_text("import os\n")
    assert reference(["vendor", "check", str(vendored)]) == 1
    assert name in capsys.readouterr().out


def test_check_refuses_a_stamp_of_a_release_never_published(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    split = vendored / "split.py"
    split.write_text(split.read_text() + ALWAYS_ZERO)
    stamp_path = vendored / vendoring.STAMP_NAME
    fields = json.loads(stamp_path.read_text())
    fields["version"], fields["commit"] = "0.0.9", "f" * 40
    fields["files"] = vendoring.content_hashes(vendored)
    fields["digest"] = vendoring.set_digest(fields["files"])
    stamp_path.write_text(json.dumps(fields))
    code = reference(["vendor", "check", str(vendored)])
    captured = capsys.readouterr()
    assert code == 1, captured.out
    assert "local edits: none" not in captured.out
    assert captured.err.count("\n") == 1
    assert "junction 0.0.9 (commit ffffffffffff), not a release Junction published" in captured.err


SYMLINKS = [".split.py.vendoring", ".VENDORED.json.vendoring", "split.py", "grid.py"]


@pytest.mark.parametrize("name", SYMLINKS)
def test_update_never_writes_through_a_symlink_in_the_copy(
    vendored: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = vendored.parent.parent / "outside.txt"
    outside.write_text("the engine's own file\n")
    planted = vendored / name
    if planted.exists():
        planted.unlink()
    planted.symlink_to(outside)
    code = reference(["vendor", "update", "--force", str(vendored)])
    captured = capsys.readouterr()
    assert outside.read_text() == "the engine's own file\n"
    assert code == 2 and not captured.out, captured
    assert captured.err.count("\n") == 1 and "symbolic link" in captured.err
    assert planted.is_symlink()  # refused before anything was written


def test_update_never_writes_into_a_symlinked_folder(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = vendored.parent.parent / "elsewhere"
    outside.mkdir()
    (vendored / "sub").symlink_to(outside, target_is_directory=True)
    (outside / "stale.py").write_text("x = 1\n")
    code = reference(["vendor", "update", "--force", str(vendored)])
    captured = capsys.readouterr()
    assert code == 2 and "symbolic link" in captured.err, captured
    assert [p.name for p in outside.iterdir()] == ["stale.py"]


def test_writes_follow_no_link_even_one_planted_after_the_scan(tmp_path: Path) -> None:
    """Below the refusal, the writes themselves: a staged name or a folder that is a link
    (planted between the scan and the write) is never written through."""
    copy, outside = tmp_path / "copy", tmp_path / "outside"
    copy.mkdir()
    outside.mkdir()
    (outside / "file").write_text("theirs\n")
    (copy / ".split.py.vendoring").symlink_to(outside / "file")
    (copy / "sub").symlink_to(outside, target_is_directory=True)
    vendor_files.write_files(copy, {"split.py": b"ours\n"})
    assert (copy / "split.py").read_text() == "ours\n" and not (copy / "split.py").is_symlink()
    with pytest.raises(OSError):
        vendor_files.write_files(copy, {"sub/file": b"ours\n"})
    with pytest.raises(OSError):
        vendor_files.remove_files(copy, ["sub/file"])
    assert [(p.name, p.read_text()) for p in outside.iterdir()] == [("file", "theirs\n")]


def test_verify_never_imports_the_copy_where_it_judges(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert reference(["vendor", "verify", "--bound", "1", str(vendored)]) == 0
    assert "every input agrees" in capsys.readouterr().out
    imported = [
        name
        for name, module in list(sys.modules.items())
        if str(getattr(module, "__file__", None) or "").startswith(str(vendored))
    ]
    assert imported == []


@pytest.mark.parametrize("name", ["grid.py", vendoring.STAMP_NAME])
def test_a_fifo_in_the_copy_is_refused_not_read(
    vendored: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reading a FIFO would block for ever: nothing but a regular file is opened to read."""
    (vendored / name).unlink()
    os.mkfifo(vendored / name)
    stamp = name == vendoring.STAMP_NAME
    assert reference(["vendor", "check", str(vendored)]) == (2 if stamp else 1)
    captured = capsys.readouterr()
    assert "not a regular file" in captured.out + captured.err
    assert reference(["vendor", "update", "--force", str(vendored)]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_verify_leaves_no_bytecode_in_the_copy(vendored: Path) -> None:
    """Else `check` would fail every copy `verify` had judged (its caches are strays)."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-m", "junction", "vendor", "verify", str(vendored), "--bound", "1"],
        env={**environment, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert not (vendored / "__pycache__").exists()
