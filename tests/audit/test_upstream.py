"""The upstream layer: one package per vLLM release, which the drop-in picks by version.

* ``import junction.dropin`` (and installing it) loads core, the drop-in and
  the upstream layer only: nothing of the audit or the reference side.
* :data:`junction.upstream.VLLM_RELEASES` names exactly the release packages
  beside it; the installed vLLM (a local label included) picks 0.33.0's, any
  other release is refused naming the known ones.
* A second release is one more sibling package: a toy vLLM 9.99.0 whose
  lookup departures are fixed, added beside ``vllm_0_33`` and named, is what
  the drop-in picks when vLLM 9.99.0 is installed; its ``identical`` mode then
  answers as the core does, where 0.33.0's answers with the departure.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import junction.upstream
from junction import dropin
from junction.audit.vllm.engine import VllmEngine
from junction.audit.vllm.findings import FINDINGS
from junction.core import GroupSpec, InvalidArgument, JunctionError
from junction.reference.harness.scenario import Scenario
from junction.upstream import VLLM_RELEASES, VllmMissing, releases, vllm_0_33, vllm_release
from junction.upstream.vllm_0_33 import lookup_model, specs

ROOT = Path(__file__).resolve().parents[2]

_LOADED = textwrap.dedent(
    """
    import json, sys
    import junction.dropin
    imported = sorted(m for m in sys.modules if m.startswith("junction."))
    junction.dropin.install()
    installed = sorted(m for m in sys.modules if m.startswith("junction."))
    print(json.dumps([imported, installed]))
    """
)
_LAYER = {
    "junction.upstream",
    "junction.upstream.pins",
    "junction.upstream.releases",
}
_DROPIN = {
    "junction.dropin",
    "junction.dropin.bindings",
    "junction.dropin.errors",
    "junction.dropin.groups",
    "junction.dropin.lookup",
    "junction.dropin.mask",
    "junction.dropin.modes",
    "junction.dropin.split",
}
_RELEASE = {
    "junction.upstream.vllm_0_33",
    "junction.upstream.vllm_0_33.env",
    "junction.upstream.vllm_0_33.lookup_model",
    "junction.upstream.vllm_0_33.readers",
    "junction.upstream.vllm_0_33.specs",
}


def test_the_dropin_loads_core_and_the_upstream_layer_only() -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    result = subprocess.run(
        [sys.executable, "-c", _LOADED],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    imported, installed = (set(names) for names in json.loads(result.stdout.splitlines()[-1]))
    core = {name for name in installed if name.startswith("junction.core.")}
    assert core, "the drop-in loaded no module of the core"
    assert imported == {"junction.core"} | core | _DROPIN | _LAYER
    assert installed == imported | _RELEASE


def test_the_release_names_are_the_sibling_packages() -> None:
    folder = Path(junction.upstream.__file__).parent
    siblings = {p.parent.name for p in folder.glob("vllm_*/__init__.py")}
    assert set(VLLM_RELEASES) == siblings
    assert len(VLLM_RELEASES) == len(siblings)


@pytest.mark.parametrize("found", ["0.33.0", "0.33.0+cu128"])
def test_the_installed_release_picks_its_package(
    monkeypatch: pytest.MonkeyPatch, found: str
) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda name: found)
    assert vllm_release() is vllm_0_33
    assert vllm_release(found) is vllm_0_33


@pytest.mark.parametrize("found", ["0.33.1", "0.34.0", "0.33.0rc1"])
def test_a_release_no_package_knows_is_refused_naming_the_known(
    monkeypatch: pytest.MonkeyPatch, found: str
) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda name: found)
    known = re.escape(f"vLLM {found} is installed; Junction knows vLLM 0.33.0 (")
    with pytest.raises(RuntimeError, match=known):
        vllm_release()
    with pytest.raises(RuntimeError, match=known):
        dropin.install()
    assert not dropin.installed()


def test_without_vllm_the_release_is_missing_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def absent(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", absent)
    with pytest.raises(
        VllmMissing, match=r"vLLM 0\.33\.0 is not installed \(run `make audit-setup`"
    ):
        vllm_release()


# What a release's package provides, for a vLLM 9.99.0 that kept 0.33.0's
# modules, specs and pool reading and fixed the four lookup departures.
_TOY = '''
"""vLLM 9.99.0 (a toy): 0.33.0's modules and pools, no lookup departure left."""

