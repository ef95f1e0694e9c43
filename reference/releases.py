"""The releases Junction published, with their cores' digests: the stamps `vendor check` believes.

``releases.json`` (beside this module, shipped in the package) lists every
published release: its version, the commit it was cut from and the digest
of its core (:func:`vendoring.set_digest`, as the stamp of a copy made from
it holds); a release adds its entry as CHANGELOG.md names it
(tests/vendor/test_vendor_hostile.py holds the two together). A copy's
stamp is believed when it names one of them, digest and all, or the core
installed where the check runs (its version and digest): a stamp anyone
can write names nothing else Junction stands behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from junction.reference.vendoring import Stamp

__all__ = ["RELEASES", "Release", "published", "stamp_problem"]

RELEASES = Path(__file__).with_name("releases.json")


@attrs.frozen
class Release:
    """One published release: ``digest`` is the set digest of its ``core/`` files."""

    version: str
    commit: str
    digest: str


def published() -> tuple[Release, ...]:
    """The releases listed in :data:`RELEASES`, in its order."""
    fields = json.loads(RELEASES.read_text(encoding="utf-8"))
    return tuple(Release(**entry) for entry in fields["releases"])


def stamp_problem(stamp: Stamp, installed: Stamp) -> str | None:
    """Why ``stamp`` names no core Junction stands behind; ``None`` when it does.

    It does when it names the installed core (``installed``: same version and
    digest, whatever the commit) or a published release (version, commit and
    digest)."""
    if stamp.version == installed.version and stamp.digest == installed.digest:
        return None
    releases = published()
    if Release(stamp.version, stamp.commit or "", stamp.digest) in releases:
        return None
    claims = [(r.version, r.commit) for r in releases] + [(installed.version, installed.commit)]
    if (stamp.version, stamp.commit) in claims:
        return (
            f"the stamp claims {stamp.origin}, but its file digests are not that release's: "
            "a copy edited and stamped again"
        )
    return (
        f"the stamp names {stamp.origin}, not a release Junction published "
        f"({len(releases)} listed in {RELEASES.name}) nor the core installed here "
        f"({installed.origin}); `vendor update --force` replaces the copy with the installed core"
    )
