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

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model

#: float64 unit round-off
_U = 2.0**-53
#: the smallest normal float64: below it a product's rounding error is absolute
_TINY = float(np.finfo(np.float64).tiny)


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
    """Why a combo is malformed (None: it is a weighted closed walk over the classes).
    NaN is never a weight: the test is written so that it fails."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        return f"a combo weight is {weight!r} (must be a number)"
    if not (math.isfinite(weight) and weight >= 0):
        return f"a combo weight is {weight} (must be finite and >= 0)"
    if not rows:
        return "a combo has no rows"
    balance = np.zeros(K, np.int64)
    for row in rows:
        if len(row) != 2 or not all(_is_int(v) for v in row):
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


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def tree_coefficients(
    H: np.ndarray, y0: np.ndarray, combos: Sequence[tuple[Sequence[Sequence[int]], float]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(g, err, trusted, D-rows): g_t = sum over combo rows of weight * (h_t,y0 - h_t,k)
    in float64; err_t bounds |g_t (float64) - g_t (exact)| where ``trusted[t]``; the row
    arrays (point, class, weight) for an exact re-addition.

    The bound is the textbook one for rounding to nearest *without underflow or
    overflow*. ``trusted[t]`` is False when that assumption may fail for tree t: a
    non-finite value anywhere (overflow, inf - inf = NaN), or a product that is not 0
    because a factor is 0 but lies below the smallest normal float64 (an underflowed or
    subnormal term, whose rounding error is absolute, not relative). Untrusted trees are
    re-added exactly (:func:`exact_coefficient`)."""
    pi = np.array([int(r[0]) for rows, _w in combos for r in rows], np.int64)
    pk = np.array([int(r[1]) for rows, _w in combos for r in rows], np.int64)
    pw = np.array([float(w) for rows, w in combos for _r in rows])
    T = H.shape[1]
    if len(pi) == 0:
        return np.zeros(T), np.zeros(T), np.ones(T, bool), np.zeros((0, 3))
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        D = H[pi, :, y0[pi]] - H[pi, :, pk]  # [rows, T]: each entry rounded once
        terms = pw[:, None] * D
        g = terms.sum(axis=0)
        # subtraction, product and a sum of m terms: each error <= u * |result| per
        # operation, so |error| <= (m + 2) u sum |terms| to first order; 1.01 covers the
        # rest
        err = 1.01 * (len(pi) + 2) * _U * np.abs(terms).sum(axis=0)
        normal = (np.abs(terms) >= _TINY) | (pw[:, None] == 0) | (D == 0)
    trusted = (
        (np.isfinite(terms) & np.isfinite(D) & normal).all(axis=0)
        & np.isfinite(g)
        & np.isfinite(err)
    )
    return g, err, trusted, np.stack([pi, pk, pw], axis=1)


def exact_coefficient(H: np.ndarray, y0: np.ndarray, rows: np.ndarray, t: int) -> Fraction | None:
    """g_t added in rationals (every finite float64 is a rational); None when a value
    is not finite (no rational: the caller must not conclude g_t <= 0)."""
    total = Fraction(0)
    for i, k, w in rows:
        i, k = int(i), int(k)
        if w == 0:
            continue
        a, b = float(H[i, t, y0[i]]), float(H[i, t, k])
        if not (math.isfinite(w) and math.isfinite(a) and math.isfinite(b)):
            return None
        total += Fraction(float(w)) * (Fraction(a) - Fraction(b))
    return total


def positive_trees(H: np.ndarray, y0: np.ndarray, combos) -> list[int]:
    """The trees whose coefficient g_t is not proved <= 0 by ``combos`` ((rows, weight)
    pairs): a faithful pruning keeps one of them (when the combos are well formed).
    float64 decides a tree only when its rounding bound is trusted and settles the sign;
    every other tree is decided in rationals, and a value with no rational (inf, NaN)
    never proves g_t <= 0."""
    g, err, trusted, rows = tree_coefficients(H, y0, combos)
    out = []
    for t in range(H.shape[1]):
        if trusted[t] and g[t] - err[t] > 0:
            out.append(t)
        elif trusted[t] and g[t] + err[t] <= 0:
            continue
        else:
            exact = exact_coefficient(H, y0, rows, t)
            if exact is None or exact > 0:
                out.append(t)
    return out


