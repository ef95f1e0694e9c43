"""Which vLLM the drop-in accepts, and what ``installed()`` means.

* A local version label (``0.33.0+cu128``: the same release built for a
  platform) is vLLM 0.33.0; another release is refused.
* ``installed()`` is true only while vLLM's live classes (the ones its modules
  hold now) run the core: after ``importlib.reload`` of vLLM's scheduler or
  coordinator module vLLM runs its own code again, ``installed()`` says so,
  and ``install()`` swaps the core into the new classes. The reload runs in
  a fresh interpreter: it would leave this process's vLLM with two
  generations of classes.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from junction.upstream.pins import Pin
from junction.upstream.vllm_0_33.env import PINNED_VERSION

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("found", ["0.33.0", "0.33.0+cu128", "0.33.0+cpu.avx512"])
def test_a_local_version_label_is_the_pinned_release(
    monkeypatch: pytest.MonkeyPatch, found: str
) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda name: found)
    Pin("vllm", "vLLM", PINNED_VERSION, "audit").require(RuntimeError)


@pytest.mark.parametrize("found", ["0.33.1", "0.33.0.post1", "0.33.0rc1+cu128", "0.3.0+0.33.0"])
def test_another_release_is_refused_label_or_not(
    monkeypatch: pytest.MonkeyPatch, found: str
) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda name: found)
    with pytest.raises(RuntimeError, match=f"written against vLLM {PINNED_VERSION}, found"):
        Pin("vllm", "vLLM", PINNED_VERSION, "audit").require(RuntimeError)


_RELOAD = textwrap.dedent(
    """
    import importlib, sys
    from junction import dropin
    from junction.upstream.vllm_0_33.env import vllm

    v = vllm()
    for module in (v.scheduler, v.coordinator, v.managers):
        dropin.install()
        assert dropin.installed()
        importlib.reload(module)
        print(module.__name__, dropin.installed())
        dropin.install()  # onto the classes vLLM now runs
        live = dropin.decision_points()
        assert dropin.installed()
        assert all(cls.__dict__[name] is adapter for (cls, name), adapter in live.items())
        dropin.uninstall()
        assert not dropin.installed()
        assert all(cls.__dict__[name] is not adapter for (cls, name), adapter in live.items())
    """
)


def test_installed_is_false_after_a_reload_and_install_reaches_the_new_classes() -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    result = subprocess.run(
        [sys.executable, "-c", _RELOAD],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split("\n")[:3] == [
        "vllm.v1.core.sched.scheduler False",
        "vllm.v1.core.kv_cache_coordinator False",
        "vllm.v1.core.single_type_kv_cache_manager False",
    ]
