"""Every flag of the ``junction`` subcommands is declared in one place.

Declaring every subcommand's options (its ``--help``) with ``add_argument``
recording its caller gives each flag's declaration sites (file and line); a flag two subcommands
share comes from one group of ``reference/cli/options.py``, so it has one.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from junction.command import COMMANDS, Group, dispatch

Sites = dict[str, set[str]]


@contextmanager
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sites]:
    """Within: each flag declared, with the ``file:line`` of every ``add_argument`` naming it."""
    sites: Sites = defaultdict(set)
    original = argparse._ActionsContainer.add_argument

    def add_argument(self: Any, *names: Any, **options: Any) -> argparse.Action:
        caller = sys._getframe(1)
        for name in names:
            if name.startswith("-") and name not in ("-h", "--help"):
                sites[name].add(f"{Path(caller.f_code.co_filename).name}:{caller.f_lineno}")
        return original(self, *names, **options)

    with monkeypatch.context() as patch:
        patch.setattr(argparse._ActionsContainer, "add_argument", add_argument)
        yield sites


def every_subcommand() -> Iterator[list[str]]:
    """The command line naming each subcommand (``audit findings`` for a group's)."""
    for row in COMMANDS:
        if isinstance(row, Group):
            yield from ([row.name, command.name] for command in row.commands)
        else:
            yield [row.name]


def built(path: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Declare the options of ``junction PATH`` (its ``--help`` does, then exits 0)."""
    with pytest.raises(SystemExit) as ended:
        dispatch([*path, "--help"])
    assert ended.value.code == 0
    capsys.readouterr()


def twice(sites: Sites) -> dict[str, set[str]]:
    return {flag: where for flag, where in sites.items() if len(where) > 1}


def test_every_flag_of_every_subcommand_is_declared_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with recorded(monkeypatch) as sites:
        for path in every_subcommand():
            built(path, capsys)
    assert {"--trace", "--seed", "--jobs", "--bound", "--seconds", "--policy"} <= set(sites)
    assert not twice(sites), f"flags declared in more than one place: {twice(sites)}"


def test_the_check_sees_a_flag_declared_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    with recorded(monkeypatch) as sites:
        argparse.ArgumentParser().add_argument("--seed", type=int)
        argparse.ArgumentParser().add_argument("--seed", type=int)
    assert list(twice(sites)) == ["--seed"]
