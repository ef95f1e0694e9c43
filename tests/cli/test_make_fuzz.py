"""``make fuzz POLICY=...`` on a fresh clone installs the demo extra only (no torch, no vLLM).

``make -n -B`` prints what make would run with every target out of date, as
on a fresh clone, without running it. The fuzz path itself imports nothing
the demo extra lacks.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_fuzz_with_a_policy_installs_only_the_demo_extra() -> None:
    planned = subprocess.run(
        ["make", "-n", "-B", "fuzz", "POLICY=my_module:MyPolicy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    installs = [line for line in planned.splitlines() if "pip install" in line]
    assert installs and all('-e ".[demo]"' in line for line in installs), installs
    assert ".venv/bin/junction fuzz --policy my_module:MyPolicy" in planned


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_fuzz_passes_the_policy_path_to_the_worker_only() -> None:
    planned = subprocess.run(
        ["make", "-n", "-B", "fuzz", "POLICY=my_module:MyPolicy", "POLICY_PATH=src"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    command = " ".join(planned.replace("\\\n", " ").split())  # the recipe's lines joined
    assert "junction fuzz --policy my_module:MyPolicy --seconds 60 --policy-path src" in command
    assert "PYTHONPATH" not in command


def test_the_fuzz_path_imports_nothing_the_demo_extra_lacks() -> None:
    code = (
        "import sys; from junction.reference.cli import fuzz; "
        "import junction.reference.isolation._worker; "
        "print(sorted(m for m in ('torch', 'triton', 'numpy', 'vllm', 'sglang', 'ray') "
        "if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
