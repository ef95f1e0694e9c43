"""Fixtures the CLI tests of hostile output paths share."""

from __future__ import annotations

import os

import pytest

ROOT_USER = os.geteuid() == 0 if hasattr(os, "geteuid") else False


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
