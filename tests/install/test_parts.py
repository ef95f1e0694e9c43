"""The one list of the package's parts agrees with everything built on it.

``[tool.junction] parts`` (``pyproject.toml``) names each top-level folder
installed as ``junction.<part>``. ``setup.py`` reads it (the wheel's contents
are ``test_install.py``'s); here: ``junction/`` links exactly the listed parts,
each as ``junction/<part> -> ../<part>``; the import contracts name no
``junction.X`` that is neither a part nor a module of ``junction/`` itself, and
the contract holding every module names every part; mutmut copies no part,
and its plugin links the checkout in beside the mutated part.
"""

from __future__ import annotations

import os
import re
import shutil
import tomllib
from pathlib import Path

from tests.parts import PARTS, ROOT, parts
from tests.properties.mutmut_plugin import _link_namespace

NAMESPACE = ROOT / "junction"
TOP_LEVEL = re.compile(r"\bjunction\.(\w+)")


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _contracts() -> list[dict[str, object]]:
    tool = _pyproject()["tool"]
    assert isinstance(tool, dict)
    contracts = tool["importlinter"]["contracts"]
    assert isinstance(contracts, list)
    return contracts


def _named(value: object) -> set[str]:
    """The top-level names under ``junction`` that a contract's field mentions."""
    texts = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return {name for text in texts for name in TOP_LEVEL.findall(str(text))}


def test_the_list_names_each_top_level_folder_once() -> None:
    assert PARTS, "pyproject.toml: [tool.junction] parts is empty"
    assert len(set(PARTS)) == len(PARTS), f"a part listed twice: {PARTS}"
    for part in PARTS:
        assert (ROOT / part / "__init__.py").is_file(), f"part {part!r}: no {part}/__init__.py"


def test_junction_links_exactly_the_parts() -> None:
    links = {entry.name: os.readlink(entry) for entry in NAMESPACE.iterdir() if entry.is_symlink()}
    assert sorted(links) == sorted(PARTS), (
        f"junction/ links {sorted(links)}, [tool.junction] parts lists {sorted(PARTS)}"
    )
    wrong = {name: target for name, target in links.items() if Path(target) != Path("..", name)}
    assert wrong == {}, f"links not of the form junction/<part> -> ../<part>: {wrong}"


def test_the_import_contracts_name_only_parts_and_cover_every_part() -> None:
    own = {path.stem for path in NAMESPACE.glob("*.py")}
    known = set(PARTS) | own
    every_module = []
    for contract in _contracts():
        named = set().union(*(_named(value) for value in contract.values()))
        unknown = named - known
        assert not unknown, (
            f"contract {contract['name']!r} names junction.{sorted(unknown)}: "
            "neither a part ([tool.junction] parts) nor a module of junction/"
        )
        if contract["type"] == "layers" and "containers" not in contract:
            every_module.append(_named(contract["layers"]))
    assert every_module, "no layers contract over the whole package"
    missing = [sorted(set(PARTS) - named) for named in every_module if set(PARTS) - named]
    assert not missing, f"parts in no layer of the whole-package contract: {missing}"


def test_mutmut_copies_no_part_and_its_plugin_links_the_checkout_in(tmp_path: Path) -> None:
    mutmut = _pyproject()["tool"]["mutmut"]  # type: ignore[index]
    copied = {Path(path).parts[0] for path in mutmut["also_copy"]}
    assert not copied & set(PARTS), f"[tool.mutmut] also_copy copies parts: {copied & set(PARTS)}"
    checkout = tmp_path / "checkout"
    for name in (*PARTS, "junction", "docs", ".git"):
        (checkout / name).mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, checkout / name)
    (checkout / "junction" / "__init__.py").write_text("")
    # What mutmut leaves: the mutated part under junction/, tests, pyproject, also_copy.
    mutants = checkout / "mutants"
    mutated = mutants / "junction" / PARTS[0]
    mutated.mkdir(parents=True)
    (mutants / "docs").mkdir()
    shutil.copy2(ROOT / "pyproject.toml", mutants / "pyproject.toml")
    _link_namespace(mutants)
    assert parts(mutants) == PARTS
    assert mutated.is_dir() and not mutated.is_symlink()
    for part in PARTS[1:]:
        assert os.readlink(mutants / "junction" / part) == os.path.join("..", part)
    for name in (*PARTS, "README.md"):
        assert (mutants / name).resolve() == (checkout / name).resolve(), name
    assert not (mutants / "docs").is_symlink() and not (mutants / ".git").exists()
    assert (mutants / "junction" / "__init__.py").is_file()
