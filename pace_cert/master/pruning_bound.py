"""A lower bound on the size of every faithful pruning, with a certificate verify re-checks.

A *pruning* keeps a subset S of the original trees, scales each kept tree's leaf values
by a weight w_t >= 0 and adds class offsets beta. It is faithful at a point x with
original label y0 when ``sum_t w_t (h_t,y0(x) - h_t,k(x)) + beta_y0 - beta_k > 0`` for
every other class k (a margin row). Given region points, the smallest S for which some
(w, beta) meets every row bounds every faithful pruning from below.

Combinatorial Benders, as in :mod:`pace_cert.master.l0_cover`, but with a certificate:

* master: the smallest set of trees hitting every cut so far (CP-SAT);
* subproblem: for the master's S, the LP ``max eps  s.t.  y >= 0, sum y = 1,
  sum_r y_r (e_y0 - e_k) = 0, sum_r y_r a_rt + eps <= 0 (t in S)`` on HiGHS. eps >= 0
  means no (w, beta) on S meets the rows (Farkas), and y is the proof: decomposed into
  closed walks over the classes (so beta cancels exactly), the trees whose multiplied
  rows are re-added to <= 0 (float64 with a rounding bound, else in rationals:
  :mod:`pace_cert.cert.pruning_check`, the code verify runs) can all be dropped
  together, and every faithful pruning keeps one of the others: a cut.
* cuts are strengthened by growing S while the LP stays infeasible.
* a tie (eps = 0: S could meet the rows only with margin exactly 0, so no faithful
  weights exist on it) leaves float multipliers that put a tree of S at +1e-12 when
  re-added exactly; then the walks that re-check one by one are kept, or else exact
  rational weights over the LP's walks are found
  (:mod:`pace_cert.master.exact_farkas`). Without this the loop stopped at the first
  tie (diabetes RF 25 on a 20 s run's points: bound 4, the minimum on the points 6;
  now 6, proved exact).

The bound is the master's optimum when it stops (or its proved lower bound at the
time limit); when weights on the master's S are found that meet every row with a
positive margin re-checked exactly (:func:`strictly_met`), that optimum is exact on the
points (``meets``). An LP that merely fails to prove S infeasible proves nothing.
A cut only enters the master after the same check verify runs has passed, so every
stated bound re-checks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import highspy
import numpy as np
from ortools.sat.python import cp_model

from pace_cert.cert.pruning_check import hitting_bound, meets_rows_exactly, positive_trees
from pace_cert.master.exact_farkas import exact_tie_combos
from pace_cert.master.highs import INF, OutOfTime, load_highs, new_highs, run_highs
from pace_cert.plumbing.budget import Budget

#: edges of a circulation below this share of the largest are dropped (LP noise)
FLOW_TOL = 1e-11
#: the LP's eps must be at least this (columns scaled to max |a| = 1) to call S infeasible
EPS_INFEASIBLE = -1e-10
#: LP re-solves spent on growing one cut
GROW_TRIES = 8


@dataclass(frozen=True)
class Cut:
    """``keep_one_of``: tree indices, one of which every faithful pruning keeps;
    ``combos``: (rows, weight) with rows as (point, other class) pairs."""

    keep_one_of: tuple[int, ...]
    combos: tuple[tuple[tuple[tuple[int, int], ...], float], ...]


@dataclass
class BoundResult:
    """``value``: no pruning of fewer trees meets every point; ``cuts`` prove it;
    ``meets``: the size of a support with weights shown (exactly) to meet every point
    with a positive margin (the bound is the
    minimum on the points when equal); ``points``: indices of the points the cuts use;
    ``upper``: the fewest trees of any support shown (exactly) to meet every point, a
    greedy superset's included (the minimum on the points lies in [value, upper])."""

    value: int
    cuts: list[Cut]
    meets: int | None
    seconds: float
    lp_solves: int = 0
    master_solves: int = 0
    points: list[int] = field(default_factory=list)
    upper: int | None = None


def margin_row_index(y0: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray]:
    """(point, other class) of every margin row, point-major."""
    other = np.ones((len(y0), K), bool)
    other[np.arange(len(y0)), y0] = False
    return np.nonzero(other)


