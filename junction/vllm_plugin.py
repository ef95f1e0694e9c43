"""The drop-in as a vLLM general plugin: on in every vLLM process, under ``vllm serve`` too.

vLLM runs its scheduler in an engine-core process of its own, so an
``install()`` in the user's process never reaches it. vLLM calls every
``vllm.general_plugins`` entry point in each of its processes before it
builds an engine (``vllm.plugins.load_general_plugins``); this module is
registered there (pyproject.toml). :func:`register` installs the drop-in in
the mode the environment variable :data:`ENVIRONMENT` names (``corrected`` or
``identical``) and does nothing when it is unset or empty, so installing the
package changes no vLLM until it is asked to. vLLM may load plugins more than
once per process; installing is idempotent.

Asked for, the drop-in is in the server or the server does not start: any
failure to install (the drop-in does not import, a mode that does not exist,
a release it does not know) ends the process with one line naming the
variable and the cause. Why here and not in ``junction.dropin``: vLLM's loader
logs and skips a plugin whose import raises an ``Exception``, so this module
imports the standard library only and the drop-in inside :func:`register`;
the line is a ``SystemExit``, which the loader does not catch.
"""

from __future__ import annotations

import os

__all__ = ["ENVIRONMENT", "register"]

ENVIRONMENT = "JUNCTION_VLLM_DROPIN"


def register() -> None:
    """Install the drop-in in the mode ``$JUNCTION_VLLM_DROPIN`` names, if any;
    ``SystemExit`` with one line when it names one and the drop-in cannot install."""
    value = os.environ.get(ENVIRONMENT, "")
    if not value:
        return
    try:
        from junction.dropin import Mode, install

        install(Mode.of(value, argument=ENVIRONMENT))
    except Exception as error:
        cause = " ".join(f"{type(error).__name__}: {error}".split())
        raise SystemExit(
            f"junction: {ENVIRONMENT}={value!r} asks for the drop-in, which cannot install: {cause}"
        ) from error
