"""Re-checking a certificate's pruning lower bound from the original model alone.

The claim (``summary.pruning_bound``): every *pruning* of the original -- a model that
keeps a subset of its trees, scales each kept tree's leaf values by a factor >= 0 and
adds any per-class offsets -- that gives every stated point the original's label with a
positive margin keeps at least ``value`` trees. Every model faithful in the region is
faithful at the points (they lie in it), so no faithful pruning is smaller.

Why it holds, and what is re-checked here:

1. *The points.* Each is float32, lies in the region (the same masks as every other
   region check: domain, original margin > c_o, plausibility) and has the stated label.
2. *The cuts.* Write a margin row r = (point i, class k != y0(i)) as
   ``sum_t w_t (h_t,y0(x_i) - h_t,k(x_i)) + beta_y0 - beta_k > 0``. A combo is a set of
   rows whose (y0, k) edges form a closed walk over the classes, so its beta terms cancel
   when the rows are added. With combo weights lambda >= 0 (not all 0), adding the rows
   gives ``sum_t w_t g_t > 0`` with ``g_t = sum lambda * (h_t,y0 - h_t,k)``. If every tree t
   outside ``keep_one_of`` has ``g_t <= 0``, no w >= 0 supported there satisfies the sum:
   every faithful pruning keeps one tree of ``keep_one_of`` (Farkas' lemma, the easy
   direction: only addition is used). ``g_t`` is added in float64 with a rigorous
   rounding bound, and exactly (rationals) wherever that bound does not decide the sign.
3. *The bound.* A faithful pruning's trees hit every cut, so it has at least as many
   trees as the smallest hitting set; CP-SAT proves (INFEASIBLE) that no set of
   ``value - 1`` trees hits every cut.

Imports no compressor code (SPEC section 7): the verifier's own ensemble and region.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model

#: float64 unit round-off
_U = 2.0**-53


@dataclass(frozen=True)
class BoundCheck:
    """The outcome of re-checking a pruning bound: ``status`` checked (every part
    re-proved), refuted (a part is false) or unknown (CP-SAT did not decide the
    hitting-set bound in time); ``text`` says which part and why."""

    status: str
    text: str


def leaf_table(trees: Sequence, X: np.ndarray) -> np.ndarray:
    """H[i, t, k]: tree t's leaf value for class k at float32 row i (float64, exact)."""
    from pace_cert.model.ensemble import FlatForest

    X = np.asarray(X, np.float32)
    K = trees[0].value.shape[1]
    H = np.zeros((len(X), len(trees), K))
    if len(X):
        leaves = FlatForest.of(trees).apply(X)
        for t, tr in enumerate(trees):
            H[:, t, :] = tr.value[leaves[:, t]]
    return H


def combo_problem(
    rows: Sequence[Sequence[int]], weight: float, y0: np.ndarray, K: int
) -> str | None:
    """Why a combo is malformed (None: it is a weighted closed walk over the classes)."""
    if not np.isfinite(weight) or weight < 0:
        return f"a combo weight is {weight} (must be finite and >= 0)"
    if not rows:
        return "a combo has no rows"
    balance = np.zeros(K, np.int64)
    for row in rows:
        if len(row) != 2:
            return f"a combo row {list(row)} is not [point, class]"
        i, k = int(row[0]), int(row[1])
        if not (0 <= i < len(y0)) or not (0 <= k < K):
            return f"a combo row [{i}, {k}] names no point or class"
        if k == y0[i]:
            return f"a combo row [{i}, {k}] compares point {i}'s label with itself"
        balance[y0[i]] += 1
        balance[k] -= 1
    if balance.any():
        return "a combo's rows are not a closed walk over the classes (offsets do not cancel)"
    return None


