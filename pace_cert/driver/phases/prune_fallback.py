"""Step wrapper (mode tree): mode prune's steps when no single tree was certified.

On raw features the single tree is learnt from counterexamples and may not certify in
the time; the user still gets the best certified pruning the time left allows, never
the original when pruning can do better. Each of mode prune's steps runs, wrapped, only
while no one-tree model is certified; the certificate's ``single_tree.fallback`` says
that the compressed model is this fallback's.
"""

from __future__ import annotations

from collections.abc import Iterator

from pace_cert.driver.result import Offer
from pace_cert.driver.state import RunState
from pace_cert.driver.step import Step
from pace_cert.plumbing.budget import Budget


def tree_certified(state: RunState) -> bool:
    """Whether the incumbent is one tree (a certified single tree)."""
    return state.best is not None and state.best[0].model.n_trees == 1


class PruneFallback:
    """``step`` (one of mode prune's), run only while no single tree is certified."""

    bookkeeping = False

    def __init__(self, step: Step) -> None:
        self.step = step
        self.name = step.name
        self.bookkeeping = getattr(step, "bookkeeping", False)

    def applies(self, state: RunState) -> bool:
        return not tree_certified(state) and self.step.applies(state)

    def share(self, state: RunState) -> float:
        return self.step.share(state)

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        if state.tree is not None and state.tree.fallback is None:
            state.tree.fallback = "prune"
            state.say("[tree] no single tree certified: mode prune's steps in the time left")
        yield from self.step.run(state, budget)
