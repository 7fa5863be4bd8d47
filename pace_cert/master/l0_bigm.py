"""Problem P, the L0 master as a big-M MILP (HiGHS, or gurobipy when installed).

L0 linking: w_t <= M u_t with u_t binary and M = kappa * l1 where l1 is the optimal L1
value on the same samples (kappa = 10 by default). The homogeneity of the rows means a
support S is feasible iff some (w, beta) on S meets the margins; bounding w_t by M only
excludes supports whose margins need a single tree weight above ten times the whole L1
weight, i.e. a dynamic range that would also leave the certified margin close to
float32 rounding. The bound is recorded in the certificate. Why the driver prefers the
cover (``l0_cover.py``) without gurobipy: docs/decisions/0003-l0-cover-vs-big-m.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import highspy
import numpy as np

from pace_cert.master.highs import INF, load_highs, new_highs, run_highs
from pace_cert.master.rows import MasterSolution
from pace_cert.plumbing.budget import Budget


class NoIncumbent(RuntimeError):
    """A big-M L0 MILP stopped without any solution (time limit before a first
    incumbent, or infeasible because a row needs a weight above the big-M)."""


def solve_l0(
    A: np.ndarray,
    n_learners: int,
    big_m: float,
    *,
    warm: np.ndarray | None = None,
    threads: int = 1,
    seed: int = 0,
    time_limit: float | None = None,
    min_support: int = 0,
) -> MasterSolution:
    """Problem P: min sum u  s.t.  A [w; beta] >= 1,  0 <= w_t <= M u_t,  u binary.

    ``min_support``: a known lower bound on sum u (e.g. the optimum before rows were
    added: adding rows never lowers it), posted as a cut so the solver can stop as soon
    as it meets it."""
    h = new_highs(threads, seed)
    n_rows, n_cols = A.shape
    T = n_learners
    nb = n_cols - T
    # columns: w (T), beta (nb), u (T)
    cost = np.r_[np.zeros(T + nb), np.ones(T)]
    lower = np.r_[np.zeros(T), np.full(nb, -INF), np.zeros(T)]
    upper = np.r_[np.full(T, INF), np.full(nb, INF), np.ones(T)]
    link = np.zeros((T, n_cols + T))
    link[np.arange(T), np.arange(T)] = 1.0
    link[np.arange(T), n_cols + np.arange(T)] = -big_m
    count = np.r_[np.zeros(n_cols), np.ones(T)][None, :]
    full = np.vstack([np.hstack([A, np.zeros((n_rows, T))]), link, count])
    row_lo = np.r_[np.ones(n_rows), np.full(T, -INF), float(min_support)]
    row_hi = np.r_[np.full(n_rows, INF), np.zeros(T), INF]
    load_highs(h, full, cost, lower, upper, row_lo, row_hi)
    idx = np.arange(n_cols, n_cols + T, dtype=np.int32)
    h.changeColsIntegrality(T, idx, np.array([highspy.HighsVarType.kInteger] * T))
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 0.999)
    # u = 1e-6 would count as 0 yet allow w = 1e-6 * M: keep integrality tight
    h.setOptionValue("mip_feasibility_tolerance", 1e-9)
    if warm is not None:
        sol = highspy.HighsSolution()
        w = np.minimum(
            np.asarray(warm[: T + nb], float), np.r_[np.full(T, big_m), np.full(nb, INF)]
        )
        sol.col_value = list(np.r_[w, (w[:T] > 0).astype(float)])
        sol.value_valid = True
        h.setSolution(sol)
    st = run_highs(h, Budget.seconds(time_limit))
    sol = h.getSolution()
    if not sol.value_valid:
        raise NoIncumbent(f"L0 master found no solution: {h.modelStatusToString(st)}")
    x = np.asarray(sol.col_value)
    u = x[n_cols:]
    w = np.where(u > 0.5, np.maximum(x[:T], 0.0), 0.0)
    return MasterSolution(
        weights=w,
        offsets=np.r_[0.0, x[T : T + nb]],
        objective=float(np.sum(u > 0.5)),
        duals=None,
        optimal=st == highspy.HighsModelStatus.kOptimal,
        status=h.modelStatusToString(st),
    )


GUROBI_SIZE_LIMIT = 2000  # the pip licence's limit on variables and on constraints


def gurobi_available() -> bool:
    try:
        import gurobipy  # noqa: F401
    except ImportError:
        return False
    return True


def l0_size(A: np.ndarray, n_learners: int) -> tuple[int, int]:
    """(variables, constraints) of problem P for the Gurobi licence check."""
    return A.shape[1] + n_learners, A.shape[0] + n_learners


def solve_l0_gurobi(
    A: np.ndarray,
    n_learners: int,
    big_m: float,
    *,
    warm: np.ndarray | None = None,
    threads: int = 1,
    seed: int = 0,
    time_limit: float | None = None,
    min_support: int = 0,
    progress: Callable[[str], None] | None = None,
    progress_seconds: float = 15.0,
    lazy: Callable[[MasterSolution], np.ndarray] | None = None,
    stall: float = 0.0,
) -> MasterSolution:
    """Problem P on gurobipy (same formulation as :func:`solve_l0`).

    ``progress``: called every ``progress_seconds`` of the solve with its best support
    and lower bound so far (a long solve is not silent). ``lazy``: called with every
    incumbent the solver finds; the margin rows it returns (same columns as ``A``) are
    added as lazy constraints, so the answer meets them too and "optimal" means optimal
    on ``A`` and every row added (``driver/lazy_screen.py``). ``stall`` > 0: stop once
    an incumbent exists and this many seconds passed without a new one (the
    relaxation's bound rarely moves on these rows; the loop's next round is worth more
    than the proof)."""
    import gurobipy as gp

    T = n_learners
    nb = A.shape[1] - T
    env = gp.Env(empty=True)
    env.setParam("OutputFlag", 0)
    env.start()
    try:
        m = gp.Model(env=env)
        m.Params.Threads = max(1, threads)
        m.Params.Seed = seed
        m.Params.MIPGap = 0.0
        m.Params.MIPGapAbs = 0.999
        # u = 1e-5 would count as 0 yet allow w = 1e-5 * M (big-M trickle flow)
        m.Params.IntegralityFocus = 1
        m.Params.IntFeasTol = 1e-9
        if time_limit is not None:
            m.Params.TimeLimit = max(time_limit, 0.01)
        w = m.addMVar(T, lb=0.0)
        b = m.addMVar(nb, lb=-gp.GRB.INFINITY)
        u = m.addMVar(T, vtype=gp.GRB.BINARY)
        m.addConstr(A[:, :T] @ w + A[:, T:] @ b >= 1.0)
        m.addConstr(w <= big_m * u)
        if min_support > 0:
            m.addConstr(u.sum() >= min_support)
        m.setObjective(u.sum(), gp.GRB.MINIMIZE)
        if warm is not None:
            ww = np.minimum(np.asarray(warm[:T], float), big_m)
            w.Start = ww
            u.Start = (ww > 0).astype(float)
            b.Start = np.asarray(warm[T : T + nb], float)
        report = None if progress is None else _gurobi_reporter(progress, progress_seconds)
        if lazy is not None:
            m.Params.LazyConstraints = 1
            report = _gurobi_lazy(lazy, w.tolist(), b.tolist(), u.tolist(), report, stall)
        m.optimize(report)
        if m.SolCount == 0:
            raise NoIncumbent(f"L0 master (gurobi) found no solution: status {m.Status}")
        uu = u.X
        return MasterSolution(
            weights=np.where(uu > 0.5, np.maximum(w.X, 0.0), 0.0),
            offsets=np.r_[0.0, b.X],
            objective=float(np.sum(uu > 0.5)),
            duals=None,
            optimal=m.Status == gp.GRB.OPTIMAL,
            status=f"gurobi status {m.Status}",
        )
    finally:
        env.dispose()


def _gurobi_lazy(lazy, w: list, b: list, u: list, report, stall: float):
    """A gurobipy callback passing each new incumbent (support ``u`` > 0.5, weights
    ``w``, offsets ``b``) to ``lazy`` and adding the rows it returns with ``cbLazy``;
    terminating the solve ``stall`` seconds (> 0) after the last incumbent; other calls
    go to ``report``."""
    import gurobipy as gp

    cols = w + b
    last = [0.0]  # run time of the last incumbent

    def callback(model, where) -> None:
        if where != gp.GRB.Callback.MIPSOL:
            if report is not None:
                report(model, where)
            if stall > 0 and where == gp.GRB.Callback.MIP:
                t = model.cbGet(gp.GRB.Callback.RUNTIME)
                if model.cbGet(gp.GRB.Callback.MIP_SOLCNT) > 0 and t - last[0] > stall:
                    model.terminate()
            return
        last[0] = model.cbGet(gp.GRB.Callback.RUNTIME)
        uu = np.array(model.cbGetSolution(u))
        ww = np.array(model.cbGetSolution(w))
        bb = np.array(model.cbGetSolution(b)) if b else np.zeros(0)
        sol = MasterSolution(
            weights=np.where(uu > 0.5, np.maximum(ww, 0.0), 0.0),
            offsets=np.r_[0.0, bb],
            objective=float(np.sum(uu > 0.5)),
            duals=None,
            optimal=False,
            status="incumbent",
        )
        for row in lazy(sol):
            model.cbLazy(gp.LinExpr(row.tolist(), cols) >= 1.0)

    return callback


def _gurobi_reporter(progress: Callable[[str], None], period: float):
    """A gurobipy callback reporting the MIP's incumbent and bound every ``period``
    seconds of its run time."""
    import gurobipy as gp

    due = [period]

    def report(model, where) -> None:
        if where != gp.GRB.Callback.MIP:
            return
        t = model.cbGet(gp.GRB.Callback.RUNTIME)
        if t < due[0]:
            return
        due[0] = t + period
        best = model.cbGet(gp.GRB.Callback.MIP_OBJBST)
        bound = model.cbGet(gp.GRB.Callback.MIP_OBJBND)
        have = f"best support {best:.0f}" if best < gp.GRB.INFINITY else "no support yet"
        low = max(0, math.ceil(bound - 1e-6)) if bound > -gp.GRB.INFINITY else 0  # sum u >= 0
        progress(f"MILP: {t:.0f} s, {have}, lower bound {low}")

    return report
