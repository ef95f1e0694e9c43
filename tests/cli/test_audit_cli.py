"""``junction audit findings --write`` against hostile paths.

``--write`` is checked before vLLM is imported or any counterexample runs
(status 2, one line, nothing touched), and the file is replaced in one move.
These cases need no engine: the sections are stubbed. The end-to-end case
runs the real audits, so it needs vLLM 0.33.0 and SGLang 0.5.23: skipped with
the reason where one is absent, an error under ``--require-vllm`` /
``--require-sglang`` (as in ``tests/audit/conftest.py``).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

import junction.audit.cli as audit_cli
from junction.audit import engines
from junction.audit.sglang import ENGINE as SGLANG
from junction.audit.vllm import ENGINE as VLLM
from junction.command import dispatch
from tests.cli.folders import files
from tests.cli.in_process import run_in_process

PREFIX = "junction audit findings: error: "
AUDIT_BEGIN, AUDIT_END = VLLM.begin, VLLM.end
SGLANG_BEGIN, SGLANG_END = SGLANG.begin, SGLANG.end
SECTION = f"{AUDIT_BEGIN}\n## vLLM 0.33.0 audit\nnew\n{AUDIT_END}\n"
SGLANG_SECTION = f"{SGLANG_BEGIN}\n## SGLang 0.5.23 audit\nnew\n{SGLANG_END}\n"


def stub_sections(
    monkeypatch: pytest.MonkeyPatch, vllm: Callable[[], str], sglang: Callable[[], str]
) -> None:
    """Each engine's section rendered by a stand-in (no engine runs)."""
    stubbed = (attrs.evolve(VLLM, findings=vllm), attrs.evolve(SGLANG, findings=sglang))
    monkeypatch.setattr(engines, "ENGINES", stubbed)


def junction_audit(argv: list[str]) -> int:
    """``junction audit ARGV``."""
    return dispatch(["audit", *argv])


def audit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Exit status and the last line of standard error (or output, on success)."""
    ended = run_in_process(junction_audit, ["findings", *argv], capsys)
    return ended.code, (ended.err or ended.out).strip().splitlines()[-1]


@pytest.fixture
def section(monkeypatch: pytest.MonkeyPatch) -> None:
    stub_sections(monkeypatch, lambda: SECTION, lambda: SGLANG_SECTION)


@pytest.mark.parametrize(
    ("setup", "path", "message"),
    [
        (lambda t: (t / "docs").mkdir(), "docs", "--write {t}/docs: is a folder, not a file"),
        (
            lambda t: (t / "f").write_text("x"),
            "f/findings.md",
            "--write {t}/f/findings.md: {t}/f is a file, not a folder",
        ),
    ],
    ids=["a-folder", "under-a-file"],
)
def test_a_path_that_cannot_be_written_is_refused_before_the_audit(
    setup: object,
    path: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    setup(tmp_path)  # type: ignore[operator]
    before = files(tmp_path)

    def ran() -> str:
        pytest.fail("the audit ran")

    stub_sections(monkeypatch, ran, ran)
    code, line = audit(["--write", str(tmp_path / path)], capsys)
    assert code == 2 and line == PREFIX + message.format(t=tmp_path)
    assert files(tmp_path) == before


def test_write_empty_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, line = audit(["--write", ""], capsys)
    assert code == 2
    assert line == f"{PREFIX}argument --write: must name a path, got an empty string"


@pytest.mark.usefixtures("section")
def test_the_section_is_replaced_and_the_rest_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "findings.md"
    out.write_text(f"# policies\n\n{AUDIT_BEGIN}\nold\n{AUDIT_END}\n\ntail\n")
    code, line = audit(["--write", str(out)], capsys)
    assert (code, line) == (0, f"wrote the vLLM and SGLang audit sections of {out}")
    assert out.read_text() == (f"# policies\n\n{SECTION.rstrip()}\n\ntail\n\n{SGLANG_SECTION}")
    assert set(files(tmp_path)) == {"findings.md"}


@pytest.mark.usefixtures("section")
def test_engine_keeps_to_the_engines_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "findings.md"
    old = f"{AUDIT_BEGIN}\nold\n{AUDIT_END}\n\n{SGLANG_BEGIN}\nold\n{SGLANG_END}\n"
    out.write_text(old)
    code, line = audit(["--engine", "sglang", "--write", str(out)], capsys)
    assert (code, line) == (0, f"wrote the SGLang audit section of {out}")
    assert out.read_text() == old.replace(f"{SGLANG_BEGIN}\nold\n{SGLANG_END}\n", SGLANG_SECTION)
    code, line = audit(["--engine", "nosuch"], capsys)
    assert code == 2 and "argument --engine: invalid choice: 'nosuch'" in line


def test_engines_lists_every_row(capsys: pytest.CaptureFixture[str]) -> None:
    ended = run_in_process(junction_audit, ["engines"], capsys)
    rows = ended.out.splitlines()
    assert ended.code == 0 and [row.split(":")[0] for row in rows] == ["vllm", "sglang"]
    assert rows[0].startswith(
        "vllm: vLLM 0.33.0 (extra `audit`, tests tests/audit/, --require-vllm): "
    )


@pytest.mark.usefixtures("section")
def test_a_write_that_fails_leaves_the_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "findings.md"
    out.write_text("old")

    def full_disk(path: Path, section: str, begin: str, end: str) -> None:
        path.write_text("half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(audit_cli, "replace_section", full_disk)
    code, line = audit(["--write", str(out)], capsys)
    assert code == 1
    assert line == f"{PREFIX}cannot write {out}: No space left on device; {out} left as it was"
    assert files(tmp_path) == {"findings.md": b"old"}


def test_end_to_end_the_real_audit_writes_its_sections(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    for engine in engines.ENGINES:
        reason = engine.missing_reason()
        if reason is not None:
            if pytestconfig.getoption(engine.require_option):
                pytest.fail(f"{engine.require_option} is given but {reason}")
            pytest.skip(f"audit: {reason}")
    (tmp_path / "docs").mkdir()
    command = [sys.executable, "-m", "junction", "audit", "findings", "--write"]
    refused = subprocess.run(
        [*command, "docs"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.splitlines()[-1] == f"{PREFIX}--write docs: is a folder, not a file"
    out = tmp_path / "docs" / "findings.md"
    out.write_text("# policies\n")
    done = subprocess.run(
        [*command, str(out)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.startswith("# policies\n\n" + AUDIT_BEGIN) and AUDIT_END in text
    assert text.rstrip().endswith(SGLANG_END)
    assert set(files(tmp_path)) == {"docs/findings.md"}
