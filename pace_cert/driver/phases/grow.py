"""L0 fallback: column growth from the last (refuted) L0 candidate's support.

The faithful loop on the max-margin LP (``pace_cert/master/max_margin.py``)
restricted to a growing set R of learners. While no weighting of R meets every sample
with a normalised margin of at least ``l0.grow_rho``, the learner outside R whose
column the LP's duals price highest joins R (a column-generation step of the
max-margin LP over the pool), so R grows only as far as the samples force it.
Max-margin weights, not a vertex of the feasible cone, so each candidate tends to hold
near its samples too: a grown support certifies after a few more samples, usually well
below the reweighted model. Gives up once R would reach the best certified size.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.result import PhaseResult
from pace_cert.driver.state import RunState
from pace_cert.master.max_margin import margin_on_support
from pace_cert.master.rows import MasterSolution, normalise_columns
from pace_cert.model.ensemble import Tree
from pace_cert.plumbing.budget import Budget


def column_growth(
    state: RunState, learners: list[Tree], support: np.ndarray, max_size: int, budget: Budget
) -> PhaseResult:
    """Grow R from ``support`` while the max-margin LP on R has margin below
    ``grow_rho``; uncertified (``gave_up``) once R would exceed ``max_size``."""
    n = len(learners)
    R = [int(t) for t in support]
    rho_min = state.cfg.tuning.l0.grow_rho

    def solve(A: np.ndarray) -> MasterSolution | None:
        pool = None  # every learner's normalised column, once per call when needed
        while len(R) <= max_size:
            mm, sol = margin_on_support(A, n, np.array(R), budget=budget, seed=state.cfg.seed)
            if mm.rho >= rho_min:
                return dataclasses.replace(sol, optimal=False, status="grown")
            if pool is None:
                pool = normalise_columns(A, n)[0][:, :n]
            gain = mm.duals @ pool - mm.gamma
            gain[R] = -np.inf
            if not gain.max() > 0:  # R's margin is the whole pool's: no R is enough
                break
            R.append(int(np.argmax(gain)))
        return None

    res = faithful_loop(state, "l0-grow", solve, learners, budget)
    if res.gave_up:
        state.say(
            f"[l0-grow] no weighting of at most {max_size} learners meets the samples "
            f"with a normalised margin of {rho_min:g}"
        )
        return PhaseResult.nothing()
    if res.certified and res.model is not None:
        state.say(f"[l0-grow] certified {res.model.n_trees} learners")
    return res


class ColumnGrowth:
    """Second fallback (``l0.fallback == "grow"``): from the last L0 candidate's
    support, when that support is smaller than the best certified model."""

    suffix = "-grow"

    def applies(self, state: RunState, guide: np.ndarray | None) -> bool:
        size = state.best_size()
        return (
            state.cfg.tuning.l0.fallback == "grow"
            and guide is not None
            and bool(guide.any())
            and size is not None
            and int(guide.sum()) <= size - 1
        )

    def run(
        self, state: RunState, learners: list[Tree], guide: np.ndarray | None, budget: Budget
    ) -> Iterator[PhaseResult]:
        assert guide is not None
        size = state.best_size()
        assert size is not None
        yield column_growth(state, learners, np.flatnonzero(guide), size - 1, budget)