def circulation_combos(
    flow: np.ndarray, src: np.ndarray, dst: np.ndarray
) -> list[tuple[list[int], float]]:
    """Decompose an (almost) balanced flow on class edges src -> dst into closed walks:
    (edge indices, weight) pairs. Edges below ``FLOW_TOL`` of the largest, and flow
    stranded by rounding, are dropped (the re-check decides what the walks prove)."""
    f = np.asarray(flow, float).copy()
    if not len(f) or f.max() <= 0:
        return []
    f[f < FLOW_TOL * f.max()] = 0.0
    out: dict[int, list[int]] = {}
    for e in np.flatnonzero(f > 0):
        out.setdefault(int(src[e]), []).append(int(e))
    combos = []
    while True:
        live = np.flatnonzero(f > 0)
        if not len(live):
            return combos
        e0 = int(live[np.argmax(f[live])])
        path, seen = [e0], {int(src[e0]): 0, int(dst[e0]): 1}
        node = int(dst[e0])
        cycle = None
        while cycle is None:
            nxt = [e for e in out.get(node, []) if f[e] > 0]
            if not nxt:
                break
            e = max(nxt, key=lambda j: f[j])
            path.append(e)
            node = int(dst[e])
            if node in seen:
                cycle = path[seen[node] :]
            else:
                seen[node] = len(path)
        if cycle is None:  # stranded by rounding: drop the first edge's flow
            f[e0] = 0.0
            continue
        lam = float(min(f[e] for e in cycle))
        for e in cycle:
            f[e] -= lam
            if f[e] <= FLOW_TOL * lam:
                f[e] = 0.0
        combos.append((list(cycle), lam))


class _FarkasLP:
    """The subproblem's LP over row multipliers y, one HiGHS instance: a support
    change only changes the bounds of the tree rows."""

    def __init__(self, An: np.ndarray, yi: np.ndarray, ki: np.ndarray, K: int, seed: int):
        R, T = An.shape
        self.T = T
        h = new_highs(1, seed)
        cost = np.r_[np.zeros(R), -1.0]  # minimise -eps
        lower = np.r_[np.zeros(R), -INF]
        upper = np.r_[np.full(R, INF), 1.0]
        bal = np.zeros((K - 1, R))
        r = np.arange(R)
        bal[yi[yi > 0] - 1, r[yi > 0]] += 1.0
        bal[ki[ki > 0] - 1, r[ki > 0]] -= 1.0
        M = np.vstack([
            np.r_[np.ones(R), 0.0][None, :],
            np.hstack([bal, np.zeros((K - 1, 1))]),
            np.hstack([An.T, np.ones((T, 1))]),
        ])  # fmt: skip
        lo = np.r_[1.0, np.zeros(K - 1), np.full(T, -INF)]
        hi = np.r_[1.0, np.zeros(K - 1), np.full(T, INF)]
        load_highs(h, M, cost, lower, upper, lo, hi)
        self.h, self.R, self.first = h, R, K
        self.on = np.zeros(T, bool)
        self.solves = 0

    def solve(self, support: np.ndarray, budget: Budget) -> tuple[float, np.ndarray] | None:
        """(eps, y) for ``support``, solved within ``budget``; None when no multipliers
        exist (the offsets alone meet the rows, or HiGHS gave no optimum);
        :class:`~pace_cert.master.highs.OutOfTime` when the budget stopped the solve
        (which says nothing about the support)."""
        on = np.zeros(self.T, bool)
        on[np.asarray(support, np.int64)] = True
        ch = np.flatnonzero(on != self.on)
        if len(ch):
            rows = (self.first + ch).astype(np.int32)
            hi = np.where(on[ch], 0.0, INF)
            self.h.changeRowsBounds(len(rows), rows, np.full(len(rows), -INF), hi)
            self.on = on
        st = run_highs(self.h, budget)
        self.solves += 1
        if st == highspy.HighsModelStatus.kTimeLimit:
            raise OutOfTime("pruning bound's Farkas LP: the time limit stopped HiGHS")
        if st != highspy.HighsModelStatus.kOptimal:
            return None
        x = np.asarray(self.h.getSolution().col_value)
        return float(x[-1]), np.maximum(x[: self.R], 0.0)


