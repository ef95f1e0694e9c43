"""What a CLI test sees of an output folder: every file in it, by relative path."""

from __future__ import annotations

from pathlib import Path

__all__ = ["files"]


def files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden temporaries included), by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