def tree_coefficients(
    H: np.ndarray, y0: np.ndarray, combos: Sequence[tuple[Sequence[Sequence[int]], float]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(g, err, D-rows): g_t = sum over combo rows of weight * (h_t,y0 - h_t,k) in
    float64 and err_t, a bound on |g_t (float64) - g_t (exact)|; also the row arrays
    (point, class, weight) for an exact re-addition."""
    pi = np.array([int(r[0]) for rows, _w in combos for r in rows], np.int64)
    pk = np.array([int(r[1]) for rows, _w in combos for r in rows], np.int64)
    pw = np.array([float(w) for rows, w in combos for _r in rows])
    if len(pi) == 0:
        T = H.shape[1]
        return np.zeros(T), np.zeros(T), np.zeros((0, 3))
    D = H[pi, :, y0[pi]] - H[pi, :, pk]  # [rows, T]: each entry rounded once
    terms = pw[:, None] * D
    g = terms.sum(axis=0)
    # subtraction, product and a sum of m terms: each error <= u * |result| per
    # operation, so |error| <= (m + 2) u sum |terms| to first order; 1.01 covers the rest
    err = 1.01 * (len(pi) + 2) * _U * np.abs(terms).sum(axis=0)
    return g, err, np.stack([pi, pk, pw], axis=1)


def exact_coefficient(H: np.ndarray, y0: np.ndarray, rows: np.ndarray, t: int) -> Fraction:
    """g_t added in rationals (every float64 is a rational)."""
    total = Fraction(0)
    for i, k, w in rows:
        i, k = int(i), int(k)
        if w == 0:
            continue
        total += Fraction(float(w)) * (
            Fraction(float(H[i, t, y0[i]])) - Fraction(float(H[i, t, k]))
        )
    return total


def positive_trees(H: np.ndarray, y0: np.ndarray, combos) -> list[int]:
    """The trees whose coefficient g_t is not proved <= 0 by ``combos`` ((rows, weight)
    pairs): a faithful pruning keeps one of them (when the combos are well formed)."""
    g, err, rows = tree_coefficients(H, y0, combos)
    return [
        t
        for t in range(H.shape[1])
        if g[t] + err[t] > 0 and (g[t] - err[t] > 0 or exact_coefficient(H, y0, rows, t) > 0)
    ]


def cut_problem(H: np.ndarray, y0: np.ndarray, keep_one_of: Sequence[int], combos) -> str | None:
    """Why a cut does not prove "one of ``keep_one_of`` stays" (None: it does).
    ``combos``: (rows, weight) pairs."""
    T, K = H.shape[1], H.shape[2]
    keep = {int(t) for t in keep_one_of}
    if any(not (0 <= t < T) for t in keep):
        return "a cut names a tree the original does not have"
    if not combos:
        return "a cut has no combos"
    for rows, w in combos:
        if why := combo_problem(rows, w, y0, K):
            return why
    if sum(float(w) for _r, w in combos) <= 0:
        return "a cut's combo weights are all 0"
    outside = [t for t in positive_trees(H, y0, combos) if t not in keep]
    if outside:
        return (
            f"tree {outside[0]} is outside the cut but its multiplied rows do not add up "
            "to <= 0: its weight could meet them"
        )
    return None


def hitting_bound(
    n_trees: int, cuts: Sequence[Sequence[int]], value: int, time_limit: float | None
) -> str:
    """Whether every set of trees meeting every cut has at least ``value`` trees:
    "proved" (CP-SAT INFEASIBLE for value - 1), "refuted" (a smaller set meets them)
    or "unknown" (undecided in ``time_limit`` seconds)."""
    if value <= 0:
        return "proved"
    m = cp_model.CpModel()
    x = [m.new_bool_var(f"x{t}") for t in range(n_trees)]
    m.add(sum(x) <= value - 1)
    for c in cuts:
        m.add_bool_or([x[int(t)] for t in c])
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.random_seed = 0
    if time_limit is not None:
        s.parameters.max_time_in_seconds = max(float(time_limit), 0.1)
    st = s.solve(m)
    if st == cp_model.INFEASIBLE:
        return "proved"
    if st in (cp_model.FEASIBLE, cp_model.OPTIMAL):
        return "refuted"
    return "unknown"


def check_pruning_bound(
    original,
    in_region: Callable[[np.ndarray], np.ndarray],
    bound,
    label_of: Callable[[int], object],
    time_limit: float | None = None,
) -> BoundCheck:
    """Re-check ``bound`` (a certificate's ``PruningBound``) against ``original`` (the
    verifier's own ensemble). ``in_region(X)``: region membership of float32 rows;
    ``label_of(k)``: class index k's label as the certificate writes it."""
    T = original.n_trees
    n = f"no faithful pruning of the original has fewer than {bound.value} trees"
    if not (0 <= bound.value <= T):
        return BoundCheck("refuted", f"pruning bound {bound.value} is outside [0, {T}]")
    if len(bound.labels) != len(bound.points):
        return BoundCheck("refuted", "pruning bound: one label per point is needed")
    X = np.array(bound.points, np.float64).reshape(len(bound.points), original.n_features)
    X32 = X.astype(np.float32)
    if len(X) and not np.array_equal(X32.astype(np.float64), X):
        return BoundCheck("refuted", "pruning bound: a point is not float32")
    if len(X) and not np.all(inside := in_region(X32)):
        i = int(np.flatnonzero(~inside)[0])
        return BoundCheck("refuted", f"pruning bound: point {i} is outside the region")
    y0 = original.predict_index(X32) if len(X) else np.zeros(0, np.int64)
    for i, (k, lab) in enumerate(zip(y0, bound.labels)):
        if label_of(int(k)) != lab:
            return BoundCheck(
                "refuted",
                f"pruning bound: the original labels point {i} {label_of(int(k))!r}, not {lab!r}",
            )
    H = leaf_table(original.trees, X32)
    for j, cut in enumerate(bound.cuts):
        combos = [(c.rows, c.weight) for c in cut.combos]
        if why := cut_problem(H, y0, cut.keep_one_of, combos):
            return BoundCheck("refuted", f"pruning bound: cut {j}: {why}")
    status = hitting_bound(T, [c.keep_one_of for c in bound.cuts], bound.value, time_limit)
    if status == "refuted":
        return BoundCheck(
            "refuted",
            f"pruning bound: {bound.value - 1} trees meet every cut, so the cuts "
            f"do not prove {bound.value}",
        )
    if status == "unknown":
        return BoundCheck("unknown", f"pruning bound: CP-SAT did not decide in time ({n})")
    return BoundCheck(
        "checked",
        f"{n}: {len(bound.points)} region points, {len(bound.cuts)} cuts "
        "re-added exactly, CP-SAT INFEASIBLE for fewer trees",
    )
