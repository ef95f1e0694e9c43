"""``vendor check`` believes neither a re-stamped copy nor a compiled file (issues 24, 38).

Before, a copy edited and stamped again under the same version and commit
checked clean, and a ``.so`` or ``.pyc`` that Python would import in place of
a module was ignored. A stamp is believed only for a release listed in
``reference/releases.json`` (the changelog's) or for the installed core.
"""

from __future__ import annotations

import importlib.machinery
import re
from pathlib import Path

import attrs
import pytest

from junction.command import dispatch as reference
from junction.reference import releases, vendoring

ROOT = Path(__file__).resolve().parents[2]


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
    split = vendored / "split.py"
    split.write_text(split.read_text().replace("lookahead), unit), 0)", "lookahead), unit), 1)"))
    _restamp(vendored)
    code = reference(["vendor", "check", str(vendored)])
    captured = capsys.readouterr()
    assert code == 1 and not captured.out  # the stamp agrees with the files, not the release
    assert captured.err.count("\n") == 1
    assert "its file digests are not that release's" in captured.err


def test_a_stamp_is_believed_for_a_published_release_or_the_installed_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    installed = vendoring.Stamp("1.0", "a" * 40, "now", (("x.py", "0" * 64),), "d" * 64)
    older = attrs.evolve(installed, version="0.9", commit="b" * 40, digest="e" * 64)
    assert releases.stamp_problem(installed, installed) is None
    assert releases.stamp_problem(attrs.evolve(installed, commit=None), installed) is None
    claimed = releases.stamp_problem(attrs.evolve(installed, digest="e" * 64), installed)
    assert claimed and "its file digests are not that release's" in claimed
    unknown = releases.stamp_problem(older, installed)
    assert unknown and "junction 0.9 (commit bbbbbbbbbbbb), not a release" in unknown
    published = (releases.Release("0.9", "b" * 40, "e" * 64),)
    monkeypatch.setattr(releases, "published", lambda: published)
    assert releases.stamp_problem(older, installed) is None
    forged = releases.stamp_problem(attrs.evolve(older, digest="f" * 64), installed)
    assert forged and "its file digests are not that release's" in forged


def test_the_published_releases_are_the_changelogs() -> None:
    """Each version CHANGELOG.md gives a heading of its own (not "Unreleased") is listed,
    and nothing else: the list a check believes is the project's record of releases."""
    changelog = (ROOT / "CHANGELOG.md").read_text()
    released = re.findall(r"^## (\d+\.\d+\.\d+)\b", changelog, flags=re.MULTILINE)
    listed = [release.version for release in releases.published()]
    assert sorted(listed) == sorted(released)
    for release in releases.published():
        assert len(release.commit) == 40 and len(release.digest) == 64


@pytest.mark.parametrize(
    "name", [f"split{importlib.machinery.EXTENSION_SUFFIXES[0]}", "grid.pyc", "extra.so"]
)
def test_a_compiled_file_in_the_copy_fails_the_check(
    vendored: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (vendored / name).write_bytes(b"\x7fELF not really")
    code, out = _check(vendored, capsys)
    assert code == 1 and "files Python may import in place of the sources (1)" in out
    assert f"  {name} (importable, and not a source)" in out