@dataclass(frozen=True)
class Aimed:
    """What an :data:`Aim` found for a support: ``H`` [m, T, K] and ``y0`` [m] at new
    region points (each in the region by the masks verify uses, labelled by the
    original), and ``faithful``: some weights on the support were certified faithful in
    the whole region (CP-SAT proved every label pair)."""

    H: np.ndarray
    y0: np.ndarray
    faithful: bool


#: ``aim(support, budget)``: look for region points that no weights on ``support``
#: meet (the faithful loop on the support), or certify it
Aim = Callable[[np.ndarray, Budget], Aimed]


class _Rows:
    """The margin rows of the points so far (one copy of each distinct row) and the
    Farkas LP over them; :meth:`extend` appends points (cuts keep their indices)."""

    def __init__(self, H: np.ndarray, y0: np.ndarray, seed: int) -> None:
        self.seed = seed
        self.H, self.y0 = H, y0
        self._build()

    def _build(self) -> None:
        H, y0 = self.H, self.y0
        _n, T, K = H.shape
        pi, pk = margin_row_index(y0, K)
        A = H[pi, :, y0[pi]] - H[pi, :, pk]
        # one copy of each distinct (row, classes): the same constraint
        key = np.hstack([A, y0[pi][:, None], pk[:, None]])
        _u, first = np.unique(key, axis=0, return_index=True)
        first = np.sort(first)
        self.pi, self.pk, A = pi[first], pk[first], A[first]
        scale = np.abs(A).max(axis=0) if len(A) else np.ones(T)
        An = A / np.where(scale > 0, scale, 1.0)
        self.lp = _FarkasLP(An, y0[self.pi], self.pk, K, self.seed)

    def extend(self, H: np.ndarray, y0: np.ndarray) -> None:
        solves = self.lp.solves
        self.H, self.y0 = np.concatenate([self.H, H]), np.r_[self.y0, y0]
        self._build()
        self.lp.solves = solves


