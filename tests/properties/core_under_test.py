"""The core the properties judge: ``junction.core``, or the module ``--core`` names.

A team that vendored the core runs this project's properties against its own
copy: ``pytest tests/properties --core myengine.retention_core`` (the
copy importable by that name). Every property module and strategy imports
core's names from here, so they all judge the same module, and the walk gets
it as ``core``. Unset, this is ``junction.core`` itself, the same module
object: ``make mutmut`` keys its mutants by the functions of
``junction.core.*``, which the tests then call unchanged.

Rejected: a pytest fixture (the strategies and the property signatures use
core's classes at import time, before any fixture exists).
"""

from __future__ import annotations

import importlib

from tests import options

NAME = options.core_module
core = importlib.import_module(NAME)
globals().update({name: getattr(core, name) for name in core.__all__})
