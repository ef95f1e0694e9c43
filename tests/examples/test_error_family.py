"""One error root: ``except junction.core.JunctionError`` catches every error Junction raises.

Two checks (docs/design/error-root.md). The walk: every public error class
(an ``Exception``) any module of ``junction`` defines derives from the root;
a class whose name starts with ``_`` is an internal signal, raised and caught
inside one module, and an interrupt (a ``BaseException`` only, as
``KeyboardInterrupt``) is no error. The modules are imported in a child process where torch, Triton,
vLLM and SGLang are absent, as on the demo install; a module that needs one
of them is read from its source instead, its classes' bases resolved by
name. The table: a representative bad input at each layer, from a core call
to the values a command-line option becomes, raises something the root
catches (and the built-in error the class specialises).
"""

from __future__ import annotations

import ast
import builtins
import json
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

import junction
from junction.audit import engines
from junction.core import GroupSpec, HybridGeometry, InvalidArgument, JunctionError
from junction.reference.engine import Engine, EngineConfig
from junction.reference.engine.eviction import FlopModel, eviction_policy
from junction.reference.harness import Promise, Scenario
from junction.reference.policies import JunctionOptions, JunctionPolicy, resolve_policy
from junction.reference.replay.models import catalog_model
from junction.reference.simulator.parallel import run_all
from junction.reference.simulator.pool import PoolSize
from junction.reference.simulator.run import Settings
from junction.reference.simulator.variants import Variant
from junction.reference.vendoring import Stamp
from junction.reference.workloads.step_time import StepTimeModel
from junction.reference.workloads.trace import parse_trace
from junction.reference.workloads.tracefile import parse_any_trace

# The walk, run in a child: the optional engines absent, every module imported.
WALK = r"""
import importlib, importlib.abc, json, pkgutil, sys
from pathlib import Path

ABSENT = {"torch", "triton", "vllm", "sglang"}


class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ABSENT:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Absent())
import junction
from junction.core import JunctionError


def names(folder, prefix):
    for info in pkgutil.iter_modules([str(folder)]):
        if info.name != "__main__":
            yield prefix + info.name
        if info.ispkg:
            yield from names(Path(folder) / info.name, f"{prefix}{info.name}.")


classes, unread = {}, {}
for name in names(junction.__path__[0], "junction."):
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in ABSENT:
            raise
        unread[name] = error.name
        continue
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, Exception):
            if value.__module__ == name:
                classes[f"{name}.{value.__qualname__}"] = issubclass(value, JunctionError)
print(json.dumps({"classes": classes, "unread": unread}))
"""

BUILTIN = {n for n in dir(builtins) if n.endswith(("Error", "Exception"))}  # no interrupt


def walk() -> tuple[dict[str, bool], dict[str, str]]:
    """(every error class of an imported module -> whether it derives from the root,
    each module the child could not import -> the absent engine it needs)."""
    done = subprocess.run(
        [sys.executable, "-c", WALK], capture_output=True, text=True, check=True, timeout=300
    )
    found = json.loads(done.stdout)
    return found["classes"], found["unread"]


