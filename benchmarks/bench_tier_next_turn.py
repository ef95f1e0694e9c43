"""Next turns routed to another instance: what decode checkpoints in the tier recover
(a benchmark, not a test).

The built-in agent workload with answers resent (48 sessions x 4 turns, a
1,500-token system prompt, seed 0), sequential arrivals, on one instance and
on two sharing an external tier, turns routed round-robin (so every next
turn runs on the instance its previous turn did not), the pool and the tier
large enough that nothing is evicted. For each preset (Nemotron-H, gpt-oss;
``R = 0``): ``junction`` and ``junction+decode``, and on two instances
``junction+decode`` with the tier taking decode checkpoints
(``ExternalTier(decode_checkpoints=True)``) or not. Each row names the vLLM
offloading setting it models: the prompt only (``offload_prompt_only: true``,
vLLM's default: no answer block is stored), or the answer's blocks too
(``offload_prompt_only: false``) with the decode checkpoints' publication
saved, which vLLM 0.33.0 does not have. Prints a Markdown table of the hit
rate, the hit tokens, the part loaded from the tier and the tier's peak in
blocks (docs/design/decode-checkpoints-in-tier.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.engine.policy import Policy
from junction.reference.engine.tier import ExternalTier
from junction.reference.policies.builtin import JunctionPolicy, junction_with_decode_checkpoints
from junction.reference.simulator.geometries import GEOMETRIES
from junction.reference.simulator.instances import combined_metrics, route, run_instances
from junction.reference.simulator.workload import Workload, builtin_workload
from junction.reference.workloads.step_time import StepTimeModel

POOL_BLOCKS = 20_000
TIER_BLOCKS = 200_000
# What the tier saves, by whether it takes decode checkpoints: the vLLM setting modelled.
SAVED = {
    False: "prompt only (`offload_prompt_only: true`, the default)",
    True: "answer + decode checkpoints (`offload_prompt_only: false` + publication)",
}
# (policy, its factory, instances, whether the tier takes decode checkpoints)
ROWS: tuple[tuple[str, Callable[[], Policy], int, bool], ...] = (
    ("junction", JunctionPolicy, 1, False),
    ("junction+decode", junction_with_decode_checkpoints, 1, False),
    ("junction", JunctionPolicy, 2, False),
    ("junction+decode", junction_with_decode_checkpoints, 2, False),
    ("junction+decode", junction_with_decode_checkpoints, 2, True),
)


def row(
    workload: Workload, preset: str, make: Callable[[], Policy], instances: int, decode: bool
) -> tuple[float, int, int, int]:
    """(hit rate, hit tokens, tokens loaded from the tier, the tier's peak in blocks)."""
    geometry = GEOMETRIES[preset].build(0, False)
    tier = ExternalTier(TIER_BLOCKS, decode_checkpoints=decode)
    config = EngineConfig(geometry, POOL_BLOCKS, policy=make(), tier=tier)
    engines = [Engine(config) for _ in range(instances)]
    targets = route(workload.sessions, instances, "round-robin")
    run_instances(engines, workload.turns, targets, True, StepTimeModel())
    metrics = combined_metrics(engines)
    return metrics.token_hit_rate, metrics.hit_tokens, metrics.external_hit_tokens, tier.peak


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--presets", nargs="+", default=["nemotron-h", "gpt-oss"])
    args = parser.parse_args(argv)
    workload = builtin_workload(0, 48, 4, 1500, resend_answers=True)
    print(f"#### {workload.source}\n")
    print(
        "| preset | policy | instances | the tier saves (vLLM setting modelled) | hit rate "
        "| hit tokens | loaded from the tier | tier peak (blocks) |"
    )
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for preset in args.presets:
        for name, make, instances, decode in ROWS:
            rate, hits, loaded, peak = row(workload, preset, make, instances, decode)
            print(
                f"| {preset} | {name} | {instances} | {SAVED[decode]} | {rate:.4f} | {hits:,} "
                f"| {loaded:,} | {peak:,} |"
            )


if __name__ == "__main__":
    main()
