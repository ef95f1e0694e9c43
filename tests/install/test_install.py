"""What ``pip install .`` puts into a user's environment, read off the built wheel.

The wheel is built from a copy of the installable files (``pip wheel
--no-deps --no-build-isolation``: offline, with the pinned setuptools of the
``dev`` extra), then its RECORD, top_level.txt and METADATA are checked:

* one top-level name, ``junction``: no generic ``core``/``kernels``/... names;
* every module of every part (``tests/parts.py``) is in it under
  ``junction.``, plus ``py.typed`` (``setup.py`` finds the subpackages);
* the core's only requirement is attrs; the ``demo`` and ``reference`` extras
  pull no torch, Triton or vLLM, and every torch requirement is pinned (an
  unpinned one resolves to a multi-GB CUDA build);
* the licence: ``License-Expression: Apache-2.0`` and the LICENSE file.

The fresh-environment half (``pip install .`` into a new venv, ``mypy
--strict`` on a user file) needs the registry: ``make check-install``.
"""

from __future__ import annotations

import email.parser
import email.policy
import shutil
import subprocess
import sys
import zipfile
from email.message import EmailMessage

import pytest

from tests.parts import PARTS, ROOT

HEAVY = ("torch", "triton", "vllm")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("junction", *PARTS):
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=ignore)
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--quiet",
            "-w",
            str(out),
            str(source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"pip wheel failed:\n{result.stdout}\n{result.stderr}"
    (path,) = out.glob("junction-*.whl")
    return zipfile.ZipFile(path)


def _dist_info(wheel: zipfile.ZipFile) -> str:
    (name,) = {n.split("/")[0] for n in wheel.namelist() if ".dist-info/" in n}
    return name


def _metadata(wheel: zipfile.ZipFile) -> EmailMessage:
    text = wheel.read(f"{_dist_info(wheel)}/METADATA").decode()
    message = email.parser.Parser(policy=email.policy.default).parsestr(text)
    assert isinstance(message, EmailMessage)
    return message


def _requirements(wheel: zipfile.ZipFile, extra: str | None) -> list[str]:
    found = []
    for line in _metadata(wheel).get_all("Requires-Dist", []):
        requirement, _, marker = str(line).partition(";")
        if (extra is None and not marker) or (
            extra is not None and marker.strip() == f'extra == "{extra}"'
        ):
            found.append(requirement.strip())
    return found


def _name(requirement: str) -> str:
    for separator in ("==", ">=", "<=", "~=", ">", "<", "[", " "):
        requirement = requirement.split(separator)[0]
    return requirement.strip().lower()


def test_one_top_level_name(wheel: zipfile.ZipFile) -> None:
    dist_info = _dist_info(wheel)
    assert {n.split("/")[0] for n in wheel.namelist()} == {"junction", dist_info}
    assert wheel.read(f"{dist_info}/top_level.txt").decode().split() == ["junction"]
    record = wheel.read(f"{dist_info}/RECORD").decode().splitlines()
    outside = [r for r in record if not r.startswith(("junction/", f"{dist_info}/"))]
    assert outside == [], f"RECORD installs files outside junction/: {outside}"


def test_every_module_is_shipped_under_junction(wheel: zipfile.ZipFile) -> None:
    shipped = set(wheel.namelist())
    assert "junction/__init__.py" in shipped
    assert "junction/py.typed" in shipped, "no py.typed: mypy --strict users cannot type-check"
    missing = [
        f"junction/{path.relative_to(ROOT).as_posix()}"
        for folder in PARTS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if "__pycache__" not in path.parts
        and f"junction/{path.relative_to(ROOT).as_posix()}" not in shipped
    ]
    assert missing == [], f"modules missing from the wheel (setup.py's packages): {missing}"


def test_the_model_catalog_is_shipped(wheel: zipfile.ZipFile) -> None:
    # `junction hbm --model NAME` reads it beside the module, installed or not.
    catalog = ROOT / "reference" / "replay" / "catalog"
    wanted = {f"junction/reference/replay/catalog/{path.name}" for path in catalog.iterdir()}
    assert len(wanted) >= 9 and wanted <= set(wheel.namelist())


def test_the_release_list_is_shipped(wheel: zipfile.ZipFile) -> None:
    # `junction vendor check` believes a stamp only of a release it lists.
    assert "junction/reference/releases.json" in wheel.namelist()


def test_the_core_needs_only_attrs(wheel: zipfile.ZipFile) -> None:
    assert [_name(r) for r in _requirements(wheel, None)] == ["attrs"]


@pytest.mark.parametrize("extra", ["reference", "demo"])
def test_light_extras_pull_no_torch_and_no_vllm(wheel: zipfile.ZipFile, extra: str) -> None:
    names = [_name(r) for r in _requirements(wheel, extra)]
    assert names, f"no extra {extra!r}"
    assert not set(names) & set(HEAVY), f"extra {extra!r} pulls {set(names) & set(HEAVY)}"


def test_every_torch_requirement_is_pinned(wheel: zipfile.ZipFile) -> None:
    extras = _metadata(wheel).get_all("Provides-Extra", [])
    for extra in [None, *map(str, extras)]:
        for requirement in _requirements(wheel, extra):
            if _name(requirement) in ("torch", "triton"):
                assert "==" in requirement, f"extra {extra!r}: unpinned {requirement}"


def test_licence(wheel: zipfile.ZipFile) -> None:
    metadata = _metadata(wheel)
    assert metadata["License-Expression"] == "Apache-2.0"
    licence = wheel.read(f"{_dist_info(wheel)}/licenses/LICENSE").decode()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
