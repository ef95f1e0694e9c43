"""Policy isolation: a policy's code in a contained worker process, every check in this one.

``run_conformance(spec, isolated=True, ...)`` (:mod:`junction.reference.harness`)
is how a caller asks for it; this package is the machinery. The policy is
named by a spec the worker imports (a registered name or ``module:attribute``),
since an isolated policy cannot be handed over as a live object.
:func:`remote_policy` yields it as a :class:`RemotePolicy`, which the engine
calls like any policy and whose every answer is checked here; the worker runs
in a session of its own, confined by the kernel where it allows (namespaces,
Landlock, resource limits; this process hidden from it), and is killed, with
everything it started, at any limit (:class:`Limits`) and on leaving.
:func:`run_in_child` runs other untrusted work (a vendored copy's walk)
contained, believing one result.
What this contains and how: docs/fuzzing.md; why: docs/design/fuzz-isolation.md.
"""

from ._oneshot import ChildResult, NoResult, run_in_child, send_result
from ._remote import CALL_SECONDS, GRACE, Limits, RemotePolicy, remote_policy

__all__ = [
    "CALL_SECONDS",
    "GRACE",
    "ChildResult",
    "Limits",
    "NoResult",
    "RemotePolicy",
    "remote_policy",
    "run_in_child",
    "send_result",
]
