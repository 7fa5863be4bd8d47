"""The L0 master by combinatorial Benders (l0_cover.py) against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pace_cert.master.l0_bigm import solve_l0
from pace_cert.master.l0_cover import L0Cover
from pace_cert.master.l1 import solve_l1, solve_on_support
from pace_cert.master.max_margin import max_margin_on_support
from pace_cert.master.rows import margin_rows
from pace_cert.plumbing.budget import Budget

from .test_master_pricing import _setup


def _rows(seed: int, n_classes: int):
    from pace_cert import zoo
    from pace_cert.learners.pool import leaf_values
    from pace_cert.model.onnx_reader import ensemble_from_model

    from .helpers import small_problem

    X, y = small_problem(seed, n_features=4, n_classes=n_classes, n_rows=150)
    m = zoo.make_model("rf", 9, 2, seed).fit(X, y)
    ens, _ = ensemble_from_model(zoo.export_onnx(m, 4))
    learners = list(ens.trees)
    y0 = ens.predict_index(X)
    keep = np.ones(len(X), bool)
    S = ens.scores(X)  # drop exact vote ties: no weighting can meet them
    top = np.sort(S, axis=1)
    keep &= top[:, -1] - top[:, -2] > 1e-9
    return margin_rows(leaf_values(learners, X[keep]), y0[keep]), len(learners)


def _min_support_brute(A: np.ndarray, T: int) -> int:
    if solve_on_support(A, T, np.zeros(0, np.int64)) is not None:
        return 0  # one class only: the offsets meet every row
    for k in range(1, T + 1):
        for S in itertools.combinations(range(T), k):
            if max_margin_on_support(A, T, np.array(S)) is not None:
                return k
    raise AssertionError("not even every learner meets the rows")


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_cover_finds_the_minimum_support(seed, n_classes):
    A, T = _rows(seed, n_classes)
    sol = L0Cover(T, n_classes - 1, seed=seed).solve(A)
    assert sol.optimal
    assert int(sol.objective) == _min_support_brute(A, T)
    assert np.all(A @ np.r_[sol.weights, sol.offsets[1:]] >= 1 - 1e-7)  # the weights work
    # the big-M MILP can only be larger (M excludes extreme weight ranges)
    l1 = solve_l1(A, T)
    assert solve_l0(A, T, 10 * l1.objective).objective >= sol.objective


@pytest.mark.parametrize("seed", [0, 1])
def test_cover_cuts_carry_over_when_rows_are_added(seed):
    """Rows only grow in a faithful loop: a cover kept across calls answers exactly as a
    fresh one, and its lower bound never exceeds the new optimum."""
    A, T = _rows(seed, 2)
    half = A[: len(A) // 2]
    kept = L0Cover(T, 1, seed=seed)
    first = kept.solve(half)
    again = kept.solve(A, warm_support=np.flatnonzero(first.weights > 0))
    fresh = L0Cover(T, 1, seed=seed).solve(A)
    assert again.optimal and fresh.optimal
    assert again.objective == fresh.objective >= first.objective
    assert kept.lb <= again.objective


def test_cover_deadline_returns_a_feasible_incumbent():
    ens, _dom, Xs, y0 = _setup(0)
    from pace_cert.learners.pool import leaf_values

    A = margin_rows(leaf_values(list(ens.trees), Xs), y0)
    T = ens.n_trees
    sol = L0Cover(T, 1).solve(A, budget=Budget(0.0))  # already past: no master solve at all
    assert not sol.optimal
    assert np.all(A @ np.r_[sol.weights, sol.offsets[1:]] >= 1 - 1e-7)


def test_cover_deadline_falls_back_to_the_given_feasible_support():
    """Out of time with an infeasible warm support, the cover returns the ``fallback``
    support (pace passes the smallest certified model's) rather than every learner."""
    ens, _dom, Xs, y0 = _setup(0)
    from pace_cert.learners.pool import leaf_values

    A = margin_rows(leaf_values(list(ens.trees), Xs), y0)
    T = ens.n_trees
    best = L0Cover(T, 1).solve(A)
    support = np.flatnonzero(best.weights > 0)
    assert len(support) < T
    bad = np.array([int(np.setdiff1d(np.arange(T), support)[0])])  # one unused learner
    sol = L0Cover(T, 1).solve(A, warm_support=bad, budget=Budget(0.0), fallback=support)
    assert not sol.optimal
    assert set(np.flatnonzero(sol.weights > 0)) <= set(support)
    assert np.all(A @ np.r_[sol.weights, sol.offsets[1:]] >= 1 - 1e-7)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cover_skips_supports_the_caller_rejects(seed):
    """``usable`` rejects feasible supports (the driver: weights whose folded model fails
    its own rows in float32). The cover then returns a minimum support among the usable
    ones -- brute force -- never a rejected one, even when it is the warm start."""
    A, T = _rows(seed, 3)
    free = L0Cover(T, 2, seed=seed).solve(A)
    banned = next(  # a learner of the free optimum that some feasible support can do without
        int(b)
        for b in np.flatnonzero(free.weights > 0)
        if max_margin_on_support(A, T, np.setdiff1d(np.arange(T), [b])) is not None
    )
    cover = L0Cover(T, 2, seed=seed)
    sol = cover.solve(
        A,
        warm_support=np.flatnonzero(free.weights > 0),
        usable=lambda s: not s.weights[banned] > 0,
    )
    assert sol.optimal and sol.weights[banned] == 0
    assert cover.stats.rejected >= 1
    others = [t for t in range(T) if t != banned]
    brute = next(
        k
        for k in range(1, T)
        for S in itertools.combinations(others, k)
        if max_margin_on_support(A, T, np.array(S)) is not None
    )
    assert int(sol.objective) == brute >= int(free.objective)
    assert np.all(A @ np.r_[sol.weights, sol.offsets[1:]] >= 1 - 1e-7)
    again = cover.solve(A, usable=lambda s: not s.weights[banned] > 0)  # cuts carry over
    assert int(again.objective) == brute and again.weights[banned] == 0


def _costly_rejection():
    """(rows, learners, free solution, cover, its first solution, banned learner): the
    cover solved once with ``usable`` rejecting every support that uses ``banned``, a
    learner of the free optimum whose ban makes the optimum larger."""
    A, T = _rows(1, 3)
    free = L0Cover(T, 2, seed=1).solve(A)
    for banned in np.flatnonzero(free.weights > 0):
        cover = L0Cover(T, 2, seed=1)
        first = cover.solve(A, usable=lambda s, b=banned: not s.weights[b] > 0)
        if first.optimal and first.objective > free.objective:
            return A, T, free, cover, first, banned
    raise AssertionError("no ban makes the optimum larger on these rows")


def test_cover_drops_rejections_that_new_rows_make_usable():
    """Rejections depend on the rows: when a later call's rows make a rejected support
    usable, its no-good must not survive (the cover would no longer be a minimum)."""
    A, _T, free, cover, first, banned = _costly_rejection()
    assert cover.stats.rejected >= 1 and first.weights[banned] == 0
    again = cover.solve(np.vstack([A, A[:1]]))  # new rows; everything usable now
    assert again.optimal and int(again.objective) == int(free.objective)


def test_cover_notices_changed_rows_of_the_same_count():
    """The driver passes ``minimal_rows``: a new row can replace one it implies,
    so the row count stays while the rows change. Rejections must be tested again then
    too (a count check would keep the no-good and return a larger support)."""
    A, T, _free, cover, first, _banned = _costly_rejection()
    B = A.copy()
    B[-1, 0] -= 1e-9  # implies the old last row; same count, other rows
    again = cover.solve(B)  # everything usable now
    assert again.optimal
    assert int(again.objective) == int(L0Cover(T, 2, seed=1).solve(B).objective)
    assert int(again.objective) < int(first.objective)


def test_cover_reports_progress_on_long_searches():
    """A long cover search says where it is (lower bound, best support, cuts) every
    ``progress_seconds``; the reports change nothing in the answer."""
    A, T = _rows(0, 3)
    quiet = L0Cover(T, 2, seed=0).solve(A)
    lines: list[str] = []
    cover = L0Cover(T, 2, seed=0)
    # progress_seconds 0: a report before every iteration
    sol = cover.solve(A, progress=lines.append, progress_seconds=0.0)
    assert sol.optimal and sol.objective == quiet.objective
    assert len(lines) == len(cover.stats.history) >= 1  # one per master solve
    assert all(line.startswith("cover: ") and "lower bound" in line for line in lines)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_a_failing_support_is_completed_to_one_that_meets_every_row(seed, n_classes):
    """``complete_support`` (the L0 master's repair of a big-M trickle): from any
    support, weights that meet every row (never fewer learners than the L0 optimum,
    never called optimal); when the support alone meets the rows, the weight put off it
    is at most SUPPORT_COST times the support's own L1 optimum (the support's solution
    costs that much); None when no weighting of all learners meets the rows."""
    from pace_cert.master.l1 import SUPPORT_COST, complete_support
    from pace_cert.master.rows import MasterSolution, meets_rows

    A, T = _rows(seed, n_classes)
    K = A.shape[1] - T + 1
    best = solve_l0(A, T, big_m=1e4)
    rng = np.random.default_rng(seed)
    for size in (1, 2, max(1, round(best.objective) - 1)):
        on = rng.choice(T, size, replace=False)
        w = np.zeros(T)
        w[on] = 1.0
        bad = MasterSolution(w, np.zeros(K), float(size), None, False, "test")
        got = complete_support(A, T, bad)
        assert got is not None and meets_rows(A, got)
        assert got.objective >= best.objective and not got.optimal
        alone = solve_on_support(A, T, on)
        if alone is not None:
            off = np.delete(got.weights, on).sum()
            assert off <= SUPPORT_COST * alone.weights.sum() * (1 + 1e-6) + 1e-9
    hopeless = np.hstack([-np.abs(A[:, :T]), np.zeros((len(A), A.shape[1] - T))])
    assert complete_support(hopeless, T, bad) is None
