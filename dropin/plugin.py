"""The drop-in as a vLLM general plugin: on in every vLLM process, under ``vllm serve`` too.

vLLM runs its scheduler in an engine-core process of its own, so an
``install()`` in the user's process never reaches it. vLLM calls every
``vllm.general_plugins`` entry point in each of its processes before it
builds an engine (``vllm.plugins.load_general_plugins``); this package
registers :func:`register` there (pyproject.toml). It installs the drop-in
in the mode the environment variable :data:`ENVIRONMENT` names
(``corrected`` or ``identical``), and does nothing when the variable is unset
or empty, so installing the package changes no vLLM until it is asked to.
Any other value raises ``InvalidArgument`` naming the variable: a server
asked for the drop-in in a mode that does not exist stops at startup rather
than running vLLM's code unannounced. vLLM may load plugins more than once
per process; installing is idempotent.
"""

from __future__ import annotations

import os

from . import install
from .modes import Mode

__all__ = ["ENVIRONMENT", "register"]

ENVIRONMENT = "JUNCTION_VLLM_DROPIN"


def register() -> None:
    """Install the drop-in in the mode ``$JUNCTION_VLLM_DROPIN`` names, if any."""
    value = os.environ.get(ENVIRONMENT, "")
    if value:
        install(Mode.of(value, argument=ENVIRONMENT))