def prove_pruning_bound(
    H: np.ndarray,
    y0: np.ndarray,
    budget: Budget,
    *,
    stop_at: int | None = None,
    seed: int = 0,
    threads: int = 1,
    progress: Callable[[str], None] | None = None,
    aim: Aim | None = None,
) -> BoundResult:
    """The largest pruning lower bound the cut loop proves within ``budget``.

    ``H[i, t, k]``: tree t's leaf value for class k at point i (float64); ``y0[i]``: the
    original's label index there. ``stop_at``: stop once the bound reaches it (e.g. the
    size of a certified pruning: nothing larger can be proved). ``threads``: CP-SAT
    workers of the hitting-set solves (where the time goes at 50 trees and more).
    ``aim``: asked for new region points when the points cannot refute a support (the
    master's optimum, or a greedy superset); the points it returns are appended to the
    rows (point indices past ``len(H)``, in the order returned). A support it certifies
    caps the bound at its size; when that support is the master's optimum, the bound
    equals its size: the minimum faithful pruning."""
    t0 = time.perf_counter()
    _n, T, _K = H.shape
    rows = _Rows(H, y0, seed)
    hs = _HittingSet(T, seed, threads)
    cuts: list[Cut] = []
    meets: int | None = None
    upper: int | None = None  # the smallest support shown to meet the points
    value = 0

    def make_cut(y: np.ndarray, support: np.ndarray) -> Cut | None:
        """The cut ``y``'s walks prove, excluding ``support`` (a tie's multipliers
        repaired first); None when no multipliers re-check to exclude it."""
        pi, pk, H, y0 = rows.pi, rows.pk, rows.H, rows.y0
        walks = circulation_combos(y, pk, y0[pi])
        combos = tuple(
            (tuple((int(pi[e]), int(pk[e])) for e in edges), w) for edges, w in walks if w > 0
        )
        if not combos:
            return None
        keep = positive_trees(H, y0, combos)
        if set(keep) & set(support.tolist()):
            combos = walks_clear_of(H, y0, combos, support) or (
                exact_tie_combos(H, y0, combos, support) or ()
            )
            keep = positive_trees(H, y0, combos) if combos else []
        # empty keep cannot happen in exact arithmetic (the original meets the points)
        if not keep or set(keep) & set(support.tolist()):
            return None
        return Cut(tuple(keep), combos)

    def refute(support: np.ndarray) -> Cut | None:
        """A grown cut that ``support`` misses; None when the LP finds weights on it,
        or its multipliers do not re-check (``support`` is then undecided).
        :class:`OutOfTime` from the LP passes through."""
        sol = rows.lp.solve(support, budget)
        if sol is None or sol[0] < EPS_INFEASIBLE:
            return None
        cut = make_cut(sol[1], support)
        return None if cut is None else _grow(cut, rows.lp, make_cut, T, budget)

    def aimed_refute(support: np.ndarray) -> Cut | None:
        """:func:`refute`, asking ``aim`` for points when the rows cannot refute
        ``support``; a support ``aim`` certifies caps the bound (``stop_at``)."""
        nonlocal stop_at
        cut = refute(support)
        if cut is not None or aim is None or budget.expired():
            return cut
        got = aim(support, budget)
        if len(got.y0):
            rows.extend(got.H, got.y0)
            cut = refute(support)
        if got.faithful:  # no larger bound can hold
            stop_at = len(support) if stop_at is None else min(stop_at, len(support))
        return cut

    hits = np.zeros(T, np.int64)  # how many cuts each tree is in

    def add(cut: Cut) -> None:
        cuts.append(cut)
        hs.add(cut.keep_one_of)
        hits[list(cut.keep_one_of)] += 1
        if progress is not None and len(cuts) % 50 == 0:
            progress(f"[pruning-bound] {len(cuts)} cuts, bound {value}")

    while not budget.expired():
        found = hs.solve(budget)
        if found is None:
            break
        support, value = found
        if stop_at is not None and value >= stop_at:
            break
        try:
            cut = aimed_refute(support)
            if cut is None:  # S meets the points only if shown to
                meets = strictly_met(rows.H, rows.y0, support, budget)
                break
            add(cut)
            # greedy supersets of the optimum: each hits every cut so far (one tree of
            # the newest cut added, the one in most cuts), so each refutation is a new
            # cut without a hitting-set solve; stop at the first one not refuted
            S = support
            for _ in range(T):
                if budget.expired():
                    break
                keep = np.array(cuts[-1].keep_one_of)
                S = np.r_[S, keep[np.argmax(hits[keep])]]
                if (cut := aimed_refute(S)) is None:
                    if (met := strictly_met(rows.H, rows.y0, S, budget)) is not None:
                        upper = met if upper is None else min(upper, met)
                    break
                add(cut)
        except OutOfTime:  # the cuts so far stand; the support is undecided
            break
    if meets is None and cuts:
        value = max(value, hs.proved_lower_bound)
    used = sorted({i for c in cuts for rs, _w in c.combos for i, _k in rs})
    if meets is not None:
        upper = meets if upper is None else min(upper, meets)
    return BoundResult(
        value, cuts, meets, time.perf_counter() - t0, rows.lp.solves, hs.solves, used, upper
    )


def walks_clear_of(H: np.ndarray, y0: np.ndarray, combos, support: np.ndarray) -> tuple:
    """The walks of ``combos`` that each prove g_t <= 0 for every tree of ``support``.

    Each closed walk is a Farkas certificate by itself, and a sum of walks that each
    keep ``support`` at g_t <= 0 keeps it there too. When the LP's optimum is eps = 0
    (``support`` can meet the points only with a tie, so no faithful weights exist on
    it), the float multipliers leave some of its trees at +1e-12 in exact arithmetic;
    dropping the walks that put them there recovers a cut that excludes ``support``."""
    S = set(np.asarray(support).tolist())
    return tuple(c for c in combos if not S & set(positive_trees(H, y0, (c,))))


