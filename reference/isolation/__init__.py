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
:class:`Service` asks other untrusted code (a vendored copy) questions in a
contained worker, whose answers the caller judges.
What this contains and how: docs/fuzzing.md; why: docs/design/fuzz-isolation.md.
"""

from ._connection import one_line
from ._remote import CALL_SECONDS, GRACE, Limits, RemotePolicy, remote_policy
from ._service import Service, ServiceFailed, serve

__all__ = [
    "CALL_SECONDS",
    "GRACE",
    "Limits",
    "RemotePolicy",
    "Service",
    "ServiceFailed",
    "one_line",
    "remote_policy",
    "serve",
]