def source_of(module: str) -> Path:
    parts = module.split(".")[1:]
    base = Path(junction.__path__[0]).joinpath(*parts)
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def read_classes(modules: list[str], known: dict[str, bool]) -> dict[str, bool]:
    """The error classes the ``modules``' source defines -> whether they derive from
    the root, their bases resolved by name (``known``: the imported classes)."""
    by_name = {qualified.rsplit(".", 1)[-1]: root for qualified, root in known.items()}
    by_name |= dict.fromkeys(BUILTIN, False) | {"JunctionError": True}
    bases: dict[str, list[str]] = {}
    for module in modules:
        for node in ast.walk(ast.parse(source_of(module).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names = [ast.unparse(base).split(".")[-1] for base in node.bases]
                bases[f"{module}.{node.name}"] = names
    found: dict[str, bool] = {}
    changed = True
    while changed:  # a class deriving from an error, or from one found here
        changed = False
        for qualified, names in bases.items():
            if qualified not in found and any(n in by_name for n in names):
                found[qualified] = any(by_name.get(n, False) for n in names)
                by_name[qualified.rsplit(".", 1)[-1]] = found[qualified]
                changed = True
    return found


def test_every_public_error_derives_from_the_root() -> None:
    classes, unread = walk()
    # The walk reaches every layer: the errors of each part.
    for expected in (
        "junction.core.errors.InvalidArgument",
        "junction.reference.workloads.trace.TraceError",
        "junction.reference.engine.policy.PolicyError",
        "junction.reference.engine.invariants.InvariantViolation",
        "junction.dropin.errors.UnsupportedOption",
    ):
        assert classes.get(expected) is True, expected
    assert set(unread.values()) <= {"torch", "triton", "vllm", "sglang"}
    classes |= read_classes(sorted(unread), classes)
    public = {n: root for n, root in classes.items() if not n.rsplit(".", 1)[-1].startswith("_")}
    assert [name for name, root in public.items() if not root] == []
    assert len(public) >= 20


def test_the_root_and_its_builtins() -> None:
    from junction.dropin.errors import UnsupportedOption
    from junction.reference.workloads.trace import TraceError

    assert InvalidArgument.__mro__[1:3] == (JunctionError, ValueError)
    assert issubclass(UnsupportedOption, NotImplementedError)
    assert issubclass(TraceError, ValueError)
    error = InvalidArgument("num_blocks", 1, "a pool needs the null block and one more")
    assert str(error) == "num_blocks=1: a pool needs the null block and one more"
    back = pickle.loads(pickle.dumps(error))  # a worker process's error arrives whole
    assert (back.argument, back.value, back.rule, str(back)) == (
        "num_blocks",
        1,
        error.rule,
        str(error),
    )


GEOMETRY = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4)
SETTINGS = {
    "num_blocks": 64,
    "max_num_batched_tokens": 64,
    "chunk_tokens": 0,
    "use_eagle": False,
    "concurrency": 1,
    "seed": 0,
}
HASH_LINE = '{"timestamp": -1, "input_length": 1, "output_length": 1, "hash_ids": [0]}\n'

# (layer and input, the call, the built-in the error also is)
BAD_INPUTS: list[tuple[str, Callable[[], object], type[Exception]]] = [
    ("core: a block size of 0", lambda: GroupSpec.full(0), ValueError),
    ("core: a geometry with no group", lambda: HybridGeometry([], 4), ValueError),
    (
        "engine config: a pool of 0 blocks",
        lambda: EngineConfig(GEOMETRY, num_blocks=0, policy=JunctionPolicy()),
        ValueError,
    ),
    (
        "engine: a prompt with no token",
        lambda: Engine(EngineConfig(GEOMETRY, num_blocks=64, policy=JunctionPolicy())).submit(
            [], 1
        ),
        ValueError,
    ),
    (
        "engine: a request the pool never holds",
        lambda: Engine(EngineConfig(GEOMETRY, num_blocks=4, policy=JunctionPolicy())).submit(
            list(range(1, 200)), 1
        ),
        ValueError,
    ),
    ("engine: an unknown eviction", lambda: eviction_policy("mru", FlopModel(1)), ValueError),
    ("policy registry: an unknown name", lambda: resolve_policy("no-such-policy"), Exception),
    ("policy registry: module:attribute", lambda: resolve_policy("os:no_such"), Exception),
    (
        "policy options: an alignment of 0",
        lambda: JunctionOptions(prefill_checkpoint_alignment=0),
        ValueError,
    ),
    ("trace: a line that is not JSON", lambda: parse_trace("{\n", "t.jsonl"), ValueError),
    ("trace: a hash-id line", lambda: parse_any_trace(HASH_LINE, "h.jsonl"), ValueError),
    ("harness: an unknown promise", lambda: Promise.named("nope"), ValueError),
    (
        "harness: a scenario's budget of 0",
        lambda: Scenario("safety", GEOMETRY, [[1, 2]], budget=0),
        ValueError,
    ),
    ("option --arrivals", lambda: Settings(**SETTINGS, arrivals="bogus"), ValueError),  # type: ignore[arg-type]
    ("option --chunk", lambda: Settings(**{**SETTINGS, "chunk_tokens": -1}), ValueError),  # type: ignore[arg-type]
    ("option --policy", lambda: Variant("nosuch", 0), ValueError),
    ("option --blocks", lambda: PoolSize("blocks", 1), ValueError),
    ("option --jobs", lambda: run_all([], jobs=0), ValueError),
    ("option --step-ms", lambda: StepTimeModel(step_ms=-1.0), ValueError),
    ("option --model", lambda: catalog_model("no-such-model"), ValueError),
    ("vendor: a folder that is no copy", lambda: Stamp.read(Path("/nonexistent")), Exception),
    (
        "audit: an engine's name",
        lambda: attrs.evolve(engines.ENGINES[0], name="Toy"),
        ValueError,
    ),
]


@pytest.mark.parametrize(("where", "call", "builtin"), BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_a_bad_input_at_every_layer_is_caught_by_the_root(
    where: str, call: Callable[[], object], builtin: type[Exception]
) -> None:
    with pytest.raises(JunctionError) as info:
        call()
    assert isinstance(info.value, builtin)
    assert str(info.value)  # a message, never an empty error
