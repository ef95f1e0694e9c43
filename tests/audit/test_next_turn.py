"""Promise 9 on vLLM 0.33.0's own code, and the counterexamples docs/findings.md gives.

The audit's ``VllmEngine`` decodes the first prompt's answer the way vLLM's
scheduler does (``prefill(output=)``), so vLLM's cache after a finished
request is what its next turn looks up. Each case is replayed on vLLM and on
the policies of the reference engine, and the verdicts must be the ones the
findings state (``next-turn-audit`` section).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from junction.audit.vllm.subject import VllmSubject
from junction.reference.harness import Scenario, check
from junction.reference.harness.engine_subject import EngineSubject
from junction.reference.policies.registry import resolve_policy

FINDINGS = Path(__file__).parents[2] / "docs" / "findings.md"

# (scenario JSON, vLLM 0.33.0's verdict, then per policy its verdict; None: kept)
CASES = [
    (
        '{"promise": "next_turn", "geometry": {"groups": [{"kind": "full", "block_size": 2, '
        '"window": null}, {"kind": "mamba", "block_size": 2, "window": null}], '
        '"hash_block_size": 2, "partial_hits": false, "use_eagle": false, '
        '"retention_interval": 0}, "prompts": [[0]], "probe": [], "budget": 4, '
        '"num_blocks": 5000, "gaps": [], "max_output_tokens": 2}',
        "hit 0, full attention alone 2",
        {
            "vllm-0.33": "hit 0, full attention alone 2",
            "vllm-pr50551": None,
            "junction+decode": None,
        },
    ),
    (
        '{"promise": "next_turn", "geometry": {"groups": [{"kind": "full", "block_size": 2, '
        '"window": null}, {"kind": "mamba", "block_size": 2, "window": null}], '
        '"hash_block_size": 2, "partial_hits": false, "use_eagle": true, '
        '"retention_interval": 0}, "prompts": [[0, 0, 0]], "probe": [], "budget": 4, '
        '"num_blocks": 5000, "gaps": [], "max_output_tokens": 4}',
        "hit 0 under R=0, 4 with every block",
        {
            "vllm-0.33": "hit 0 under R=0, 4 with every block",
            "vllm-pr50551": "hit 0 under R=0, 4 with every block",
            "junction+decode": None,
        },
    ),
    (  # case 1 length-capped: PR #50551 publishes nothing, and promises nothing there
        '{"promise": "next_turn", "geometry": {"groups": [{"kind": "full", "block_size": 2, '
        '"window": null}, {"kind": "mamba", "block_size": 2, "window": null}], '
        '"hash_block_size": 2, "partial_hits": false, "use_eagle": false, '
        '"retention_interval": 0}, "prompts": [[0]], "probe": [], "budget": 4, '
        '"num_blocks": 5000, "gaps": [], "max_output_tokens": 2, "finish": "length_capped"}',
        "hit 0, full attention alone 2",
        {
            "vllm-0.33": "hit 0, full attention alone 2",
            "vllm-pr50551": None,
            "junction+decode": None,
        },
    ),
]


def _said(violation: object) -> str | None:
    return None if violation is None else violation.problem.describe("")  # type: ignore[attr-defined]


@pytest.mark.parametrize(("text", "on_vllm", "by_policy"), CASES)
def test_the_next_turn_on_vllm_and_the_policies(
    text: str, on_vllm: str, by_policy: dict[str, str | None]
) -> None:
    scenario = Scenario.from_json(json.loads(text))
    assert _said(check(scenario, VllmSubject())) == on_vllm
    for name, verdict in by_policy.items():
        assert _said(check(scenario, EngineSubject(resolve_policy(name)))) == verdict, name
    assert text in FINDINGS.read_text(), "docs/findings.md states the case"
