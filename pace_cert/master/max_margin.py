"""The hard-margin LP on normalised columns (weights sum to 1, maximise the smallest
margin rho): robust weights on a given support, and duals that price columns outside it."""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np

from pace_cert.master.highs import INF, OutOfTime, load_highs, new_highs, run_highs, solve_optimal
from pace_cert.master.rows import MasterSolution, normalise_columns
from pace_cert.plumbing.budget import Budget


@dataclass(frozen=True)
class MarginSolution:
    """Hard-margin LP on normalised columns: weights sum to 1, rho = smallest margin."""

    weights: np.ndarray  # [n_learners] >= 0, sum 1 (in the normalised column scale)
    offsets: np.ndarray  # [K], offsets[0] = 0
    rho: float
    duals: np.ndarray  # row duals v >= 0, sum 1
    gamma: float  # dual of sum w = 1: a column improves iff v . a > gamma


def solve_max_margin(
    A: np.ndarray,
    n_learners: int,
    *,
    budget: Budget | None = None,
    offset_bound: float = 4.0,
    seed: int = 0,
) -> MarginSolution:
    """max rho  s.t.  A [w; beta] >= rho,  sum w = 1,  w >= 0,  |beta| <= offset_bound.

    Columns should be scaled to max |a| = 1 (then offsets beyond a few units never help;
    the bound keeps the LP bounded when a single class is present). rho > 0 means the
    support of w meets every margin row after scaling by 1/rho. Solved within
    ``budget`` (:class:`~pace_cert.master.highs.OutOfTime` when it runs out).
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
    solve_optimal(h, budget, "max-margin LP")
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


def max_margin_on_support(
    A: np.ndarray,
    n_learners: int,
    support: np.ndarray,
    *,
    budget: Budget | None = None,
    seed: int = 0,
) -> MasterSolution | None:
    """Weights on ``support`` that maximise the smallest normalised margin (columns
    scaled to max |a| = 1, weights summing to 1), rescaled so every row meets >= 1; None
    when no weighting of the support meets every row. Same support as the L0 solution,
    but weights in the middle of the feasible cone rather than at a vertex of it, so the
    candidate tends to hold on nearby inputs too (fewer separation rounds). Raises
    :class:`~pace_cert.master.highs.OutOfTime` when ``budget`` runs out."""
    try:
        mm, sol = margin_on_support(A, n_learners, support, budget=budget, seed=seed)
    except OutOfTime:
        raise
    except RuntimeError:
        return None
    return sol if mm.rho > 1e-9 else None


def margin_on_support(
    A: np.ndarray,
    n_learners: int,
    support: np.ndarray,
    *,
    budget: Budget | None = None,
    seed: int = 0,
) -> tuple[MarginSolution, MasterSolution]:
    """:func:`solve_max_margin` on the columns of ``support`` (normalised), and its
    weights as a master solution over all learners, rescaled by 1 / rho so every row
    meets >= 1 (meaningful only when rho > 0). The margin solution's duals price the
    columns outside the support (column growth, ``pace_cert/driver/phases/grow.py``).
    Raises RuntimeError as :func:`solve_max_margin` does."""
    support = np.asarray(support, np.int64)
    sub, scale = normalise_columns(np.hstack([A[:, support], A[:, n_learners:]]), len(support))
    mm = solve_max_margin(sub, len(support), budget=budget, seed=seed)
    rho = mm.rho if mm.rho > 0 else 1.0
    w = np.zeros(n_learners)
    w[support] = mm.weights / scale / rho
    sol = MasterSolution(
        w, mm.offsets / rho, float(np.sum(w > 0)), None, True, "max-margin weights"
    )
    return mm, sol


def max_margin_in_box(
    A: np.ndarray,
    fixed: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    budget: Budget | None = None,
    seed: int = 0,
) -> tuple[np.ndarray, float] | None:
    """max rho  s.t.  A w + fixed >= rho,  lower <= w <= upper (per column of ``A``):
    weights kept within a box (e.g. around weights known to be faithful), the rows'
    constant parts in ``fixed``. Returns (w, rho), or None when HiGHS does not solve it
    within ``budget``."""
    h = new_highs(1, seed)
    n_rows, n_cols = A.shape
    if n_rows == 0:
        return np.asarray(lower, float).copy(), np.inf
    cost = np.r_[np.zeros(n_cols), -1.0]
    M = np.hstack([A, -np.ones((n_rows, 1))])
    load_highs(
        h,
        M,
        cost,
        np.r_[lower, -INF],
        np.r_[upper, INF],
        -np.asarray(fixed, float),
        np.full(n_rows, INF),
    )
    if run_highs(h, budget) != highspy.HighsModelStatus.kOptimal:
        return None
    x = np.asarray(h.getSolution().col_value)
    return np.clip(x[:n_cols], lower, upper), float(x[-1])
