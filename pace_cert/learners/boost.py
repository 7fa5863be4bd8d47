"""L0-oriented column generation: totally corrective hard-margin boosting (LPBoost).

The L1 column generation prices learners for the L1 value, and the L0 master can only
choose among the learners it is given; neither aims at a *small* support. This module
builds one support greedily instead: solve the max-margin LP (weights sum to 1, columns
scaled to max |a| = 1) on the active learners, then add the learner with the largest
``v . a`` under the LP's row duals ``v`` — an original or earlier generated tree from the
pool, or a new tree priced exactly (stumps, depth 2) or heuristically (deeper) with the
same gains as the L1 pricing — until the smallest margin rho is positive, i.e. the
support meets every margin row after scaling by 1/rho, or the size budget is spent.

It only proposes weights on samples; the driver certifies the result with the oracle
like any other master solution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pace_cert.learners import pricing
from pace_cert.learners.pool import leaf_values
from pace_cert.master.max_margin import solve_max_margin
from pace_cert.master.rows import margin_rows
from pace_cert.model.ensemble import Tree
from pace_cert.plumbing.budget import Budget
from pace_cert.region.domain import FeatureDomain

TOL = 1e-9


@dataclass(frozen=True)
class BoostResult:
    new_trees: list[Tree]  # new trees with a nonzero weight, to append to the pool in order
    weights: np.ndarray  # over pool + new_trees, in the L1 row scale (A [w; beta] >= 1)
    offsets: np.ndarray  # [K], offsets[0] = 0
    support: int  # learners with a nonzero weight
    feasible: bool  # every margin row met (rho > 0); else weights are the last LP's


def _new_column(X, y0, v, domain, depth, n_classes, seed, n_candidates) -> Tree | None:
    """The best new tree for row duals ``v`` (as L1 pricing does for its duals)."""
    cands, _ = pricing.price_all(X, y0, v, domain, depth, n_classes, seed, n_candidates)
    return cands[0].tree if cands else None


def boost(
    X: np.ndarray,
    y0: np.ndarray,
    pool: list[Tree],
    domain: FeatureDomain,
    depth: int,
    n_classes: int,
    max_size: int,
    *,
    start: int | None = None,
    seed: int = 0,
    n_candidates: int = 4,
    max_iter: int | None = None,
    budget: Budget | None = None,
    pool_cols: np.ndarray | None = None,
) -> BoostResult | None:
    """Grow a support until every margin row is met, at most ``max_iter`` columns.

    ``X`` float32 samples with original labels ``y0``; ``pool`` the learners available
    (their order is kept; new trees are appended after them); ``start`` an optional
    pool index to begin with (restarts from different learners find different
    supports). The result is ``feasible`` when rho > 0 was reached; the caller compares
    its ``support`` with ``max_size``. None when no column could be added at all.
    """

    if len(X) == 0 or max_size < 1:
        return None
    K = n_classes
    beta = margin_rows(np.zeros((len(X), 0, K)), y0)  # offset columns only

    def column(tree: Tree) -> np.ndarray:
        return margin_rows(leaf_values([tree], X), y0)[:, 0]

    if pool_cols is None:
        pool_cols = margin_rows(leaf_values(pool, X), y0)[:, : len(pool)]
    cols = list(pool_cols.T)
    scale = [float(np.max(np.abs(c))) for c in cols]
    new: list[Tree] = []
    active: list[int] = []
    n_rows = len(beta)
    v = np.full(n_rows, 1.0 / n_rows)
    gamma = -np.inf
    sol = None
    for it in range(max_iter or 2 * max_size + 4):
        if budget is not None and budget.expired():
            break
        if it == 0 and start is not None and scale[start] > 0:
            active.append(start)
        else:  # the best pool column and the best new tree under v
            P = np.array([v @ c / s if s > 0 else -np.inf for c, s in zip(cols, scale)])
            P[active] = -np.inf
            cand = _new_column(X, y0, v, domain, depth, K, seed + it, n_candidates)
            cand_val = -np.inf
            if cand is not None:
                cc = column(cand)
                cs = float(np.max(np.abs(cc)))
                cand_val = v @ cc / cs if cs > 0 else -np.inf
            best_pool = int(np.argmax(P)) if len(P) else -1
            pool_val = P[best_pool] if len(P) else -np.inf
            if max(pool_val, cand_val) <= gamma + TOL:
                break  # no learner raises the margin
            if cand_val > pool_val + TOL:
                new.append(cand)
                cols.append(cc)
                scale.append(cs)
                active.append(len(cols) - 1)
            else:
                active.append(best_pool)
        A = np.hstack([np.stack([cols[j] / scale[j] for j in active], axis=1), beta])
        sol = solve_max_margin(A, len(active), budget=budget, seed=seed)
        v, gamma = sol.duals, sol.gamma
        if sol.rho > TOL:
            break
    if sol is None:
        return None
    feasible = sol.rho > TOL
    w = np.zeros(len(cols))
    for j, wj in zip(active, sol.weights):
        if wj > TOL * max(1.0, sol.weights.max()):
            w[j] += wj / scale[j] / (sol.rho if feasible else 1.0)
    used_new = [i for i in range(len(new)) if w[len(pool) + i] > 0]  # drop unused new trees
    w = np.r_[w[: len(pool)], w[len(pool) :][used_new]]
    offsets = sol.offsets / (sol.rho if feasible else 1.0)
    return BoostResult([new[i] for i in used_new], w, offsets, int(np.sum(w > 0)), feasible)