def cut_problem(H: np.ndarray, y0: np.ndarray, keep_one_of: Sequence[int], combos) -> str | None:
    """Why a cut does not prove "one of ``keep_one_of`` stays" (None: it does).
    ``combos``: (rows, weight) pairs."""
    T, K = H.shape[1], H.shape[2]
    if not all(_is_int(t) for t in keep_one_of):
        return "a cut's keep_one_of must list tree indices"
    keep = {int(t) for t in keep_one_of}
    if any(not (0 <= t < T) for t in keep):
        return "a cut names a tree the original does not have"
    if not keep:
        return (
            "a cut keeps none of the trees (no pruning at all could meet its rows, yet "
            "the original meets every region point)"
        )
    if not combos:
        return "a cut has no combos"
    for rows, w in combos:
        if why := combo_problem(rows, w, y0, K):
            return why
    if not any(w > 0 for _r, w in combos):
        return "a cut's combo weights are all 0"
    outside = [t for t in positive_trees(H, y0, combos) if t not in keep]
    if outside:
        return (
            f"tree {outside[0]} is outside the cut but its multiplied rows do not add up "
            "to <= 0: its weight could meet them"
        )
    return None


def bound_shape_problem(bound, n_features: int) -> str | None:
    """Why ``bound``'s lists cannot be read (None: every point has ``n_features``
    finite float32 values, one label each, every cut lists tree indices and combos of
    [point, class] rows): checked before any arithmetic."""
    if len(bound.labels) != len(bound.points):
        return f"{len(bound.labels)} labels for {len(bound.points)} points (one label per point)"
    for i, x in enumerate(bound.points):
        if not isinstance(x, (list, tuple)) or len(x) != n_features:
            return f"point {i} does not have {n_features} values"
        if not all(isinstance(v, float | int) and not isinstance(v, bool) for v in x):
            return f"point {i} holds a value that is not a number"
        if not all(math.isfinite(v) for v in x):
            return f"point {i} holds a value that is not finite"
    for j, cut in enumerate(bound.cuts):
        if not all(_is_int(t) for t in cut.keep_one_of):
            return f"cut {j}: keep_one_of must list tree indices"
        for combo in cut.combos:
            if any(len(r) != 2 or not all(_is_int(v) for v in r) for r in combo.rows):
                return f"cut {j}: a combo row is not [point, class]"
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
    if not _is_int(bound.value) or not (0 <= bound.value <= T):
        return BoundCheck("refuted", f"pruning bound {bound.value} is outside [0, {T}]")
    if why := bound_shape_problem(bound, original.n_features):
        return BoundCheck("refuted", f"pruning bound: summary.pruning_bound: {why}")
    X = np.array(bound.points, np.float64).reshape(len(bound.points), original.n_features)
    with np.errstate(over="ignore"):
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


def meets_rows_exactly(
    H: np.ndarray, y0: np.ndarray, support: Sequence[int], w: np.ndarray, beta: np.ndarray
) -> bool:
    """Whether the pruning that keeps ``support`` with weights ``w`` (>= 0, one per tree
    of ``support``) and class offsets ``beta`` gives every point its label ``y0`` with
    a positive margin: ``sum_t w_t (h_t,y0 - h_t,k) + beta_y0 - beta_k > 0`` for every
    other class k, decided in float64 where its rounding bound settles the sign and in
    rationals elsewhere (NaN or inf anywhere: no)."""
    S = np.asarray(support, np.int64)
    w, beta = np.asarray(w, np.float64), np.asarray(beta, np.float64)
    if len(w) != len(S) or not (np.isfinite(w).all() and np.isfinite(beta).all()):
        return False
    if not (np.all(w >= 0) and np.isfinite(H[:, S, :]).all()):
        return False
    K = H.shape[2]
    for k in range(K):
        rows = np.flatnonzero(y0 != k)
        if not len(rows):
            continue
        D = H[rows[:, None], S[None, :], y0[rows, None]] - H[rows[:, None], S[None, :], k]
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            prod = D * w[None, :]
            offsets = np.stack([beta[y0[rows]], np.full(len(rows), -beta[k])], axis=1)
            terms = np.hstack([prod, offsets])
            v = terms.sum(axis=1)
            err = 1.01 * (terms.shape[1] + 2) * _U * np.abs(terms).sum(axis=1)
            # no product underflowed (else its error is absolute, not relative)
            normal = ((np.abs(prod) >= _TINY) | (D == 0) | (w[None, :] == 0)).all(axis=1)
        ok = np.isfinite(terms).all(axis=1) & np.isfinite(v) & np.isfinite(err) & normal
        ok &= v - err > 0
        for r in np.flatnonzero(~ok):
            i = int(rows[r])
            exact = Fraction(float(beta[y0[i]])) - Fraction(float(beta[k]))
            for j, t in enumerate(S):
                exact += Fraction(float(w[j])) * (
                    Fraction(float(H[i, t, y0[i]])) - Fraction(float(H[i, t, k]))
                )
            if not exact > 0:
                return False
    return True
