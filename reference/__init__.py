"""Junction's reference side, in layers that import only downwards.

* ``oracle``: each decision restated from first principles (never imports
  ``core``), and the bounded-exhaustive walk that compares an implementation
  with it.
* ``engine``: the deterministic reference engine (hash chain, block pool,
  requests, group managers, coordinator) and the ``Policy`` protocol it calls.
* ``policies``: the built-in retention policies and their registry.
* ``workloads``: synthetic workloads, traces, and the ways of driving an engine.
* ``harness``: the promise harness (conformance) and the findings built on it.
* ``simulator``: policies side by side on a workload or a trace.
* ``cli``: argparse and printing, on top of everything else.

The layering is an import contract (``[tool.importlinter]`` in
pyproject.toml), checked by ``make lint``.
"""
