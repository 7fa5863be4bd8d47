"""Screening inside the L0 master: separating samples as lazy rows of the same solve.

In the faithful loop a master solve returns one support, the screen refutes it with a
few samples, and the next round solves the master again from scratch, with the rows of
those samples added. On the Table 2 forests most L0 rounds end that way, and each costs
a whole MILP (15-30 s at 50 trees). :class:`LazyScreen` moves the screen into the
MILP: every incumbent support the solver finds is reweighted (max-margin, as the loop
would propose it), folded and screened at once; the separating samples it finds are
added to the run's samples and returned as margin rows, which the solver adds as lazy
constraints and goes on with its search tree (gurobipy ``cbLazy``). So one solve does the
work of many screened rounds, and its answer has passed the screen.

On domains too large to enumerate the screen's pool misses most of the region, so an
incumbent that passes it is refuted by CP-SAT in the next round and the MILP starts
over. With ``oracle`` > 0 such an incumbent goes to CP-SAT inside the solve (up to
``oracle`` of them per solve, each on a bounded share of the time left): its
separating samples (and their one-cell neighbours) become lazy rows at once, so the
solver's search tree, incumbent and bound survive the refutation (branch and check).

Soundness does not depend on it: the samples are region points like any other, and the
answer still goes through the loop's screen and CP-SAT. Only the solver's optimality
claim is read differently: it is optimal on the rows it was given plus the lazy rows,
i.e. on samples the run holds, which is what "optimal on the samples" means.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from pace_cert.driver.result import HistoryEntry
from pace_cert.driver.state import RunState
from pace_cert.learners.pool import leaf_values
from pace_cert.master.highs import OutOfTime
from pace_cert.master.max_margin import max_margin_on_support
from pace_cert.master.rows import MasterSolution, margin_rows
from pace_cert.model.ensemble import Tree
from pace_cert.oracle.score_model import ScoreModel
from pace_cert.plumbing.budget import Budget
from pace_cert.region.margins import required_margin

#: an incumbent meeting a row within this is taken to meet it (the MILP's own tolerance
#: is 1e-6 on rows >= 1); below it the row is returned to the solver again
ROW_TOL = 1e-6


@dataclasses.dataclass
class LazyScreen:
    """Screen the master's incumbents against the pool; new samples become rows.
    An incumbent that fails a row found earlier gets that row back first.

    ``rows``: the margin rows the solve started from (grown by each call);
    ``limit``: incumbents screened per solve at most (then it answers no rows);
    ``phase``: the history label of the samples it adds; ``oracle``: incumbents that
    pass the screen checked by CP-SAT per solve at most (0: none), each given at most
    ``oracle_seconds``. ``screened``/``added``/``checked`` count incumbents screened,
    samples added and CP-SAT checks (for the round's report)."""

    state: RunState
    learners: list[Tree]
    rows: np.ndarray
    budget: Budget
    limit: int
    phase: str = "l0"
    oracle: int = 0
    oracle_seconds: float = 5.0
    screened: int = 0
    added: int = 0
    checked: int = 0
    _seen: dict[tuple[int, ...], int] = dataclasses.field(default_factory=dict)

    def __call__(self, sol: MasterSolution) -> np.ndarray:
        """Margin rows (one per new sample and other class) refuting ``sol``'s support
        with max-margin weights; an empty array when the screen finds nothing new, the
        limit is reached or the budget is spent."""
        n = len(self.learners)
        empty = np.zeros((0, self.rows.shape[1]))
        # a solver may drop lazy rows once added (gurobipy re-checks only what the
        # callback returns): the incumbent's rows it fails are returned again first
        broken = self.rows[self.rows @ np.r_[sol.weights, sol.offsets[1:]] < 1.0 - ROW_TOL]
        if len(broken):
            return broken
        support = tuple(np.flatnonzero(sol.weights > 0).tolist())
        if (
            not support
            or self.screened >= self.limit
            or self.budget.expired()
            or self._seen.get(support) == len(self.rows)  # screened on these rows
        ):
            return empty
        self._seen[support] = len(self.rows)
        self.screened += 1
        try:
            mm = max_margin_on_support(
                self.rows, n, np.array(support), budget=self.budget, seed=self.state.cfg.seed
            )
        except OutOfTime:
            return empty
        if mm is None:
            return empty
        cand, _keep = self.state.candidate(mm, self.learners)
        sm, e_req = ScoreModel.from_ensemble(cand), required_margin(cand)
        per_pair = self.state.cfg.tuning.search.enumeration_per_pair
        found = [r for r in self.state.screen.screen(sm, e_req, per_pair) if r.status == "FEASIBLE"]
        if not found:
            found = self._check(sm, e_req)
        new = self._add(found)
        if not len(new):
            return empty
        y0 = self.state.y0[-len(new) :]
        rows = margin_rows(leaf_values(self.learners, new), y0)
        self.rows = np.vstack([self.rows, rows])
        return rows

    def _check(self, sm: ScoreModel, e_req: float) -> list:
        """CP-SAT's separating samples for a candidate the screen passed, with their
        one-cell neighbours; none when checks are off or spent, the domain is
        enumerated (the screen saw every cell) or CP-SAT finds none."""
        state = self.state
        if self.checked >= self.oracle or state.screen.can_enumerate():
            return []
        self.checked += 1
        results = state.oracle.separate(
            sm, e_req, threads=state.cfg.threads, budget=self.budget.cap(self.oracle_seconds),
            until_found=True,
        )  # fmt: skip
        found = [r for r in results if r.status == "FEASIBLE"]
        if found:
            per_pair = state.cfg.tuning.search.neighbours
            found += state.screen.widen([r.point for r in found], sm, e_req, per_pair)
        return found

    def _add(self, found: list) -> np.ndarray:
        """Add the separating samples ``found`` (PairResults) to the run's samples (one
        per cell) and its history (round 0: inside a master solve); the float32 points
        added, in order."""
        state = self.state
        if not found:
            return np.zeros((0, state.X.shape[1]), np.float32)
        P = np.array([r.point for r in found], np.float32)
        labels = state.original.predict_index(P)
        added = []
        for r, x, yo in zip(found, P, labels):
            if state.add_sample(x, int(yo)):
                added.append(x)
                state.history.append(HistoryEntry(self.phase, 0, r.y0, r.y, x, int(yo)))
        self.added += len(added)
        return np.array(added, np.float32).reshape(-1, state.X.shape[1])


#: what a master solver takes: a solution's incumbent -> lazy rows to add
Lazy = Callable[[MasterSolution], np.ndarray]