import functools

from junction.upstream import Pin, VllmMissing
from junction.upstream.vllm_0_33.env import load_modules
from junction.upstream.vllm_0_33.readers import group_readers
from junction.upstream.vllm_0_33.specs import group_of

PIN = Pin("vllm", "vLLM", "9.99.0", "audit")


@functools.cache
def vllm():
    PIN.require(VllmMissing)
    return load_modules()


def core_group(manager_cls, spec, block_size):
    return group_of(vllm().managers, manager_cls, spec, block_size)


def vllm_lookup(geometry):
    return None  # its lookup is the core's
'''


@pytest.fixture
def installs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """``vllm_9_99`` beside ``vllm_0_33`` and named with it; the callable says
    which vLLM version is installed."""
    (tmp_path / "vllm_9_99").mkdir()
    (tmp_path / "vllm_9_99" / "__init__.py").write_text(_TOY, encoding="utf-8")
    monkeypatch.setattr(junction.upstream, "__path__", [*junction.upstream.__path__, str(tmp_path)])
    monkeypatch.setattr(releases, "VLLM_RELEASES", (*VLLM_RELEASES, "vllm_9_99"))
    real = importlib.metadata.version

    def install(version: str) -> None:
        fake = lambda name: version if name == "vllm" else real(name)  # noqa: E731
        monkeypatch.setattr(importlib.metadata, "version", fake)

    try:
        yield install
    finally:
        dropin.uninstall()
        sys.modules.pop("junction.upstream.vllm_9_99", None)


def _hit(scenario: Scenario) -> int:
    engine = VllmEngine(scenario.geometry)
    for prompt in scenario.prompts:
        engine.prefill(prompt, scenario.budget)
    return engine.lookup(scenario.probe).hit_length


def test_a_second_release_is_a_sibling_package_that_the_dropin_picks_by_version(
    installs: Callable[[str], None],
) -> None:
    installs("9.99.0")
    toy = vllm_release()
    assert toy.__name__ == "junction.upstream.vllm_9_99"  # type: ignore[attr-defined]
    assert vllm_release("0.33.0") is vllm_0_33
    # A counterexample of a 0.33.0 departure: in identical mode the drop-in
    # answers as the installed release does.
    finding = next(f for f in FINDINGS if f.key == "lookup-verified_set")
    with dropin.swapped_in("corrected"):
        corrected = _hit(finding.counterexample)
    with dropin.swapped_in("identical"):
        assert vllm_release() is toy
        as_toy = _hit(finding.counterexample)
    assert as_toy == corrected
    installs("0.33.0")
    with dropin.swapped_in("identical"):
        as_033 = _hit(finding.counterexample)
    assert as_033 != corrected, "0.33.0's departure no longer shows on its counterexample"


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: lookup_model.Quirks().only("no-such-quirk"), "name"),
        (
            lambda: specs.vllm_geometry(
                [GroupSpec.full(16), GroupSpec.mamba(16), GroupSpec.mamba(32)], 16
            ),
            "groups",
        ),
        (
            lambda: specs.vllm_geometry([GroupSpec.full(16)], 16, retention_interval=64),
            "retention_interval",
        ),
    ],
)
def test_the_layer_refuses_a_configuration_vllm_rejects_under_the_root(
    call: Callable[[], object], argument: str
) -> None:
    with pytest.raises(JunctionError) as raised:
        call()
    assert isinstance(raised.value, InvalidArgument)
    assert raised.value.argument == argument
