"""Master problems on HiGHS: the L1 LP (problem R, with duals) and the L0 MILP (problem P).

Both choose learner weights w >= 0 and free per-class offsets beta (beta_0 = 0) so that,
on every sample x with original label y0 and every other class k,

    sum_t w_t (h_t,y0(x) - h_t,k(x)) + beta_y0 - beta_k >= 1.

The right-hand side 1 is w.l.o.g. (the constraints are homogeneous in (w, beta)). The
offsets stand for the compressed model's base scores; they are needed because the IR
writes a binary single-column model as a constant column 0 (its threshold). They are
free and cost nothing, so the L1 value measures tree weight only.

L0 linking (problem P): w_t <= M u_t with u_t binary and M = kappa * l1 where l1 is the
optimal L1 value on the same samples (kappa = 10 by default). The homogeneity above
means a support S is feasible iff some (w, beta) on S meets the margins; bounding w_t by
M only excludes supports whose margins need a single tree weight above ten times the
whole L1 weight, i.e. a dynamic range that would also leave the certified margin
close to float32 rounding. The bound is recorded in the certificate.

The solvers only choose weights; faithfulness is decided by the oracle alone.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

import highspy
import numpy as np

INF = highspy.kHighsInf


_STDOUT_LOCK = threading.Lock()  # fd 1 is process-wide: one redirection at a time


@contextlib.contextmanager
def _quiet_stdout():
    """HiGHS prints a banner on construction; keep stdout clean for --json. Serialised:
    two threads swapping fd 1 at once could leave it pointing at /dev/null."""
    with _STDOUT_LOCK:
        fd = os.dup(1)
        try:
            with open(os.devnull, "w") as devnull:
                os.dup2(devnull.fileno(), 1)
                yield
        finally:
            os.dup2(fd, 1)
            os.close(fd)


def new_highs(threads: int = 1, seed: int = 0, time_limit: float | None = None) -> highspy.Highs:
    with _quiet_stdout():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", int(seed))
    h.setOptionValue("threads", int(max(1, threads)))
    if time_limit is not None:
        h.setOptionValue("time_limit", float(max(time_limit, 0.01)))
    return h


def margin_rows(H: np.ndarray, y0: np.ndarray) -> np.ndarray:
    """Constraint matrix block for learners' leaf values at samples.

    ``H``: float64 [n_samples, n_learners, K] (h_t(x) per class); ``y0``: [n_samples].
    Returns A: [n_samples * (K-1), n_learners + K-1] with the w-part and beta-part of
    rows (x, k) for every k != y0(x), in sample-major, class-ascending order.
    """
    n, T, K = H.shape
    other = np.ones((n, K), bool)
    other[np.arange(n), y0] = False
    i, k = np.nonzero(other)  # row-major: sample-major, class-ascending
    yi = y0[i]
    A = np.zeros((len(i), T + K - 1))
    A[:, :T] = H[i, :, yi] - H[i, :, k]
    r = np.arange(len(i))
    A[r[yi > 0], T + yi[yi > 0] - 1] += 1.0
    A[r[k > 0], T + k[k > 0] - 1] -= 1.0
    return A


@dataclass(frozen=True)
class MasterSolution:
    weights: np.ndarray  # [n_learners], >= 0
    offsets: np.ndarray  # [K] with offsets[0] = 0
    objective: float  # L1: sum of weights; L0: number of nonzero weights
    duals: np.ndarray | None  # L1 only: one per row, >= 0
    optimal: bool
    status: str


class NoIncumbent(RuntimeError):
    """A big-M L0 MILP stopped without any solution (time limit before a first
    incumbent, or infeasible because a row needs a weight above the big-M)."""


def solve_l1(A: np.ndarray, n_learners: int, *, threads: int = 1, seed: int = 0) -> MasterSolution:
    """Problem R: min sum w  s.t.  A [w; beta] >= 1,  w >= 0, beta free (a cold solve)."""
    return L1Master(threads=threads, seed=seed).solve(A, n_learners)


class L1Master:
    """Problem R kept in one HiGHS instance across rounds (simplex warm start).

    The driver's constraint matrix only grows: new samples append rows, new learners
    insert w-columns before the beta columns. ``solve(A, T)`` checks that ``A`` extends
    the matrix solved last (same old block, bit for bit), appends the new columns and
    rows to the HiGHS model and re-solves from the previous basis; anything else (e.g.
    learners removed) rebuilds the model. The answer is the same LP's optimum either way.
    """

    def __init__(self, *, threads: int = 1, seed: int = 0) -> None:
        self.threads, self.seed = threads, seed
        self.h: highspy.Highs | None = None
        self.A = np.zeros((0, 0))
        self.T = 0
        self.cols = np.zeros(0, np.int64)  # column j of A -> HiGHS column
        self.rebuilds = 0
        self.iterations = 0  # simplex iterations of the last solve

    def _extends(self, A: np.ndarray, T: int) -> bool:
        r0, c0 = self.A.shape
        T0 = self.T
        return (
            self.h is not None
            and A.shape[1] - T == c0 - T0
            and T >= T0
            and A.shape[0] >= r0
            and np.array_equal(A[:r0, :T0], self.A[:, :T0])
            and np.array_equal(A[:r0, T:], self.A[:, T0:])
        )

    def _build(self, A: np.ndarray, T: int) -> None:
        self.h = new_highs(self.threads, self.seed)
        n_cols = A.shape[1]
        cost = np.r_[np.ones(T), np.zeros(n_cols - T)]
        lower = np.r_[np.zeros(T), np.full(n_cols - T, -INF)]
        load_highs(self.h, A, cost, lower, np.full(n_cols, INF))
        self.cols = np.arange(n_cols)
        self.rebuilds += 1

    def _extend(self, A: np.ndarray, T: int) -> None:
        h = self.h
        r0 = self.A.shape[0]
        T0 = self.T
        new = A[:r0, T0:T]
        if T > T0:
            nz_c, nz_r = np.nonzero(new.T)  # column-major entries of the new columns
            n_new = T - T0
            h.addCols(
                n_new,
                np.ones(n_new),
                np.zeros(n_new),
                np.full(n_new, INF),
                len(nz_r),
                np.searchsorted(nz_c, np.arange(n_new)).astype(np.int32),
                nz_r.astype(np.int32),
                new.T[nz_c, nz_r].astype(float),
            )
            first = int(h.getNumCol()) - n_new
            self.cols = np.r_[self.cols[:T0], first + np.arange(n_new), self.cols[T0:]]
        rows = A[r0:]
        if len(rows):
            nz_r, nz_c = np.nonzero(rows)
            h.addRows(
                len(rows),
                np.ones(len(rows)),
                np.full(len(rows), INF),
                len(nz_c),
                np.searchsorted(nz_r, np.arange(len(rows))).astype(np.int32),
                self.cols[nz_c].astype(np.int32),
                rows[nz_r, nz_c].astype(float),
            )

    def solve(self, A: np.ndarray, n_learners: int) -> MasterSolution:
        """Problem R on ``A`` (layout of :func:`margin_rows`), warm-started when possible."""
        if self._extends(A, n_learners):
            self._extend(A, n_learners)
        else:
            self._build(A, n_learners)
        self.A, self.T = A.copy(), n_learners
        h = self.h
        h.run()
        st = h.getModelStatus()
        if st != highspy.HighsModelStatus.kOptimal:
            self.h = None  # do not extend a model in an unknown state
            raise RuntimeError(f"L1 master not optimal: {h.modelStatusToString(st)}")
        self.iterations = int(h.getInfo().simplex_iteration_count)
        sol = h.getSolution()
        x = np.asarray(sol.col_value)[self.cols]
        return MasterSolution(
            weights=np.maximum(x[:n_learners], 0.0),
            offsets=np.r_[0.0, x[n_learners:]],
            objective=float(h.getInfo().objective_function_value),
            duals=np.maximum(np.asarray(sol.row_dual), 0.0),
            optimal=True,
            status="optimal",
        )


@dataclass(frozen=True)
class MarginSolution:
    """Hard-margin LP on normalised columns: weights sum to 1, rho = smallest margin."""

    weights: np.ndarray  # [n_learners] >= 0, sum 1 (in the normalised column scale)
    offsets: np.ndarray  # [K], offsets[0] = 0
    rho: float
    duals: np.ndarray  # row duals v >= 0, sum 1
    gamma: float  # dual of sum w = 1: a column improves iff v . a > gamma


def solve_max_margin(
    A: np.ndarray, n_learners: int, *, offset_bound: float = 4.0, seed: int = 0
) -> MarginSolution:
    """max rho  s.t.  A [w; beta] >= rho,  sum w = 1,  w >= 0,  |beta| <= offset_bound.

    Columns should be scaled to max |a| = 1 (then offsets beyond a few units never help;
    the bound keeps the LP bounded when a single class is present). rho > 0 means the
    support of w meets every margin row after scaling by 1/rho.
    """
    h = new_highs(1, seed)
    n_rows, n_cols = A.shape
    T, nb = n_learners, n_cols - n_learners
    cost = np.r_[np.zeros(n_cols), -1.0]  # minimise -rho
    lower = np.r_[np.zeros(T), np.full(nb, -offset_bound), -INF]
    upper = np.r_[np.full(T, INF), np.full(nb, offset_bound), INF]
    M = np.vstack([np.hstack([A, -np.ones((n_rows, 1))]), np.r_[np.ones(T), np.zeros(nb + 1)]])
    load_highs(
        h, M, cost, lower, upper, np.r_[np.zeros(n_rows), 1.0], np.r_[np.full(n_rows, INF), 1.0]
    )
    h.run()
    st = h.getModelStatus()
    if st != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"max-margin LP not optimal: {h.modelStatusToString(st)}")
    sol = h.getSolution()
    x = np.asarray(sol.col_value)
    dual = np.asarray(sol.row_dual)
    return MarginSolution(
        weights=np.maximum(x[:T], 0.0),
        offsets=np.r_[0.0, x[T : T + nb]],
        rho=float(x[-1]),
        duals=np.maximum(dual[:n_rows], 0.0),
        gamma=float(-dual[n_rows]),  # HiGHS sign: min problem; equals rho at optimum
    )


def normalise_columns(A: np.ndarray, n_learners: int) -> tuple[np.ndarray, np.ndarray]:
    """(A with its w-columns scaled to max |a| = 1, the scales); all-zero columns and an
    empty A keep scale 1. The offset columns are left as they are."""
    scale = np.max(np.abs(A[:, :n_learners]), axis=0) if len(A) else np.ones(n_learners)
    scale = np.where(scale > 0, scale, 1.0)
    return np.hstack([A[:, :n_learners] / scale, A[:, n_learners:]]), scale


def max_margin_on_support(
    A: np.ndarray, n_learners: int, support: np.ndarray, *, seed: int = 0
) -> MasterSolution | None:
    """Weights on ``support`` that maximise the smallest normalised margin (columns
    scaled to max |a| = 1, weights summing to 1), rescaled so every row meets >= 1; None
    when no weighting of the support meets every row. Same support as the L0 solution,
    but weights in the middle of the feasible cone rather than at a vertex of it, so the
    candidate tends to hold on nearby inputs too (fewer separation rounds)."""
    try:
        mm, sol = margin_on_support(A, n_learners, support, seed=seed)
    except RuntimeError:
        return None
    return sol if mm.rho > 1e-9 else None


def margin_on_support(
    A: np.ndarray, n_learners: int, support: np.ndarray, *, seed: int = 0
) -> tuple[MarginSolution, MasterSolution]:
    """:func:`solve_max_margin` on the columns of ``support`` (normalised), and its
    weights as a master solution over all learners, rescaled by 1 / rho so every row
    meets >= 1 (meaningful only when rho > 0). The margin solution's duals price the
    columns outside the support (``Pace.grow_phase``). Raises RuntimeError as
    :func:`solve_max_margin` does."""
    support = np.asarray(support, np.int64)
    sub, scale = normalise_columns(np.hstack([A[:, support], A[:, n_learners:]]), len(support))
    mm = solve_max_margin(sub, len(support), seed=seed)
    rho = mm.rho if mm.rho > 0 else 1.0
    w = np.zeros(n_learners)
    w[support] = mm.weights / scale / rho
    sol = MasterSolution(
        w, mm.offsets / rho, float(np.sum(w > 0)), None, True, "max-margin weights"
    )
    return mm, sol


def solve_on_support(
    A: np.ndarray, n_learners: int, support: np.ndarray, *, seed: int = 0
) -> MasterSolution | None:
    """L1 weights restricted to ``support`` (other weights fixed to 0), or None when the
    rows cannot be met on that support. If an optimal L0 support stays feasible after rows
    are added, it is still optimal: adding rows never lowers the L0 optimum."""
    cols = np.r_[np.asarray(support, np.int64), np.arange(n_learners, A.shape[1])]
    try:
        sub = solve_l1(A[:, cols], len(support), seed=seed)
    except RuntimeError:
        return None
    w = np.zeros(n_learners)
    w[np.asarray(support, np.int64)] = sub.weights
    return MasterSolution(w, sub.offsets, float(np.sum(w > 0)), None, True, "support re-solve")


def meets_rows(A: np.ndarray, sol: MasterSolution, tol: float = 1e-4) -> bool:
    """Whether the solution's weights (as returned: zero off the support) and offsets
    meet every margin row A [w; beta] >= 1 up to ``tol``. A big-M MILP may fail this when
    a u_t below the integrality tolerance counted as 0 while w_t = u_t * M carried rows."""
    if len(A) == 0:
        return True
    x = np.r_[sol.weights, sol.offsets[1:]]
    return bool((A @ x).min() >= 1.0 - tol)


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
    h = new_highs(threads, seed, time_limit)
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
    h.run()
    st = h.getModelStatus()
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


_DOMINANCE_CELLS = 1 << 22  # booleans per comparison block in ``minimal_rows`` (4 MiB)
GUROBI_SIZE_LIMIT = 2000  # the pip licence's limit on variables and on constraints


def distinct_rows(A: np.ndarray) -> np.ndarray:
    """The rows of ``A`` without repeats, in first-seen order. Samples in different cells
    often reach the same leaf in every learner and give identical margin rows; problem P
    with one copy of each has the same feasible set (and fits the solver's size limits
    more often)."""
    if len(A) < 2:
        return A
    _, first = np.unique(A, axis=0, return_index=True)
    return A[np.sort(first)]


def minimal_rows(A: np.ndarray, n_learners: int) -> np.ndarray:
    """The rows of ``A`` that problem P needs, in first-seen order: each distinct row once,
    without the rows another row implies.

    Row ``a`` is implied by row ``b`` when their offset parts (columns ``n_learners:``)
    are equal and ``b``'s learner part is <= ``a``'s everywhere: for weights w >= 0 and any
    offsets, ``a.[w; beta] >= b.[w; beta]``, so ``b`` >= 1 (or >= rho, in the max-margin LP)
    gives ``a``'s constraint. Every dropped row is implied by a kept one, so the feasible
    set of P, and of any LP over w >= 0 on these rows, is unchanged. On the driver's
    depth-2 forests 55-70 % of the distinct rows go (diabetes RF 25: 541 -> 171).

    Rows are visited by increasing learner-part sum (an implying row never has a larger
    float sum: rounding is monotone), a chunk at a time, each checked against the kept
    rows and its own chunk; equal-sum ties across chunks may keep a redundant row, never
    drop a needed one."""
    D = distinct_rows(A)
    if len(D) < 2:
        return D
    T = n_learners
    chunk = max(16, int(np.sqrt(_DOMINANCE_CELLS / max(T, 1))))  # chunk^2 * T cells at most
    _, group = np.unique(D[:, T:], axis=0, return_inverse=True)
    keep = np.zeros(len(D), bool)
    for g in np.unique(group):
        idx = np.flatnonzero(group == g)
        W = D[idx, :T]
        order = np.argsort(W.sum(axis=1), kind="stable")
        kept: list[np.ndarray] = []  # blocks of kept rows, each at most ``chunk`` long
        for lo in range(0, len(order), chunk):
            part = order[lo : lo + chunk]
            C = W[part]
            out = np.zeros(len(C), bool)  # implied by a kept row
            for K in kept:
                out |= (K[None, :, :] <= C[:, None, :]).all(axis=2).any(axis=1)
            within = (C[None, :, :] <= C[:, None, :]).all(axis=2)  # [i, r]: C[r] <= C[i]
            np.fill_diagonal(within, False)  # distinct rows: r <= i and i <= r never both
            ok = ~out & ~within.any(axis=1)
            if ok.any():
                kept.append(C[ok])
            keep[idx[part[ok]]] = True
    return D[keep]


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
) -> MasterSolution:
    """Problem P on gurobipy (same formulation as :func:`solve_l0`).

    ``progress``: called every ``progress_seconds`` of the solve with its best support
    and lower bound so far (a long solve is not silent)."""
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
        m.optimize(None if progress is None else _gurobi_reporter(progress, progress_seconds))
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


def load_highs(h, M, cost, lower, upper, row_lo=None, row_hi=None) -> None:
    """Append columns (cost, bounds) and then the rows of dense M (row bounds; default
    [1, inf)) to HiGHS model h, M stored sparse."""
    n_rows, n_cols = M.shape
    h.addCols(
        n_cols,
        np.asarray(cost, float),
        np.asarray(lower, float),
        np.asarray(upper, float),
        0,
        np.zeros(n_cols, np.int32),
        np.zeros(0, np.int32),
        np.zeros(0),
    )
    if n_rows == 0:
        return
    nz_r, nz_c = np.nonzero(M)
    starts = np.searchsorted(nz_r, np.arange(n_rows)).astype(np.int32)
    h.addRows(
        n_rows,
        np.ones(n_rows) if row_lo is None else np.asarray(row_lo, float),
        np.full(n_rows, INF) if row_hi is None else np.asarray(row_hi, float),
        len(nz_c),
        starts,
        nz_c.astype(np.int32),
        M[nz_r, nz_c].astype(float),
    )
