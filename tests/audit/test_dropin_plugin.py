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


def _load(
    mode: str | None, path: list[Path], script: str = _LOAD
) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "JUNCTION_VLLM_DROPIN"}
    env.pop("VLLM_PLUGINS", None)
    env["VLLM_TARGET_DEVICE"] = "cpu"
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in [*path, ROOT])
    if mode is not None:
        env["JUNCTION_VLLM_DROPIN"] = mode
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
        check=False,
    )


def test_pyproject_registers_the_plugin() -> None:
    assert _declared() == {"junction-dropin": "junction.vllm_plugin:register"}


@pytest.mark.parametrize("mode", ["corrected", "identical", None, ""])
def test_vllms_plugin_loader_installs_the_mode_the_variable_names(
    tmp_path: Path, mode: str | None
) -> None:
    result = _load(mode, [_dist_info(tmp_path)])
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"mode {mode or None}" in result.stdout.splitlines()


def _stopped_with(result: subprocess.CompletedProcess[str], line: str) -> None:
    """vLLM's start-up stopped (exit 1) with ``line`` as the one line of the cause."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr[-3000:])
    # No traceback through the plugin (a stale installed entry point may log its own).
    assert 'vllm_plugin.py"' not in result.stderr, result.stderr[-3000:]
    assert result.stderr.splitlines()[-1] == line, result.stderr[-3000:]


def test_a_mode_that_does_not_exist_stops_vllm_at_the_plugin(tmp_path: Path) -> None:
    result = _load("exact", [_dist_info(tmp_path)])
    _stopped_with(
        result,
        "junction: JUNCTION_VLLM_DROPIN='exact' asks for the drop-in, which cannot install: "
        "InvalidArgument: JUNCTION_VLLM_DROPIN='exact': must be one of 'corrected', 'identical'",
    )


# The drop-in fails to import (vLLM's loader logs a failed import and starts
# without the plugin), or imports and fails to install.
_IMPORT_FAILS = """
    import sys
    sys.modules["junction.dropin"] = None
    """
_INSTALL_FAILS = """
    from junction import dropin

    def install(mode):
        raise RuntimeError("no engine to install into")

    dropin.install = install
    """


@pytest.mark.parametrize(
    ("prelude", "cause"),
    [
        (
            _IMPORT_FAILS,
            "ModuleNotFoundError: import of junction.dropin halted; None in sys.modules",
        ),
        (_INSTALL_FAILS, "RuntimeError: no engine to install into"),
    ],
    ids=["import", "install"],
)
def test_a_drop_in_that_cannot_install_stops_vllm_in_one_line(
    tmp_path: Path, prelude: str, cause: str
) -> None:
    script = textwrap.dedent(prelude) + "from vllm.plugins import load_general_plugins\n"
    result = _load("corrected", [_dist_info(tmp_path)], script + "load_general_plugins()\n")
    _stopped_with(
        result,
        "junction: JUNCTION_VLLM_DROPIN='corrected' asks for the drop-in, which cannot install: "
        + cause,
    )


def _installed_declares_it() -> bool:
    try:
        points = importlib.metadata.distribution("junction").entry_points
    except importlib.metadata.PackageNotFoundError:
        return False
    return {point.name: point.value for point in points if point.group == GROUP} == _declared()


@pytest.mark.skipif(
    not _installed_declares_it(),
    reason="the installed junction's metadata declares another plugin (re-run `make setup`)",
)
@pytest.mark.parametrize("mode", ["corrected", "identical"])
def test_the_installed_package_is_loaded_by_vllm(mode: str) -> None:
    result = _load(mode, [])
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"mode {mode}" in result.stdout.splitlines()
