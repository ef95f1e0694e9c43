"""The drop-in as a vLLM general plugin, loaded by vLLM's own plugin loader.

Each case runs a fresh interpreter that calls ``vllm.plugins.load_general_plugins``
with ``JUNCTION_VLLM_DROPIN`` set (or not) and reports what vLLM's live classes
run. The entry point is the one pyproject.toml declares: from a checkout it
is published through a temporary ``dist-info`` on the subprocess's path (the
editable install's metadata may predate it); where the installed package
already declares it (``make setup`` re-ran ``pip install -e .``, as CI does), a
second case loads it from the installed metadata alone.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GROUP = "vllm.general_plugins"

_LOAD = textwrap.dedent(
    """
    from junction import dropin
    from vllm.plugins import load_general_plugins

    assert not dropin.installed()
    load_general_plugins()
    load_general_plugins()  # vLLM loads plugins in several places; once per process
    mode = dropin.installed_mode()
    print("mode", None if mode is None else mode.value)
    if mode is not None:
        live = dropin.decision_points(mode)
        assert all(cls.__dict__[name] is fn for (cls, name), fn in live.items())
    """
)


def _declared() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return dict(project["entry-points"][GROUP])


def _dist_info(folder: Path) -> Path:
    """A ``dist-info`` publishing pyproject's entry points of the group (and nothing else)."""
    info = folder / "junction_dropin_checkout-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: junction-dropin-checkout\nVersion: 0.0\n", encoding="utf-8"
    )
    lines = [f"[{GROUP}]", *(f"{name} = {value}" for name, value in _declared().items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _load(mode: str | None, path: list[Path]) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "JUNCTION_VLLM_DROPIN"}
    env.pop("VLLM_PLUGINS", None)
    env["VLLM_TARGET_DEVICE"] = "cpu"
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in [*path, ROOT])
    if mode is not None:
        env["JUNCTION_VLLM_DROPIN"] = mode
    return subprocess.run(
        [sys.executable, "-c", _LOAD],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
        check=False,
    )


def test_pyproject_registers_the_plugin() -> None:
    assert _declared() == {"junction-dropin": "junction.dropin.plugin:register"}


@pytest.mark.parametrize("mode", ["corrected", "identical", None, ""])
def test_vllms_plugin_loader_installs_the_mode_the_variable_names(
    tmp_path: Path, mode: str | None
) -> None:
    result = _load(mode, [_dist_info(tmp_path)])
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"mode {mode or None}" in result.stdout.splitlines()


def test_a_mode_that_does_not_exist_stops_vllm_at_the_plugin(tmp_path: Path) -> None:
    result = _load("exact", [_dist_info(tmp_path)])
    assert result.returncode != 0
    assert "InvalidArgument: JUNCTION_VLLM_DROPIN='exact': must be one of" in result.stderr


def _installed_declares_it() -> bool:
    try:
        points = importlib.metadata.distribution("junction").entry_points
    except importlib.metadata.PackageNotFoundError:
        return False
    return any(point.group == GROUP for point in points)


@pytest.mark.skipif(
    not _installed_declares_it(),
    reason="the installed junction's metadata predates the plugin (re-run `make setup`)",
)
@pytest.mark.parametrize("mode", ["corrected", "identical"])
def test_the_installed_package_is_loaded_by_vllm(mode: str) -> None:
    result = _load(mode, [])
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"mode {mode}" in result.stdout.splitlines()
