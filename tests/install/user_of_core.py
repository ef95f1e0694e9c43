"""A user's file: it imports the installed ``junction.core`` under ``mypy --strict``.

``make check-install`` copies it into a fresh virtual environment's working
folder and type-checks it there, so the ``junction`` it sees is the installed
one (with its ``py.typed``), not this checkout.
"""

from junction.core import (
    GroupSpec,
    HitReconciliation,
    HybridGeometry,
    InvalidArgument,
    group_finder,
    mamba_block_aligned_split,
    reachable_block_mask,
    reachable_boundaries,
    reconcile_hits,
)


def admit(cached: dict[int, set[int]], num_tokens: int) -> HitReconciliation:
    geometry = HybridGeometry([GroupSpec.full(16), GroupSpec.mamba(16)], hash_block_size=16)
    finders = [
        group_finder(g, cached.get(k, set()).__contains__, alignment_tokens=16)
        for k, g in enumerate(geometry.groups)
    ]
    return reconcile_hits(geometry, finders, max_hit_length=num_tokens - 1)


hits = admit({0: set(range(8)), 1: {3}}, 200)
step: int = mamba_block_aligned_split(
    num_computed_tokens=hits.hit_length,
    num_new_tokens=512,
    num_prompt_tokens=200,
    num_tokens=200,
    block_size=16,
    shared_prefix_boundary=hits.shared_prefix_boundary,
)
mask: list[bool] | None = reachable_block_mask(
    0, 12, 16, GroupSpec.mamba(16), False, 0, reachable_boundaries(200, 128)
)
assert (hits.hit_length, hits.shared_prefix_boundary, step) == (64, 128, 64)
try:
    GroupSpec.full(0)
except InvalidArgument as error:
    message: str = str(error)
