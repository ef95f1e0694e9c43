"""``vendor copy``, ``check`` and ``update``: the stamp, drift file by file, the refusals."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from junction.command import dispatch as reference
from junction.reference import releases, vendoring

from .conftest import edit_line


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = reference(["vendor", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_copy_is_the_core_with_a_stamp_that_reads_back(tmp_path: Path) -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    stamp = vendoring.vendor(tmp_path / "retention_core", now)
    target = tmp_path / "retention_core"
    assert vendoring.Stamp.read(target) == stamp
    source = vendoring.source_folder()
    assert [name for name, _ in stamp.files] == vendoring.code_files(source)
    for name, _ in stamp.files:
        assert (target / name).read_bytes() == (source / name).read_bytes()
    assert stamp.hashes == vendoring.content_hashes(target)
    assert stamp.digest == vendoring.set_digest(stamp.hashes)
    assert stamp.version == "0.1.0" and stamp.copied_at == "2026-01-02T03:04:05+00:00"
    assert stamp.commit is None or len(stamp.commit.removesuffix("-dirty")) == 40


def test_a_clean_copy_checks_clean(vendored: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", str(vendored))
    assert code == 0
    assert "local edits: none" in out and "the same core as the copy's source" in out


def test_one_edited_line_is_drift_naming_the_file_and_line(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_line(vendored / "split.py", 42, "# an engine's local fix")
    code, out, _ = run(capsys, "check", str(vendored))
    assert code == 1
    assert "local edits (1 files):" in out
    assert "changed  split.py: first difference at line 42" in out


def test_added_and_removed_files_are_drift(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (vendored / "grid.py").unlink()
    (vendored / "extra.py").write_text("x = 1\n")
    (vendored / "py.typed").write_text("")  # not code: ignored
    code, out, _ = run(capsys, "check", str(vendored))
    assert code == 1
    assert "added    extra.py" in out and "removed  grid.py" in out
    assert "py.typed" not in out


def test_a_renamed_copy_keeps_its_stamp(vendored: Path, capsys: pytest.CaptureFixture[str]) -> None:
    renamed = vendored.parent / "hybrid_retention"
    vendored.rename(renamed)
    code, out, _ = run(capsys, "check", str(renamed))
    assert code == 0 and "local edits: none" in out


def test_an_older_copy_is_an_available_update_not_drift(
    vendored: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy of an older published release (its files and stamp agree) reports an
    update, exit 0."""
    edit_line(vendored / "grid.py", 1, '"""An older core."""')
    stamp_path = vendored / vendoring.STAMP_NAME
    fields = json.loads(stamp_path.read_text())
    fields["files"]["grid.py"] = vendoring.content_hashes(vendored)["grid.py"]
    fields["digest"] = vendoring.set_digest(fields["files"])
    fields["version"], fields["commit"] = "0.0.1", "0" * 40
    stamp_path.write_text(json.dumps(fields))
    older = releases.Release("0.0.1", "0" * 40, fields["digest"])
    monkeypatch.setattr(releases, "published", lambda: (older,))
    code, out, _ = run(capsys, "check", str(vendored))
    assert code == 0
    assert "local edits: none" in out
    assert "has a different core (1 files)" in out and "changed  grid.py" in out
    assert run(capsys, "update", str(vendored))[0] == 0
    code, out, _ = run(capsys, "check", str(vendored))
    assert code == 0 and "the same core as the copy's source" in out
    assert (vendored / "grid.py").read_bytes() == (
        vendoring.source_folder() / "grid.py"
    ).read_bytes()


def test_update_refuses_local_edits_unless_forced(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_line(vendored / "mask.py", 3, "# edited")
    (vendored / "extra.py").write_text("x = 1\n")
    code, out, err = run(capsys, "update", str(vendored))
    assert code == 2 and not out
    assert err.count("\n") == 1
    assert "has local edits (extra.py, mask.py); `update --force` discards them" in err
    code, out, _ = run(capsys, "update", "--force", str(vendored))
    assert code == 0 and "discarded local edit: changed  mask.py" in out
    assert not (vendored / "extra.py").exists()
    assert run(capsys, "check", str(vendored))[0] == 0


@pytest.mark.parametrize(
    ("setup", "command", "message"),
    [
        ("vendored", "copy", "already a vendored copy; refresh it with `update`"),
        ("folder", "copy", "exists and is not empty; refusing to overwrite it"),
        ("file", "copy", "exists and is not empty; refusing to overwrite it"),
        ("orphan", "copy", "its parent folder does not exist (it is not created)"),
        ("folder", "check", "not a vendored copy (no VENDORED.json)"),
        ("missing", "check", "not a folder (a vendored copy is a folder)"),
        ("folder", "update", "not a vendored copy (no VENDORED.json)"),
        ("tampered", "check", "is not the digest of its files"),
        ("garbled", "check", "unreadable stamp"),
        ("escaping", "check", "files must map relative paths of .py files"),
        ("fieldless", "check", "not a stamp: no field 'digest'"),
        ("folder", "verify", "not a package folder (no __init__.py)"),
    ],
)
def test_refusals_exit_2_with_one_line(
    vendored: Path, capsys: pytest.CaptureFixture[str], setup: str, command: str, message: str
) -> None:
    target = {"vendored": vendored, "orphan": vendored.parent / "no" / "such"}.get(
        setup, vendored.parent / "other"
    )
    if setup == "folder":
        target.mkdir()
        (target / "notes.txt").write_text("ours")
    elif setup == "file":
        target.write_text("ours")
    elif setup in ("tampered", "garbled", "escaping", "fieldless"):
        target = vendored
        stamp = target / vendoring.STAMP_NAME
        fields = json.loads(stamp.read_text())
        if setup == "tampered":
            fields["digest"] = "0" * 64
        elif setup == "escaping":
            fields["files"]["../outside.py"] = fields["files"].pop("grid.py")
        elif setup == "fieldless":
            del fields["digest"]
        stamp.write_text("{" if setup == "garbled" else json.dumps(fields))
    before = sorted(p.name for p in vendored.parent.iterdir())
    code, out, err = run(capsys, command, str(target))
    assert code == 2 and not out
    assert err.count("\n") == 1 and err.startswith(f"junction vendor {command}")
    assert str(target) in err and message in err
    assert sorted(p.name for p in vendored.parent.iterdir()) == before  # nothing written


def test_copy_into_an_empty_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "retention_core"
    target.mkdir()
    code, out, _ = run(capsys, "copy", str(target))
    assert code == 0 and f"into {target}: " in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["retention_core"]  # no staging left
    assert run(capsys, "check", str(target))[0] == 0
