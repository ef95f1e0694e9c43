"""``junction hbm`` on the demo install: no transformers, no torch, no vLLM, no foreign warning.

The command runs in a subprocess whose imports of the model and engine
libraries fail as on ``make demo``'s install (attrs, hypothesis, rich,
matplotlib), whatever this environment has: a meta-path finder refuses
them. With Python's warnings shown (``-W default``), standard error must
hold no warning and no traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = ("transformers", "torch", "vllm", "triton", "sglang", "huggingface_hub")

# Runs ``python -m junction ARGS`` with the libraries above not importable.
_WITHOUT = f"""
import runpy, sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {BLOCKED!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Blocked())
runpy.run_module("junction", run_name="__main__", alter_sys=True)
"""


def _junction(*argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-W", "default", "-c", _WITHOUT, *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_the_blocker_blocks() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT.replace("runpy.run_module", "import transformers #")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 1 and "No module named 'transformers'" in done.stderr


@pytest.mark.parametrize("model", ["qwen3-next-80b-a3b", "gemma-3-27b"])
def test_hbm_runs_without_model_libraries(tmp_path: Path, model: str) -> None:
    pytest.importorskip("matplotlib")
    points, plot = tmp_path / "curve.json", tmp_path / "curve.png"
    argv = ["hbm", "--model", model, "--requests", "20", "--hbm", "8,64"]
    done = _junction(*argv, "--evictions", "lru,belady", "--json", str(points), "--plot", str(plot))
    assert done.returncode == 0, done.stderr
    assert "hit rate, belady eviction; pool in GiB" in done.stdout
    for word in ("warning", "Traceback", "transformers", "torch"):
        assert word.lower() not in done.stderr.lower(), done.stderr
    assert len(json.loads(points.read_text())["points"]) == 4 * 2 * 2
    assert plot.stat().st_size > 0
