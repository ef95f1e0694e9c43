"""Fixtures the CLI tests share: their own working folder, hostile output paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT_USER = os.geteuid() == 0 if hasattr(os, "geteuid") else False


@pytest.fixture(autouse=True)
def own_working_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs in its own ``tmp_path``: a command's default output (``out``,
    ``out/sweep``) is then the test's, never the checkout's, and never one another
    worker's run holds the lock of (``make test`` runs tests side by side)."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def permissions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read-only means read-only, even for root (who may write anything): under root,
    ``os.access`` answers from the owner's mode bits."""
    if not ROOT_USER:
        return

    def by_mode(path: object, mode: int) -> bool:
        bits = os.stat(path).st_mode  # type: ignore[arg-type]
        needed = (0o200 if mode & os.W_OK else 0) | (0o100 if mode & os.X_OK else 0)
        return bits & needed == needed

    monkeypatch.setattr(os, "access", by_mode)
