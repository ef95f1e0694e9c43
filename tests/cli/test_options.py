"""Every flag of the ``junction`` subcommands is declared in one place.

Building every subcommand's parser with ``add_argument`` recording its caller
gives each flag's declaration sites (file and line); a flag two subcommands
share comes from one group of ``reference/cli/options.py``, so it has one.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from junction.audit.__main__ import main as audit
from junction.audit.vllm.suite.__main__ import main as vllm_suite
from junction.reference.cli.kernel_sweep import main as kernel_sweep
from junction.reference.cli.main import main as reference

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


def built(main: Callable[[list[str]], int], capsys: pytest.CaptureFixture[str]) -> None:
    """Build ``main``'s parsers (``--help`` builds them all, then exits 0)."""
    with pytest.raises(SystemExit) as ended:
        main(["--help"])
    assert ended.value.code == 0
    capsys.readouterr()


def twice(sites: Sites) -> dict[str, set[str]]:
    return {flag: where for flag, where in sites.items() if len(where) > 1}


def test_every_flag_of_every_subcommand_is_declared_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with recorded(monkeypatch) as sites:
        built(reference, capsys)
        built(kernel_sweep, capsys)
        built(audit, capsys)
        built(vllm_suite, capsys)
    assert {"--trace", "--seed", "--jobs", "--bound", "--seconds", "--policy"} <= set(sites)
    assert not twice(sites), f"flags declared in more than one place: {twice(sites)}"


def test_the_check_sees_a_flag_declared_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    with recorded(monkeypatch) as sites:
        argparse.ArgumentParser().add_argument("--seed", type=int)
        argparse.ArgumentParser().add_argument("--seed", type=int)
    assert list(twice(sites)) == ["--seed"]
