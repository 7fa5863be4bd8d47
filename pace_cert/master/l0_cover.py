"""Problem P (the L0 master) by combinatorial Benders decomposition.

The big-M MILP of :func:`solve_l0` has a weak relaxation (its bound is about
sum(w) / M), so even 25 binaries can take seconds per solve. Here the two parts of P
are solved apart:

* master: a hitting set over learners, ``min sum u  s.t.  sum_{t in C} u_t >= 1`` for
  every cut C collected so far (CP-SAT, kept across calls; measured ~10x faster than
  HiGHS' MILP on these pure 0/1 covers);
* subproblem: for the chosen support S, the max-margin LP on S
  (:func:`solve_max_margin` on columns scaled to max |a| = 1). S is feasible iff
  its margin rho > ``FEASIBLE_RHO``; the master is a relaxation of P, so the first
  feasible support it returns is a minimum one.

Cuts. With row duals y >= 0 (sum 1) of an infeasible S, weak LP duality bounds the
margin of *any* support S' by ``max_{t in S'} y.a_t + B * ||A_b^T y||_1`` (B: the
offset bound). Every support whose columns all have ``y.a_t <= -B ||A_b^T y||_1`` is
therefore infeasible, and the cut is ``C = {t : y.a_t > -B ||A_b^T y||_1}``. This uses
only weak duality on whatever y the LP returns, so a cut is valid whatever the solver's
sign conventions or tolerances; if C fails to exclude S itself (numerical noise), the
plain no-good ``C = complement of S`` (valid: subsets of an infeasible support are
infeasible) is used instead. Each cut is then shrunk: S is grown, learner by learner,
to a maximal infeasible support and C becomes its complement (any feasible support must
leave it), which makes the covers far fewer.

Usable supports. A caller may pass ``usable``: a test of the weights a feasible
support gets (the driver checks that the folded model clears its own float32 guard on
every row; a support whose margin rho is barely above ``FEASIBLE_RHO`` does not, and the
oracle could only refute it with rows the master already has). A support the master
returns that fails the test gets the no-good cut ``C = complement of S``: valid for
"feasible and usable", because the master returns a minimum cover, so every smaller
support -- every strict subset of S among them -- is already cut off. Warm and fallback
supports that fail it are only skipped, never cut. "Optimal" then
means a minimum support among those whose max-margin weights pass ``usable``. The test
is not monotone in the rows (new rows change the max-margin weights), so when the rows
have changed every no-good is tested again; if one of its supports has become usable,
the master restarts without cuts (rare: rejections themselves are).

Rows only grow during a faithful loop (the driver passes :func:`minimal_rows`,
which drops only rows that kept ones imply), so a support infeasible once stays infeasible:
cuts and the lower bound are kept across calls on the same learners. The solver only
chooses weights; faithfulness is decided by the oracle.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from pace_cert.master.highs import INF, OutOfTime, load_highs, new_highs, solve_optimal
from pace_cert.master.l1 import solve_on_support
from pace_cert.master.rows import MasterSolution, normalise_columns
from pace_cert.plumbing.budget import Budget

FEASIBLE_RHO = 1e-9  # normalised margin above which a support counts as feasible
PROGRESS_SECONDS = 15.0  # a long solve reports its bounds this often (``progress``)


@dataclass
class CoverStats:
    master_solves: int = 0
    lp_solves: int = 0
    cuts: int = 0
    rejected: int = 0  # feasible supports whose weights failed the caller's ``usable``
    seconds: float = 0.0
    history: list[int] = field(default_factory=list)  # support size tried per iteration


class MarginLP:
    """max rho  s.t.  A_n [w; beta] >= rho,  sum w = 1,  0 <= w_t <= [t in S],
    |beta| <= B, on one HiGHS instance: testing another support S only changes column
    bounds, so the simplex restarts from the last basis."""

    def __init__(self, An: np.ndarray, n_learners: int, offset_bound: float, seed: int) -> None:
        self.T, self.nb = n_learners, An.shape[1] - n_learners
        n_rows = len(An)
        h = new_highs(1, seed)
        T, nb = self.T, self.nb
        cost = np.r_[np.zeros(T + nb), -1.0]  # minimise -rho
        lower = np.r_[np.zeros(T), np.full(nb, -offset_bound), -INF]
        upper = np.r_[np.zeros(T), np.full(nb, offset_bound), INF]
        M = np.vstack([np.hstack([An, -np.ones((n_rows, 1))]), np.r_[np.ones(T), np.zeros(nb + 1)]])
        load_highs(
            h, M, cost, lower, upper, np.r_[np.zeros(n_rows), 1.0], np.r_[np.full(n_rows, INF), 1.0]
        )
        self.h, self.n_rows = h, n_rows
        self.on = np.zeros(T, bool)
        self.solves = 0

    def test(
        self, support: np.ndarray, budget: Budget | None
    ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """(rho, row duals y >= 0, weights w, offsets beta) for ``support``, solved
        within ``budget`` (:class:`~pace_cert.master.highs.OutOfTime` when it runs out);
        rho = -inf for an empty support."""
        on = np.zeros(self.T, bool)
        on[np.asarray(support, np.int64)] = True
        if not on.any():
            return -np.inf, np.zeros(self.n_rows), np.zeros(self.T), np.zeros(self.nb)
        ch = np.flatnonzero(on != self.on).astype(np.int32)
        if len(ch):
            self.h.changeColsBounds(len(ch), ch, np.zeros(len(ch)), on[ch].astype(float))
            self.on = on
        self.solves += 1
        solve_optimal(self.h, budget, "max-margin LP")
        sol = self.h.getSolution()
        x = np.asarray(sol.col_value)
        y = np.maximum(np.asarray(sol.row_dual)[: self.n_rows], 0.0)
        return float(x[-1]), y, np.maximum(x[: self.T], 0.0), x[self.T : self.T + self.nb]


class L0Cover:
    """Minimum-support weights for a fixed learner set, cuts kept across calls.

    ``solve(A)`` may be called again with rows that imply the previous ones (rows
    appended; or, from :func:`minimal_rows`, rows the new ones imply dropped);
    the learner count is fixed at construction.
    """

    def __init__(self, n_learners: int, n_offsets: int, *, seed: int = 0) -> None:
        self.T = n_learners
        self.offset_bound = 2.0 * (n_offsets + 1) + 2.0  # never binds (|a| <= 1, sum w = 1)
        self.seed = seed
        self.stats = CoverStats()
        self._pref = np.zeros(n_learners, np.int64)
        self._rows_seen: tuple[tuple[int, ...], int] | None = None  # the last solve's rows
        self.lb = 0  # 1 once the offsets alone are known not to meet the rows
        self._restart()

    def _restart(self) -> None:
        """A fresh master: no cuts, no rejections; ``lb`` keeps only "offsets alone do
        not meet the rows", which more rows cannot undo."""
        self.lb = min(self.lb, 1)
        self.cuts: list[np.ndarray] = []
        self._no_goods: set[tuple[int, ...]] = set()  # rejected minimum covers
        self._m = cp_model.CpModel()
        self._u = [self._m.new_bool_var(f"u{t}") for t in range(self.T)]
        self._posted_lb = 0
        self._set_objective()

    # ------------------------------------------------------------------ the master
    def prefer(self, weights: np.ndarray | None) -> None:
        """Tie-break among minimum covers: learners with larger ``weights`` first."""
        if weights is None or not len(weights) or float(np.max(weights)) <= 0:
            return
        w = np.asarray(weights[: self.T], float)
        self._pref = np.round(100.0 * (1.0 - w / float(np.max(w)))).astype(np.int64)
        self._set_objective()

    def _set_objective(self) -> None:
        # cost BIG + pref_t with sum pref < BIG: a minimum-cost cover is a minimum-size one
        big = 100 * self.T + 1
        self._m.minimize(sum((big + int(p)) * u for p, u in zip(self._pref, self._u)))

    def _master(self, time_limit: float | None) -> np.ndarray | str | None:
        if self.lb > self._posted_lb:
            self._m.add(sum(self._u) >= self.lb)
            self._posted_lb = self.lb
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = self.seed
        if time_limit is not None:
            solver.parameters.max_time_in_seconds = float(max(time_limit, 0.01))
        st = solver.solve(self._m)
        self.stats.master_solves += 1
        if st == cp_model.INFEASIBLE:
            return "infeasible"
        if st != cp_model.OPTIMAL:
            return None  # out of time
        return np.array([t for t, u in enumerate(self._u) if solver.boolean_value(u)], np.int64)

    def _add_cut(self, cut: np.ndarray) -> None:
        self.cuts.append(cut)
        self.stats.cuts += 1
        self._m.add_bool_or([self._u[int(t)] for t in cut])

    # -------------------------------------------------------------- the subproblem
    def _dual_cut(self, An: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(learners in the weak-duality cut, r = y.a_t) for row duals ``y``."""
        if y.sum() <= 0:
            return np.arange(self.T), np.zeros(self.T)
        y = y / y.sum()
        r = y @ An[:, : self.T]
        thr = -self.offset_bound * float(np.abs(y @ An[:, self.T :]).sum())
        return np.flatnonzero(r > thr - 1e-12 * (1.0 + abs(thr))), r

    def _cut(
        self,
        lp: MarginLP,
        An: np.ndarray,
        support: np.ndarray,
        y: np.ndarray,
        budget: Budget | None = None,
    ) -> np.ndarray:
        """The complement of a maximal infeasible support containing ``support`` (of an
        infeasible one only, if the deadline stops the growth: still a valid cut)."""
        cut, r = self._dual_cut(An, y)
        if np.isin(support, cut).any() or len(cut) == 0:
            cut = np.setdiff1d(np.arange(self.T), support)  # the no-good: always valid
        inside = np.setdiff1d(np.arange(self.T), cut)
        for t in cut[np.argsort(r[cut], kind="stable")]:
            if budget is not None and budget.expired():
                break
            if t in inside:
                continue
            trial = np.r_[inside, t]
            try:
                rho, y2, _, _ = lp.test(trial, budget)
            except OutOfTime:
                break
            if rho > FEASIBLE_RHO:
                continue
            implied, _ = self._dual_cut(An, y2)
            if np.isin(trial, implied).any():
                inside = np.union1d(inside, [t])
            else:  # the new duals prove more learners can join without helping
                inside = np.union1d(trial, np.setdiff1d(np.arange(self.T), implied))
        return np.setdiff1d(np.arange(self.T), inside)

    def _no_good(self, support: np.ndarray) -> None:
        """Cut off ``support`` (feasible, but its weights are unusable) and its subsets;
        only valid for a minimum cover, whose smaller supports are all cut already."""
        self._no_goods.add(tuple(int(t) for t in support))
        self._add_cut(np.setdiff1d(np.arange(self.T), support))

    # ------------------------------------------------------------------- solve
    def solve(
        self,
        A: np.ndarray,
        *,
        warm_support: np.ndarray | None = None,
        budget: Budget | None = None,
        fallback: np.ndarray | None = None,
        usable: Callable[[MasterSolution], bool] | None = None,
        progress: Callable[[str], None] | None = None,
        progress_seconds: float = PROGRESS_SECONDS,
        lazy: Callable[[MasterSolution], np.ndarray] | None = None,
    ) -> MasterSolution:
        """A minimum support for rows ``A`` (layout of :func:`margin_rows`) with
        max-margin weights on it (rescaled so every row meets >= 1) that pass ``usable``.
        ``optimal`` is False when the budget stopped the search; then the smallest
        usable feasible support seen is returned: ``warm_support`` or ``fallback`` (e.g.
        a certified model's support) if so, else every learner. ``progress`` receives a
        line (lower bound, best support, cuts) every ``progress_seconds`` of search.
        ``lazy``: called with each minimum usable support found; the margin rows it
        returns are added to ``A`` and the search goes on (its cuts stay valid: rows only
        grow), so the answer meets them too (``driver/lazy_screen.py``)."""
        deadline = None if budget is None else budget.deadline
        t0 = time.perf_counter()
        reported = t0
        An, scale = normalise_columns(A, self.T)
        lp = MarginLP(An, self.T, self.offset_bound, self.seed)
        best = None  # (support, solution)

        def solution(rho: float, w: np.ndarray, beta: np.ndarray) -> MasterSolution:
            """Weights rescaled so every row meets >= 1; ``optimal``/status set on return."""
            weights = np.zeros(self.T)
            on = w > 0
            weights[on] = w[on] / scale[on] / rho
            return MasterSolution(
                weights, np.r_[0.0, beta / rho], float(np.sum(on)), None, True, ""
            )

        def accepted(support: np.ndarray, rho: float, w: np.ndarray, beta: np.ndarray):
            """The support's solution if it is feasible and usable, else None."""
            if rho <= FEASIBLE_RHO:
                return None
            sol = solution(rho, w, beta)
            if usable is not None and not usable(sol):
                self.stats.rejected += 1
                return None
            return sol

        seen = (A.shape, hash(A.tobytes()))
        if seen != self._rows_seen:  # new rows: rejections are tested again
            self._rows_seen = seen
            for key in sorted(self._no_goods):
                S = np.asarray(key, np.int64)
                rho, _, w, beta = lp.test(S, budget)
                if accepted(S, rho, w, beta) is not None:
                    self._restart()
                    break

        def out_of_time() -> bool:
            return deadline is not None and time.perf_counter() >= deadline

        for start in (warm_support, fallback):
            if start is None or not len(start):
                continue
            ws = np.unique(np.asarray(start, np.int64))
            if best is not None and len(best[0]) <= len(ws):
                continue
            rho, _, w, beta = lp.test(ws, budget)
            sol = accepted(ws, rho, w, beta)
            if sol is not None:
                best = (ws, sol)
        if self.lb == 0:  # one class only among the samples: offsets alone may do
            alone = solve_on_support(
                A, self.T, np.zeros(0, np.int64), budget=budget, seed=self.seed
            )
            if alone is not None:
                self.stats.seconds += time.perf_counter() - t0
                return dataclasses.replace(alone, objective=0.0, status="optimal (cover)")
            self.lb = 1
        optimal = False
        while True:
            if best is not None and self.lb >= len(best[0]):
                optimal = True
                break
            if out_of_time():
                break
            now = time.perf_counter()
            if progress is not None and now - reported >= progress_seconds:
                reported = now
                progress(
                    f"cover: {now - t0:.0f} s, lower bound {self.lb}, best usable support "
                    f"{len(best[0]) if best is not None else 'none yet'}, "
                    f"{self.stats.cuts} cuts"
                )
            left = None if deadline is None else deadline - now
            S = self._master(left)
            if S is None or isinstance(S, str):  # out of time / only numerical noise
                break
            self.lb = max(self.lb, len(S))
            self.stats.history.append(len(S))
            rho, y, w, beta = lp.test(S, budget)
            if rho > FEASIBLE_RHO:
                sol = accepted(S, rho, w, beta)
                extra = None if sol is None or lazy is None else lazy(sol)
                if extra is not None and len(extra):  # refuted: the same search, more rows
                    A = np.vstack([A, extra])
                    self.stats.lp_solves += lp.solves
                    del lp, An  # free the old LP (HiGHS keeps ~100 bytes a nonzero) first
                    An, scale = normalise_columns(A, self.T)
                    lp = MarginLP(An, self.T, self.offset_bound, self.seed)
                    continue
                if sol is not None:
                    best = (S, sol)
                    optimal = True
                    break
                self._no_good(S)  # a minimum cover: every smaller support is cut already
                continue
            self._add_cut(self._cut(lp, An, S, y, budget))
        if best is None:
            every = np.arange(self.T)
            rho, _, w, beta = lp.test(every, budget)
            if rho <= FEASIBLE_RHO:
                raise RuntimeError("L0 cover: no support meets the rows, not even all learners")
            best = (every, solution(rho, w, beta))  # the caller's fallback of last resort
        self.stats.lp_solves += lp.solves
        self.stats.seconds += time.perf_counter() - t0
        sol = best[1]
        return dataclasses.replace(
            sol,
            optimal=optimal,
            status="optimal (cover)" if optimal else "time limit (cover incumbent)",
        )
