"""``junction findings`` against hostile ``--out`` values.

``--out`` is checked before the harness runs (status 2, one line, nothing
touched), and the file is replaced in one move at the end: a run that fails
or is interrupted leaves the previous file as it was, with no temporary
file beside it. The real run takes over a minute even at ``--examples 1``,
so the harness is replaced here by a stand-in that edits the file the way
``write_findings`` does (reads what is there, writes the new text); one
test keeps ``write_findings`` itself with a stubbed ``findings_markdown``, to
check that the audit section survives the copy-and-replace.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from junction.command import dispatch as main
from junction.reference.cli import findings as findings_cli
from junction.reference.harness import findings as harness_findings
from tests.cli.folders import files
from tests.cli.in_process import run_in_process

PREFIX = "junction findings: error: "


def findings(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Exit status and the last line of standard error."""
    ended = run_in_process(main, ["findings", "--examples", "1", *argv], capsys)
    return ended.code, ended.last_line


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(findings_cli, "write_findings", lambda *a: pytest.fail("the run started"))


@pytest.mark.parametrize(
    ("setup", "out", "message"),
    [
        (lambda t: (t / "docs").mkdir(), "docs", "--out {t}/docs: is a folder, not a file"),
        (
            lambda t: (t / "f").write_text("x"),
            "f/findings.md",
            "--out {t}/f/findings.md: {t}/f is a file, not a folder",
        ),
    ],
    ids=["a-folder", "under-a-file"],
)
@pytest.mark.usefixtures("no_run")
def test_an_out_that_cannot_be_written_is_refused_before_the_run(
    setup: object, out: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    setup(tmp_path)  # type: ignore[operator]
    before = files(tmp_path)
    code, line = findings(["--out", str(tmp_path / out)], capsys)
    assert code == 2 and line == PREFIX + message.format(t=tmp_path)
    assert files(tmp_path) == before


@pytest.mark.usefixtures("no_run")
def test_out_empty_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, line = findings(["--out", ""], capsys)
    assert code == 2 and line == f"{PREFIX}argument --out: must name a path, got an empty string"


@pytest.mark.usefixtures("permissions")
@pytest.mark.usefixtures("no_run")
def test_a_read_only_out_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "findings.md"
    out.write_text("old")
    out.chmod(0o444)
    code, line = findings(["--out", str(out)], capsys)
    assert code == 2 and line == f"{PREFIX}--out {out}: the file is read-only"


def test_the_file_is_replaced_at_the_end_and_the_editor_sees_the_old_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "docs" / "findings.md"
    out.parent.mkdir()
    out.write_text("old")
    out.chmod(0o640)
    seen: list[str] = []

    def write(path: Path, examples: int, seed: int, progress: object) -> None:
        seen.append(path.read_text())
        assert out.read_text() == "old"  # untouched while the run goes on
        path.write_text("new")

    monkeypatch.setattr(findings_cli, "write_findings", write)
    code, line = findings(["--out", str(out)], capsys)
    assert code == 0 and line == f"wrote {out}"
    assert seen == ["old"] and files(tmp_path) == {"docs/findings.md": b"new"}
    assert out.stat().st_mode & 0o777 == 0o640  # the replaced file's mode


@pytest.mark.parametrize("failure", ["disk", "interrupt"])
def test_a_failed_or_interrupted_run_leaves_the_old_file_and_no_temporary(
    failure: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "findings.md"
    out.write_text("old")

    def write(path: Path, examples: int, seed: int, progress: object) -> None:
        path.write_text("half")
        if failure == "disk":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        raise KeyboardInterrupt

    monkeypatch.setattr(findings_cli, "write_findings", write)
    if failure == "disk":
        code, line = findings(["--out", str(out)], capsys)
        assert code == 1 and line == (
            f"{PREFIX}cannot write {out}: No space left on device; {out} left as it was"
        )
    else:
        with pytest.raises(KeyboardInterrupt):
            main(["findings", "--examples", "1", "--out", str(out)])
    assert files(tmp_path) == {"findings.md": b"old"}


def test_a_new_file_in_a_new_folder_keeps_the_audit_sections_of_an_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(harness_findings, "findings_markdown", lambda *a: "# policies\n")
    fresh = tmp_path / "a" / "b" / "findings.md"
    code, _ = findings(["--out", str(fresh)], capsys)
    assert code == 0 and files(tmp_path) == {"a/b/findings.md": b"# policies\n"}
    # Both engines' audit sections survive, in order; what lies outside them does not.
    vllm = "<!-- vllm-audit:begin -->\nvLLM\n<!-- vllm-audit:end -->"
    sglang = "<!-- sglang-audit:begin -->\nSGLang\n<!-- sglang-audit:end -->"
    fresh.write_text(f"# old policies\n{vllm}\n\nbetween\n\n{sglang}\n")
    code, _ = findings(["--out", str(fresh)], capsys)
    assert code == 0 and fresh.read_text() == f"# policies\n\n{vllm}\n\n{sglang}\n"
