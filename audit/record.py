"""An audited engine as one record: everything the commands and tests read of it.

Each engine's subpackage (``audit/vllm/``, ``audit/sglang/``) defines its
``ENGINE`` record in its ``__init__``, and :data:`audit.engines.ENGINES`
lists them; ``junction audit findings`` and ``engines``, the
tests' ``--require-NAME`` options and their skip rule read every row, so an
engine is added in its own subpackage plus one row
(docs/architecture.md, "Walk-through: adding an audited engine").

The record imports nothing of its engine and nothing of the harness: the
drop-in, loaded in every vLLM process, reads ``upstream.vllm_0_33`` (not this
package holds vLLM's record, so the findings section is a function that
imports its module when called.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs

from junction.core import InvalidArgument
from junction.upstream import Pin

__all__ = ["AuditedEngine"]

# The markers' form the policy findings keep (``reference.harness.findings``
# keeps every ``<!-- NAME-audit:begin -->`` section without importing the audit).
_NAME = re.compile(r"[a-z0-9-]+")


def _check_name(record: AuditedEngine, attribute: attrs.Attribute[str], name: str) -> None:
    if not _NAME.fullmatch(name):
        raise InvalidArgument("name", name, "an engine's name is lowercase letters, digits and -")


@attrs.frozen
class AuditedEngine:
    """One audited engine: its name, its pinned install, its tests and its findings section.

    ``name`` keys everything: its docs/findings.md markers
    (``<!-- NAME-audit:begin -->``), the tests' ``--require-NAME`` option and
    ``findings --engine NAME``. ``findings`` renders the section, markers
    included, re-running its counterexamples on the installed engine (raising
    :class:`.pins.EngineMissing` where it is absent). ``policies`` are the
    registered policies that restate the engine's formulas (the ``reference``
    side cannot import the audit; a test holds them registered).
    """

    name: str = attrs.field(validator=_check_name)
    pin: Pin  # its distribution, pinned version and the extra that installs it
    tests: str  # the test folder whose tests need it, skipped where it is missing
    findings: Callable[[], str] = attrs.field(eq=False)
    policies: tuple[str, ...] = ()

    @property
    def begin(self) -> str:
        return f"<!-- {self.name}-audit:begin -->"

    @property
    def end(self) -> str:
        return f"<!-- {self.name}-audit:end -->"

    @property
    def require_option(self) -> str:
        """The pytest option that turns its absence from a skip into an error."""
        return f"--require-{self.name}"

    def missing_reason(self) -> str | None:
        """Why it cannot be audited here (naming the make target), or ``None``."""
        return self.pin.missing_reason()
