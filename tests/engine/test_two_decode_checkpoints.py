"""Two decode checkpoints (``JunctionOptions(decode_checkpoint_margin=m)``).

A client that cuts a stop string of up to ``m`` tokens from the answer resends
all but its last ``m`` tokens: its next turn lands below the answer's end
checkpoint. The second checkpoint keeps the state where it lands; with one,
it resumes at the prompt's.
"""

from __future__ import annotations

import pytest

from junction.core import HybridGeometry
from junction.reference.engine.policy import CheckedPolicy, PolicyError
from junction.reference.policies.builtin import JunctionPolicy
from junction.reference.policies.options import JunctionOptions
from junction.reference.policies.registry import resolve_policy

from .test_decode_checkpoints import MAMBA, WINDOW, _engine, _finish, _next_turn

ONE = JunctionOptions(decode_checkpoints=True)
TWO = JunctionOptions(decode_checkpoints=True, decode_checkpoint_margin=4)


@pytest.mark.parametrize("geometry", [MAMBA, WINDOW], ids=["mamba", "sliding-window"])
def test_a_cut_stop_string_resumes_at_the_second_checkpoint(geometry: HybridGeometry) -> None:
    for options, cut, exact in ((ONE, 20, 28), (TWO, 24, 28)):
        engine = _engine(geometry, options)
        transcript = _finish(engine, tuple(range(23)), 7)  # 30 tokens
        assert _next_turn(engine, (*transcript[:-4], 900, 901))[0] == cut
        assert _next_turn(engine, (*transcript, 900, 901))[0] == exact


def test_the_margin_is_declared_and_checked() -> None:
    assert CheckedPolicy(resolve_policy("junction+decode2")).decode_checkpoint_margin == 4
    assert CheckedPolicy(JunctionPolicy(ONE)).decode_checkpoint_margin == 0
    bad = JunctionPolicy(ONE)
    bad.decode_checkpoint_margin = -1
    with pytest.raises(PolicyError, match="decode_checkpoint_margin"):
        CheckedPolicy(bad)
