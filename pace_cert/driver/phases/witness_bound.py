"""Step: boundary witnesses among the samples raise the proved size lower bound.

Pairs of region points one allowed cell apart on one feature that the original labels
differently (``pace_cert/region/witness.py``). Each such gap needs an internal node of
some tree, so the gaps witnessed bound every faithful model's size from below.
Milliseconds; run before the first L1 solve and after each loop.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pace_cert.driver.result import Offer
from pace_cert.driver.state import RunState
from pace_cert.driver.step import BaseStep
from pace_cert.plumbing.budget import Budget
from pace_cert.region import witness
from pace_cert.region.masks import region_mask


def update_witness_bound(state: RunState) -> None:
    """Search the samples added since the last call for boundary witnesses and raise
    ``state.size_bound`` to the bound they give."""
    depth = state.original.max_depth
    if depth < 1 or len(state.X) == state.witness_rows:
        return
    before = len(state.witnesses)
    new_rows = state.X[state.witness_rows :]
    if state.witness_rows == 0:  # the first look: every label change of a small domain
        new_rows = np.vstack([state.screen.label_change_points(), new_rows])
    state.witness_rows = len(state.X)
    witness.find_witnesses(
        state.original,
        state.domain,
        new_rows,
        lambda Z: region_mask(state.original, state.region.margin, state.plausibility, Z),
        state.witnesses,
        limit=witness.MAX_WITNESSES,
    )
    if len(state.witnesses) == before:
        return
    state.witness_bound = witness.size_bound(len(state.witnesses), depth)
    if state.raise_bound(state.witness_bound):
        state.say(
            f"[witness] {len(state.witnesses)} feature gaps where the original's label "
            f"changes inside the region: a faithful model of trees of depth <= {depth} "
            f"has at least {state.size_bound} trees"
        )


class WitnessBound(BaseStep):
    name = "witness-bound"
    bookkeeping = True  # never the reason a run ends (see runner.run_plan)

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        update_witness_bound(state)
        return iter(())
