"""A request that could never fit the pool alone is refused at submission.

Otherwise it would be admitted, fill the pool, preempt itself and start over
forever (no step would ever finish it).
"""

from __future__ import annotations

import pytest

from junction.core import GroupSpec, HybridGeometry
from junction.reference.engine.engine import Engine, EngineConfig
from junction.reference.policies.builtin import JunctionPolicy


def test_a_request_larger_than_the_pool_is_refused_with_the_numbers() -> None:
    geometry = HybridGeometry([GroupSpec.full(4), GroupSpec.mamba(4)], 4)
    engine = Engine(
        EngineConfig(geometry, num_blocks=5, policy=JunctionPolicy())
    )  # 4 usable beside the null block
    with pytest.raises(ValueError, match="needs at least 6 blocks; the pool has 4"):
        engine.submit((1,) * 16, 2)  # 17 tokens: 5 full-attention blocks and a state
    assert engine.idle and not engine.requests
    request_id = engine.submit((1,) * 8, 1)  # 2 blocks and the states: fits
    engine.run()
    assert engine.requests[request_id].num_output_tokens == 1
    engine.check()
