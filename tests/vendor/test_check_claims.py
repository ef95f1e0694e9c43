"""``vendor check`` believes neither a re-stamped copy nor a compiled file (issue 24).

Before, a copy edited and stamped again under the same version and commit
checked clean, and a ``.so`` or ``.pyc`` that Python would import in place of
a module was ignored.
"""

from __future__ import annotations

import importlib.machinery
from pathlib import Path

import attrs
import pytest

from junction.command import dispatch as reference
from junction.reference import vendoring


def _check(target: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = reference(["vendor", "check", str(target)])
    return code, capsys.readouterr().out


def _restamp(target: Path) -> None:
    """Write a stamp that matches the copy's edited files, keeping version and commit."""
    stamp = vendoring.Stamp.read(target)
    hashes = vendoring.content_hashes(target)
    forged = attrs.evolve(
        stamp, files=tuple(sorted(hashes.items())), digest=vendoring.set_digest(hashes)
    )
    (target / vendoring.STAMP_NAME).write_text(forged.to_json(), encoding="utf-8")


def test_a_copy_edited_and_stamped_again_is_not_the_release_it_claims(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    installed = vendoring.source_stamp()
    if installed.commit is None or installed.commit.endswith("-dirty"):
        pytest.skip("the installed core is not a clean commit: no release to hold it to")
    split = vendored / "split.py"
    split.write_text(split.read_text().replace("lookahead), unit), 0)", "lookahead), unit), 1)"))
    _restamp(vendored)
    code, out = _check(vendored, capsys)
    assert code == 1 and "local edits: none" in out  # the stamp agrees with the files...
    assert "its file digests are not that release's" in out  # ...but not with the release


def test_forged_release_compares_the_claim_with_the_installed_digests() -> None:
    installed = vendoring.Stamp("1.0", "a" * 40, "now", (("x.py", "0" * 64),), "d" * 64)
    assert vendoring.forged_release(attrs.evolve(installed, digest="e" * 64), installed)
    assert not vendoring.forged_release(installed, installed)
    other = attrs.evolve(installed, version="0.9", digest="e" * 64)  # another release: unknown
    assert not vendoring.forged_release(other, installed)
    dirty = attrs.evolve(installed, commit="a" * 40 + "-dirty")
    assert not vendoring.forged_release(attrs.evolve(dirty, digest="e" * 64), dirty)


@pytest.mark.parametrize(
    "name", [f"split{importlib.machinery.EXTENSION_SUFFIXES[0]}", "grid.pyc", "extra.so"]
)
def test_a_compiled_file_in_the_copy_fails_the_check(
    vendored: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (vendored / name).write_bytes(b"\x7fELF not really")
    code, out = _check(vendored, capsys)
    assert code == 1 and f"compiled files that would be imported (1): {name}" in out
