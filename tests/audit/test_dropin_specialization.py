"""The drop-in leaves vLLM's objects in the shape CPython runs them fastest in.

On CPython 3.11 an instance keeps its attributes inline until something reads
its ``__dict__``; from then on it holds a real dict for good, and no call of a
method on it can be specialized. An adapter that read a coordinator's
``__dict__`` on every lookup slowed vLLM's own code (every
``coordinator.method()`` vLLM makes ran the generic lookup), while the
decisions timed alone showed nothing. So: after a run under
the drop-in, in each mode, the vLLM objects it reads hold their attributes
as they do after the same run of vLLM's own code, and no more of them.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest

from junction import dropin
from junction.audit.vllm.scheduler import make_request, serve
from junction.audit.vllm.scheduler_differential import Layout, layouts, workload
from junction.dropin import Mode

# A full-attention, a sliding-window and a Mamba group: every decision point runs.
LAYOUT = "full16+window40/16+mamba16 R=0"


def _objects(scheduler: Any) -> dict[str, Any]:
    """The vLLM objects the adapters read, by a name for the failure message."""
    manager = scheduler.kv_cache_manager
    coordinator = manager.coordinator
    found = {
        "Scheduler": scheduler,
        "KVCacheManager": manager,
        "coordinator": coordinator,
        "BlockPool": manager.block_pool,
    }
    for index, group in enumerate(coordinator.single_type_managers):
        found[f"group {index} manager"] = group
    return found


def _materialized(obj: Any, names: frozenset[str]) -> bool:
    """Whether ``obj`` holds its attributes in a real dict: one it refers to
    that has every attribute name a twin of it was built with (read from the
    twin, since reading ``obj``'s own ``__dict__`` would materialize it)."""
    return any(type(r) is dict and names <= r.keys() for r in gc.get_referents(obj))


def _run(layout: Layout, scheduler: Any) -> None:
    """Serve a seeded multi-turn workload one request at a time (so later
    prompts hit earlier ones' blocks)."""
    unit = layout.geometry.hash_block_size
    for r in workload(layout, 0, 40):
        serve(scheduler, make_request(r.request_id, r.prompt, unit, r.max_tokens))


@pytest.mark.parametrize("mode", list(Mode), ids=[m.value for m in Mode])
def test_no_vllm_object_reads_as_a_dict_after_a_run(mode: Mode) -> None:
    layout = next(candidate for candidate in layouts() if candidate.name == LAYOUT)

    scheduler = layout.build_scheduler
    names = {name: frozenset(vars(obj)) for name, obj in _objects(scheduler()).items()}

    def read_as_dict(served: Any) -> list[str]:
        return [name for name, obj in _objects(served).items() if _materialized(obj, names[name])]

    # vLLM's own shape after the same run: the Scheduler has too many
    # attributes to keep them inline at all, whatever runs.
    own = scheduler()
    _run(layout, own)
    served = scheduler()
    with dropin.swapped_in(mode):
        _run(layout, served)
    assert read_as_dict(served) == read_as_dict(own), mode.value
    # Nor does it add an attribute to any of them (where a class's shared
    # keys are used up, one more name materializes the dict); read last,
    # since ``vars`` materializes it.
    added = {
        name: set(vars(obj)) - set(vars(_objects(own)[name]))
        for name, obj in _objects(served).items()
    }
    assert not any(added.values()), f"{mode.value}: attributes added {added}"
