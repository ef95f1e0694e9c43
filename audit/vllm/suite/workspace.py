"""vLLM 0.33.0's own tests, unpacked from its PyPI sdist, ready to run offline.

vLLM's wheel ships no tests; its sdist does. ``pip download`` would build the
sdist's metadata, which needs CUDA tooling, so the archive is fetched from
the index pip is configured with through its simple API, checked against the
sha256 pinned here and the index's, and cached. Only what the selected test
files import is unpacked. The scheduler tests build a ``ModelConfig`` for
``facebook/opt-125m``: :func:`prepare` writes that configuration into the
hub cache with transformers' ``OPTConfig`` (no download), naming the
architecture ``OPTForCausalLM`` as the published file does, so vLLM runs the
scheduler a generating model gets.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import subprocess
import sys
import tarfile
import urllib.parse
import urllib.request
from pathlib import Path

import attrs

from junction.upstream.vllm_0_33.env import PINNED_VERSION

__all__ = ["SDIST_SHA256", "TEST_FILES", "Workspace", "prepare"]

SDIST = f"vllm-{PINNED_VERSION}.tar.gz"
SDIST_SHA256 = "f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112"
TOP = f"vllm-{PINNED_VERSION}"

# The test files whose tests may exercise the three decision points.
TEST_FILES = (
    "tests/v1/core/test_mamba_align_chunk_split.py",
    "tests/v1/core/test_prefix_caching.py",
    "tests/v1/core/test_single_type_kv_cache_manager.py",
    "tests/v1/core/test_scheduler.py",
    "tests/v1/core/test_kv_cache_utils.py",
    "tests/v1/core/prefix_cache/test_mamba_eagle_resume_checkpoint.py",
    "tests/v1/core/prefix_cache/test_partial_prefix_cache_hits.py",
    "tests/v1/core/prefix_cache/test_partial_prefix_cache_primitives.py",
)
# What they import besides vLLM (found by running them).
_SUPPORT = (
    "pyproject.toml",
    "tests/__init__.py",
    "tests/v1/__init__.py",
    "tests/v1/core/__init__.py",
    "tests/v1/core/utils.py",
    "tests/v1/kv_connector/__init__.py",
    "tests/v1/kv_connector/unit/__init__.py",
    "tests/v1/kv_connector/unit/utils.py",
)
_MODEL = "facebook/opt-125m"
_REVISION = "0" * 40
_ARCHITECTURES = ["OPTForCausalLM"]  # as opt-125m's published config.json


@attrs.frozen
class Workspace:
    """The unpacked tests (``root``, pytest's rootdir) and the offline hub cache (``hf_home``)."""

    root: Path
    hf_home: Path

    def environment(self) -> dict[str, str]:
        """The environment vLLM's tests run in: CPU platform, hub offline, quiet logs."""
        env = dict(os.environ)
        env.update(
            VLLM_TARGET_DEVICE="cpu",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            HF_HOME=str(self.hf_home),
            VLLM_LOGGING_LEVEL="ERROR",
        )
        return env


def prepare(cache: Path) -> Workspace:
    """The workspace under ``cache``, downloading and unpacking only what is missing."""
    cache = cache.resolve()  # the test processes run inside it
    cache.mkdir(parents=True, exist_ok=True)
    archive = cache / SDIST
    if not archive.exists() or _sha256(archive) != SDIST_SHA256:
        _download(archive)
    root = cache / TOP
    if not all((root / name).exists() for name in (*TEST_FILES, *_SUPPORT)):
        members = {f"{TOP}/{name}" for name in (*TEST_FILES, *_SUPPORT)}
        with tarfile.open(archive) as tar:
            tar.extractall(
                cache, members=[m for m in tar.getmembers() if m.name in members], filter="data"
            )
    hf_home = cache / "hf"
    _write_model_config(hf_home)
    return Workspace(root, hf_home)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _index_url() -> str:
    answer = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.index-url"],
        capture_output=True,
        text=True,
        check=False,
    )
    url = answer.stdout.strip() if answer.returncode == 0 else ""
    return os.environ.get("PIP_INDEX_URL") or url or "https://pypi.org/simple"


def _sdist_link(index: str) -> tuple[str, str | None]:
    """The sdist's URL on the index's project page and the sha256 it lists (if any).

    Asks for the JSON page (PEP 691) and reads the HTML one (PEP 503) when
    the index only has that.
    """
    page = f"{index.rstrip('/')}/vllm/"
    accept = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
    request = urllib.request.Request(page, headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=60) as answer:
        kind = answer.headers.get("Content-Type", "")
        body = answer.read().decode("utf-8")
    if "json" in kind:
        for entry in json.loads(body)["files"]:
            if entry["filename"] == SDIST:
                return urllib.parse.urljoin(page, entry["url"]), entry.get("hashes", {}).get(
                    "sha256"
                )
    else:
        for href, text in re.findall(r'<a[^>]*href="([^"]*)"[^>]*>([^<]*)</a>', body):
            if text.strip() == SDIST:
                url, _, fragment = html.unescape(href).partition("#")
                listed = (
                    fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else None
                )
                return urllib.parse.urljoin(page, url), listed
    raise RuntimeError(f"{page} lists no {SDIST}")


def _download(archive: Path) -> None:
    index = _index_url()
    url, listed = _sdist_link(index)
    if listed is not None and listed != SDIST_SHA256:
        raise RuntimeError(f"{index} lists {SDIST} with sha256 {listed}, pinned {SDIST_SHA256}")
    partial = archive.with_suffix(".part")
    with urllib.request.urlopen(url, timeout=300) as answer, partial.open("wb") as out:
        while chunk := answer.read(1 << 20):
            out.write(chunk)
    if (got := _sha256(partial)) != SDIST_SHA256:
        partial.unlink()
        raise RuntimeError(f"downloaded {SDIST} has sha256 {got}, pinned {SDIST_SHA256}")
    partial.replace(archive)


def _write_model_config(hf_home: Path) -> None:
    repo = hf_home / "hub" / f"models--{_MODEL.replace('/', '--')}"
    snapshot = repo / "snapshots" / _REVISION
    written = snapshot / "config.json"
    if written.exists() and (
        json.loads(written.read_text(encoding="utf-8")).get("architectures") == _ARCHITECTURES
    ):
        return
    from transformers import OPTConfig  # vLLM's dependency; slow to import, needed once

    snapshot.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(_REVISION, encoding="utf-8")
    # opt-125m is published in fp16, as a causal LM.
    OPTConfig(dtype="float16", architectures=_ARCHITECTURES).save_pretrained(snapshot)
