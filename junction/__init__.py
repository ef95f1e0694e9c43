"""Junction: the retention decisions of hybrid-model prefix caches, proven.

One installed name, six parts:

* ``junction.core``: the three decisions as pure functions (attrs only).
* ``junction.kernels``: the same decisions batched (torch, Triton), equal to core.
* ``junction.reference``: the first-principles oracle, the reference engine, the
  policies, the promise harness, the simulator and the command line.
* ``junction.audit``: real engines' own code driven through the same harness.
* ``junction.dropin``: the core swapped into a running vLLM 0.33.0 (and its plugin).
* ``junction.upstream``: each vLLM release as Junction knows it, which the
  drop-in and the audit both build on (core only).

Why the folders sit at the repository's top level and not under ``junction/``:
the design keeps ``core/`` where an engine team finds it and copies it from.
Installed, setuptools maps each folder under this one name (``setup.py``, from
pyproject.toml's ``[tool.junction] parts``); in a checkout, this folder links
to those folders by relative symlinks, so ``import junction.core`` means the
same files with or without an install. Rejected: installing the parts as
top-level names (generic names that collide with other distributions:
``kernels`` is taken), and moving the folders into a ``src/junction`` tree
(the layout engine teams vendor from would change).
"""
