"""The L0 master of one L0 step: which solver answers, and what it remembers.

Each call solves problem P (fewest learners meeting every margin row) on the current
sample matrix. Cheapest first: the last support re-solved on its own (still feasible:
still optimal, since rows only grow). Otherwise the big-M MILP (gurobipy within its
licence, or HiGHS when asked) or the *cover* (``pace_cert/master/l0_cover.py``: a
hitting set over learners with LP cuts, no big-M; its cuts persist across calls). A MILP
answer that breaks its rows (big-M trickle flow), fails them in float32, or has no
incumbent switches this master to the cover for good
(docs/decisions/0003-l0-cover-vs-big-m.md). Every support is returned with max-margin
weights (``master.robust_weights``): the middle of the feasible cone, not a vertex.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from pace_cert.driver.lazy_screen import LazyScreen
from pace_cert.driver.state import RunState
from pace_cert.master.highs import OutOfTime
from pace_cert.master.l0_bigm import (
    GUROBI_SIZE_LIMIT,
    NoIncumbent,
    gurobi_available,
    l0_size,
    solve_l0,
    solve_l0_gurobi,
)
from pace_cert.master.l0_cover import L0Cover
from pace_cert.master.l1 import complete_support, solve_on_support
from pace_cert.master.max_margin import margin_on_support, max_margin_on_support
from pace_cert.master.rows import MasterSolution, meets_rows, minimal_rows
from pace_cert.model.ensemble import Tree
from pace_cert.plumbing.budget import Budget


class L0Master:
    """Problem P over ``learners`` for the faithful loop: ``solve(A, budget)``.

    ``l1_value`` sets the big-M (kappa times it), raised to keep ``warm`` (a start
    weighting, e.g. the L1 solution) feasible. Set ``again`` before a call to re-solve
    the last support with more time (the improve step)."""

    def __init__(
        self,
        state: RunState,
        learners: list[Tree],
        l1_value: float,
        warm: np.ndarray | None,
    ) -> None:
        self.state = state
        self.learners = learners
        self.warm = warm
        self.big_m = state.cfg.tuning.master.kappa * max(l1_value, 1e-9)
        if warm is not None:  # keep the warm start (e.g. the prune-only solution) feasible
            self.big_m = max(self.big_m, 2.0 * float(np.max(warm[: len(learners)], initial=0.0)))
        self.cover: L0Cover | None = None
        self.exact = False  # the MILP failed once: the cover from now on
        self.last: MasterSolution | None = None  # the last solution (support) found
        self.again = False  # the next call re-solves the last support with more time
        self.completed = False  # a MILP answer failed its rows and was completed once

    # ------------------------------------------------------------------ helpers
    def _robust(self, A: np.ndarray, sol: MasterSolution, budget: Budget) -> MasterSolution:
        """Same support, max-margin weights (``master.robust_weights``); else ``sol``."""
        if not self.state.cfg.tuning.master.robust_weights:
            return sol
        n = len(self.learners)
        on = np.flatnonzero(sol.weights > 0)
        mm = max_margin_on_support(A, n, on, budget=budget, seed=self.state.cfg.seed)
        if mm is None:
            return sol
        return dataclasses.replace(mm, optimal=sol.optimal, status=sol.status)

    def _milp(self, rows: np.ndarray) -> Callable[..., MasterSolution] | None:
        """The big-M MILP solver to call on the margin ``rows`` P needs, or None for the
        cover. auto: gurobipy when installed and the MILP fits its pip licence, else
        the cover."""
        state, n = self.state, len(self.learners)
        choice = state.cfg.milp
        if choice == "highs":
            return solve_l0
        if choice == "cover":
            return None
        if not gurobi_available():
            if choice == "gurobi":
                state.say("gurobipy is not installed; using the L0 cover instead")
            return None
        n_vars, n_cons = l0_size(rows, n)
        if max(n_vars, n_cons) > GUROBI_SIZE_LIMIT:
            if not state.stats.said_gurobi:
                state.say(
                    f"L0 problem has {n_vars} variables and {n_cons} constraints, beyond the "
                    f"gurobipy pip licence ({GUROBI_SIZE_LIMIT}); using the L0 cover"
                )
                state.stats.said_gurobi = True
            return None
        state.stats.used_gurobi = True
        return solve_l0_gurobi

    # -------------------------------------------------------------------- solve
    def solve(self, A: np.ndarray, budget: Budget) -> MasterSolution:
        state, n, seed = self.state, len(self.learners), self.state.cfg.seed
        left = budget.left()
        again, self.again = self.again, False  # re-solve an incumbent with more time
        tl = state.cfg.tuning.master.l0_time_limit * (4 if again else 1)
        if left is not None:  # never past the budget: the time left, capped
            tl = budget.solver_limit(None if again else tl)
        start = self.last
        by_support: dict[tuple, MasterSolution] = {}
        lazy: LazyScreen | None = None  # the solve's screen, whose rows grow during it

        def reweighted(s: MasterSolution) -> MasterSolution:
            """``_robust`` on the rows so far (``A``, or the screen's when it added
            some), once per support and row count within this solve."""
            rows_now = A if lazy is None or not lazy.added else lazy.rows
            key = (tuple(np.flatnonzero(s.weights > 0).tolist()), len(rows_now))
            if key not in by_support:
                by_support[key] = self._robust(rows_now, s, budget)
            return dataclasses.replace(by_support[key], optimal=s.optimal, status=s.status)

        def usable(s: MasterSolution) -> bool:
            return state.clears_own_rows(reweighted(s), self.learners)

        if start is not None and not again:  # cheap first: is the last support feasible?
            on = np.flatnonzero(start.weights > 0)
            kept = solve_on_support(A, n, on, budget=budget, seed=seed)
            if kept is not None:  # optimal stays optimal; a time-limited incumbent stays one
                kept = dataclasses.replace(kept, optimal=start.optimal)
            if kept is not None and usable(kept):
                self.last = kept
                return reweighted(kept)
            if kept is not None:  # feasible in float64 only: the cover skips it from now on
                self.exact = True
        w = self.warm if start is None else np.r_[start.weights, start.offsets[1:]]
        # the rows P needs (each once, none another implies), for the licence check
        # and the MILP alike
        rows = None if self.exact else minimal_rows(A, n)
        solver = None if rows is None else self._milp(rows)
        if solver is None:  # the cover: no big-M, any weights on the support
            ws = None if w is None else np.flatnonzero(np.asarray(w[:n]) > 0)
            fb = None  # the smallest certified model's support, when over this pool
            if state.best is not None and max(state.best[0].keep, default=-1) < n:
                fb = np.asarray(state.best[0].keep, np.int64)
            if self.cover is None:
                self.cover = L0Cover(n, state.original.n_classes - 1, seed=seed)
                if self.warm is not None:
                    self.cover.prefer(np.asarray(self.warm[:n]))
            rows = minimal_rows(A, n) if rows is None else rows
            lazy = self._lazy(rows, budget)
            s = self.cover.solve(
                rows,
                warm_support=ws,
                budget=budget.cap(tl),
                fallback=fb,
                usable=usable,
                progress=lambda m: state.say(f"[l0] {m}"),
                progress_seconds=state.cfg.tuning.master.progress_seconds,
                lazy=lazy,
            )
            if lazy is not None and lazy.added:  # the solve's own samples are rows now
                self._said(lazy)
            self.last = s
            state.stats.l0_optimal = s.optimal
            return reweighted(s)  # computed already when the cover tested it
        # rows were only added since the last solve: its optimum is a lower bound
        lb = round(start.objective) if start is not None and start.optimal else 0
        report: dict = {}
        if solver is solve_l0_gurobi:  # HiGHS' big-M solve has no reports
            lazy = self._lazy(rows, budget)
            report = {
                "progress": lambda m: state.say(f"[l0] {m}"),
                "progress_seconds": state.cfg.tuning.master.progress_seconds,
                "lazy": lazy,
                "stall": 0.0 if lazy is None or again else state.cfg.tuning.master.l0_stall,
            }
        try:
            s = solver(
                rows, n, self.big_m, warm=w, threads=1, seed=seed, time_limit=tl,
                min_support=lb, **report,
            )  # fmt: skip
        except NoIncumbent as e:
            # no incumbent by the time limit (the warm support fails the new rows),
            # or a row needs more than the big-M: the cover has neither problem
            state.say(f"[l0] {e}; switching to the cover")
            self.exact = True
            return self.solve(state.matrix(self.learners), budget)
        if lazy is not None and lazy.added:  # the solve's own samples are rows now
            self._said(lazy)
        rows_now = A if lazy is None or not lazy.added else lazy.rows
        if not meets_rows(rows_now, s):
            # an incumbent found before later lazy rows (gurobipy does not re-check it),
            # or big-M trickle (u below the integrality tolerance counted as 0 while
            # w = u * M carried rows). The first time, complete the support by an LP
            # that prefers its trees; when that fails, or on a second failing answer,
            # the cover (no big-M) from now on for this master (decision 0019).
            done = None
            if not self.completed:
                self.completed = True
                done = complete_support(rows_now, n, s, budget=budget, seed=seed)
            if done is None:
                state.say("[l0] big-M MILP solution violates its rows; switching to the cover")
                self.exact = True
                return self.solve(state.matrix(self.learners), budget)
            state.say(
                f"[l0] big-M MILP solution violates its rows; its support of "
                f"{round(s.objective)} completed to {round(done.objective)} by an LP"
            )
            s = done
        if not usable(s):
            state.say("[l0] MILP support fails its rows in float32; switching to the cover")
            self.exact = True
            return self.solve(state.matrix(self.learners), budget)
        self.last = s
        state.stats.l0_optimal = s.optimal
        state.stats.big_m = self.big_m
        return reweighted(s)  # computed already by usable()

    def _lazy(self, rows: np.ndarray, budget: Budget) -> LazyScreen | None:
        """A screen of the MILP's incumbents (``search.lazy_screen`` of them at most),
        when there is a grid or pool to screen on or CP-SAT checks them
        (``search.lazy_oracle``); else None."""
        state, search = self.state, self.state.cfg.tuning.search
        limit, oracle, scr = search.lazy_screen, search.lazy_oracle, state.screen
        if limit == 0 or not (scr.can_enumerate() or scr.pool_size() > 0 or oracle > 0):
            return None
        return LazyScreen(state, self.learners, rows, budget, limit, oracle=oracle)

    def _said(self, lazy: LazyScreen) -> None:
        self.state.say(
            f"[l0] the master screened {lazy.screened} of its candidates"
            + (f" (CP-SAT checked {lazy.checked})" if lazy.checked else "")
            + f" and added {lazy.added} separating samples as rows"
        )

    # ------------------------------------------------------------------ family
    def family(self, A: np.ndarray, sol: MasterSolution, budget: Budget) -> list[MasterSolution]:
        """The candidates this master would likely propose after ``sol`` is refuted: its
        one-swap neighbours (one learner of the support out, one outside in) that still
        meet every row, largest normalised max-margin first, with max-margin weights.
        At most ``8 * search.family_size`` swaps are scored (a seeded sample)."""
        n, size = len(self.learners), self.state.cfg.tuning.search.family_size
        S = np.flatnonzero(sol.weights > 0)
        out = np.setdiff1d(np.arange(n), S)
        if size == 0 or len(S) == 0 or len(out) == 0:
            return []
        swaps = [(t, u) for t in S for u in out]
        rng = np.random.default_rng(self.state.cfg.seed + len(A))
        if len(swaps) > 8 * size:
            swaps = [swaps[i] for i in rng.choice(len(swaps), 8 * size, replace=False)]
        scored = []
        for t, u in swaps:
            R = np.r_[S[t != S], u]
            try:
                mm, alt = margin_on_support(A, n, R, budget=budget, seed=self.state.cfg.seed)
            except OutOfTime:
                break
            if mm.rho > 1e-9:
                scored.append((mm.rho, alt))
        scored.sort(key=lambda r: -r[0])
        return [alt for _rho, alt in scored[:size]]