def strictly_met(H: np.ndarray, y0: np.ndarray, support: np.ndarray, budget: Budget) -> int | None:
    """``len(support)`` when weights >= 0 on ``support`` and class offsets give every
    point its label with a positive margin, re-checked exactly
    (:func:`pace_cert.cert.pruning_check.meets_rows_exactly`); None when the max-margin
    LP finds none (margin <= 0, a tie such as margin exactly 0 included) or does not
    finish within ``budget``."""
    from scipy.optimize import linprog

    S = np.asarray(support, np.int64)
    _n, _T, K = H.shape
    pi, pk = margin_row_index(y0, K)
    if not len(pi):
        return len(S)  # one class at the points: nothing to meet
    A = H[pi[:, None], S[None, :], y0[pi, None]] - H[pi[:, None], S[None, :], pk[:, None]]
    scale = np.abs(A).max(axis=0) if len(S) else np.ones(0)
    scale = np.where(scale > 0, scale, 1.0)
    B = np.zeros((len(pi), K))
    B[np.arange(len(pi)), y0[pi]] += 1.0
    B[np.arange(len(pi)), pk] -= 1.0
    # max rho  s.t.  (A / scale) v + B beta >= rho, 0 <= v <= 1, -1 <= beta <= 1, rho <= 1
    M = np.hstack([-(A / scale), -B, np.ones((len(pi), 1))])
    c = np.r_[np.zeros(len(S) + K), -1.0]
    bounds = [(0.0, 1.0)] * len(S) + [(-1.0, 1.0)] * K + [(None, 1.0)]
    options = {}
    if (limit := budget.solver_limit()) is not None:
        options["time_limit"] = float(max(limit, 0.1))
    res = linprog(c, A_ub=M, b_ub=np.zeros(len(pi)), bounds=bounds, method="highs",
                  options=options)  # fmt: skip
    if res.status != 0 or not -res.fun > 0:
        return None
    v, beta = res.x[: len(S)], res.x[len(S) : len(S) + K]
    w = np.maximum(v, 0.0) / scale
    return len(S) if meets_rows_exactly(H, y0, S, w, beta) else None


def _grow(cut: Cut, lp: _FarkasLP, make_cut, T: int, budget: Budget) -> Cut:
    """A smaller cut: add trees of the cut to the infeasible support one at a time while
    the LP stays infeasible (a maximal infeasible support has the smallest cut)."""
    tried = 0
    for t in list(cut.keep_one_of):
        if tried >= GROW_TRIES or budget.expired() or t not in cut.keep_one_of:
            continue
        tried += 1
        support = np.r_[np.setdiff1d(np.arange(T), cut.keep_one_of), t]
        try:
            sol = lp.solve(support, budget)
        except OutOfTime:  # the cut so far is valid
            break
        if sol is None or sol[0] < EPS_INFEASIBLE:
            continue
        new = make_cut(sol[1], support)
        if new is not None and len(new.keep_one_of) < len(cut.keep_one_of):
            cut = new
    return cut


class _HittingSet:
    """min |S| s.t. S meets every cut, on CP-SAT (the model grows by one clause a cut)."""

    def __init__(self, T: int, seed: int, threads: int = 1) -> None:
        self.m = cp_model.CpModel()
        self.threads = max(1, int(threads))
        self.x = [self.m.new_bool_var(f"x{t}") for t in range(T)]
        self.m.minimize(sum(self.x))
        self.seed, self.solves, self.proved_lower_bound, self.stated = seed, 0, 0, 0
        self.cuts: list[tuple[int, ...]] = []

    def add(self, keep: tuple[int, ...]) -> None:
        self.cuts.append(keep)
        self.m.add_bool_or([self.x[t] for t in keep])

    def solve(self, budget: Budget) -> tuple[np.ndarray, int] | None:
        """(a minimum hitting set, its size); None when out of time before optimal."""
        s = cp_model.CpSolver()
        s.parameters.num_workers = self.threads
        s.parameters.random_seed = self.seed
        if (limit := budget.solver_limit()) is not None:
            s.parameters.max_time_in_seconds = float(limit)
        if self.proved_lower_bound > self.stated:  # cuts only grow: the bound stands
            self.m.add(sum(self.x) >= self.proved_lower_bound)
            self.stated = self.proved_lower_bound
        st = s.solve(self.m)
        self.solves += 1
        if st == cp_model.OPTIMAL:
            S = np.array([t for t, v in enumerate(self.x) if s.boolean_value(v)], np.int64)
            self.proved_lower_bound = max(self.proved_lower_bound, len(S))
            self.m.clear_hints()
            chosen = set(S.tolist())
            for t, v in enumerate(self.x):
                self.m.add_hint(v, t in chosen)
            return S, len(S)
        if st == cp_model.FEASIBLE:
            bound = int(np.ceil(s.best_objective_bound - 1e-9))
            if hitting_bound(len(self.x), self.cuts, bound, budget.solver_limit()) == "proved":
                self.proved_lower_bound = max(self.proved_lower_bound, bound)
        return None
