"""Lookup: vLLM's coordinator against ``core.reconcile_hits`` on the same pool.

Lookup is not a policy decision, so a disagreement is a finding about vLLM
(docs/findings.md). The property makes that airtight: on every lookup of
real runs (each admission, then each prompt again), vLLM's answer equals our
restatement of its lookup with its four departures switched on
(``upstream.vllm_0_33.lookup_model``), and the restatement with them off equals
``core.reconcile_hits``. So every disagreement is one of the recorded
departures, and nothing else hides behind them; and the departures that can
act on the geometry (``departures``) alone give vLLM's answer.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from junction.audit.vllm.diagnosis import lookup_departures
from junction.audit.vllm.findings import FINDINGS, Finding
from junction.upstream.vllm_0_33.lookup_model import (
    ALL_QUIRKS,
    NO_QUIRKS,
    departures,
    model_reconcile,
)

from .strategies import PromptRun, examples, prompt_runs


@settings(max_examples=examples(0.6))
@given(prompt_runs())
def test_vllm_lookup_is_core_plus_its_recorded_departures(run: PromptRun) -> None:
    geometry = run.geometry
    engine = run.on_vllm(lookups=True)
    for lookup in engine.lookups:
        args = (geometry, lookup.views, lookup.max_hit_length, lookup.hashed_tokens)
        vllms = model_reconcile(*args, ALL_QUIRKS)
        hit, _, junction = vllms
        assert (lookup.hit_length, lookup.shared_prefix_boundary) == (hit, junction), lookup
        # Only the departures that can act on this geometry: where none can,
        # the drop-in's identical mode answers with the core.
        assert model_reconcile(*args, departures(geometry)) == vllms, (departures(geometry), lookup)
        core = lookup.core
        expected = (core.hit_length, core.longest_hit_length, core.shared_prefix_boundary)
        assert model_reconcile(*args, NO_QUIRKS) == expected, lookup


@pytest.mark.parametrize(
    "finding", [f for f in FINDINGS if f.key.startswith("lookup-")], ids=lambda f: f.key
)
def test_each_departure_is_live_and_alone_explains_its_counterexample(finding: Finding) -> None:
    departures = lookup_departures(finding.counterexample)
    assert departures, f"{finding.key}: vLLM now agrees with core on its counterexample"
    assert finding.key in {f"lookup-{name}" for name in departures}


@pytest.mark.parametrize(
    "finding", [f for f in FINDINGS if f.key.startswith("lookup-")], ids=lambda f: f.key
)
def test_each_departure_acts_where_departures_says_it_can(finding: Finding) -> None:
    # The drop-in's identical mode answers with the core where no departure
    # can act: each finding's counterexample is a geometry where its own can.
    flag = finding.key.removeprefix("lookup-")
    assert getattr(departures(finding.counterexample.geometry), flag), finding.key
