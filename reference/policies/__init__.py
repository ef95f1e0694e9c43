"""Built-in retention policies and their registry.

``junction`` (the default of every command), ``dense``, ``interval`` and the
vLLM forms. The names below are what a caller imports (subclass
``JunctionPolicy``; resolve a name with ``resolve_policy``); the modules
behind them are internal.
"""

from .builtin import DensePolicy, IntervalPolicy, JunctionPolicy
from .options import DEFAULT_OPTIONS, JunctionOptions
from .registry import POLICIES, PolicyEntry, Role, policy_names, resolve_policy
from .vllm import VllmPolicy, VllmSplitOptions

__all__ = [
    "DEFAULT_OPTIONS",
    "POLICIES",
    "DensePolicy",
    "IntervalPolicy",
    "JunctionOptions",
    "JunctionPolicy",
    "PolicyEntry",
    "Role",
    "VllmPolicy",
    "VllmSplitOptions",
    "policy_names",
    "resolve_policy",
]
