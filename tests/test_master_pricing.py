"""L1 duals, reduced costs and exact stump pricing (paper §3, Proposition 1)."""

from __future__ import annotations

import numpy as np
import pytest

from pace_cert.learners import pricing
from pace_cert.learners.pool import leaf_values
from pace_cert.master.highs import INF, load_highs, new_highs
from pace_cert.master.l0_bigm import NoIncumbent, gurobi_available, solve_l0, solve_l0_gurobi
from pace_cert.master.l1 import L1Master, solve_l1
from pace_cert.master.max_margin import max_margin_on_support
from pace_cert.master.rows import (
    distinct_rows,
    margin_rows,
    meets_rows,
    minimal_rows,
)
from pace_cert.model.ensemble import LEAF, Tree
from pace_cert.region.domain import build_domain

from .helpers import small_problem


def _setup(seed: int, n_classes: int = 2):
    from pace_cert import zoo
    from pace_cert.model.onnx_reader import ensemble_from_model

    X, y = small_problem(seed, n_features=3, n_classes=n_classes)
    m = zoo.make_model("rf", 6, 1, seed).fit(X, y)
    ens, _ = ensemble_from_model(zoo.export_onnx(m, 3))
    dom = build_domain(ens.trees, 3)
    cells = dom.cell_index(X)
    _, first = np.unique(cells, axis=0, return_index=True)
    Xs = X[np.sort(first)]
    y0 = ens.predict_index(Xs)
    return ens, dom, Xs, y0


def _l1(learners, Xs, y0):
    A = margin_rows(leaf_values(learners, Xs), y0)
    return solve_l1(A, len(learners))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_basis_learners_have_nonnegative_reduced_cost(seed):
    ens, _dom, Xs, y0 = _setup(seed)
    learners = list(ens.trees)
    sol = _l1(learners, Xs, y0)
    G = pricing.gains(pricing.dual_matrix(sol.duals, y0, ens.n_classes), y0)
    for t in learners:
        assert pricing.reduced_cost(t, Xs, G) >= -1e-6


@pytest.mark.parametrize("n_classes", [2, 3])
def test_negative_reduced_cost_lowers_l1(n_classes):
    """c < 0 never raises the L1 value and lowers it unless the pivot is degenerate
    (several optimal duals: then the new duals price the learner at c >= 0)."""
    improving = strict = 0
    for seed in range(6):
        ens, dom, Xs, y0 = _setup(seed, n_classes)
        learners = list(ens.trees)
        sol = _l1(learners, Xs, y0)
        cand, kind = pricing.price(Xs, y0, sol.duals, dom, depth=1, n_classes=n_classes)
        assert kind == "exact"
        if cand is None or cand.reduced_cost >= -1e-6:
            continue
        improving += 1
        sol2 = _l1([*learners, cand.tree], Xs, y0)
        assert sol2.objective <= sol.objective + 1e-9
        if sol2.objective < sol.objective - 1e-9:
            strict += 1
        else:  # degenerate pivot: the learner is priced out by the new duals
            G2 = pricing.gains(pricing.dual_matrix(sol2.duals, y0, n_classes), y0)
            assert pricing.reduced_cost(cand.tree, Xs, G2) >= -1e-6
    assert improving >= 2 and strict >= 1  # the property was exercised


def _stump(f, th, v_left, v_right):
    return Tree(
        np.array([f, LEAF, LEAF]),
        np.array([th, 0, 0], np.float32),
        np.array([1, LEAF, LEAF]),
        np.array([2, LEAF, LEAF]),
        np.array([np.zeros_like(v_left), v_left, v_right], float),
    )


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_exact_stump_pricing_equals_brute_force(seed):
    _ens, dom, Xs, y0 = _setup(seed, 3)
    rng = np.random.default_rng(seed)
    duals = rng.exponential(size=len(Xs) * 2) * (rng.uniform(size=len(Xs) * 2) < 0.5)
    G = pricing.gains(pricing.dual_matrix(duals, y0, 3), y0)
    best = None
    eye = np.eye(3)
    for f in range(3):  # every feature, every boundary, every one-hot leaf pair
        for th in dom.thresholds[f]:
            for a in range(3):
                for b in range(3):
                    c = pricing.reduced_cost(_stump(f, th, eye[a], eye[b]), Xs, G)
                    best = c if best is None else min(best, c)
    found = pricing.exact_stump(Xs, G, dom)
    assert found is not None
    assert found.reduced_cost == pytest.approx(best, abs=1e-9)


def _brute_depth2_value(Xs, G, dom) -> float:
    """max over all trees of depth <= 2 (every root split, every child split or leaf) of
    sum_leaves max_c g_c: the pricing value 1 - c of the best tree, by enumeration."""
    splits = [(f, th) for f in range(Xs.shape[1]) for th in dom.thresholds[f]]

    def leaf(mask):
        return G[mask].sum(axis=0).max() if mask.any() else 0.0

    def stump(mask):
        best = leaf(mask)
        for f, th in splits:
            go = mask & (Xs[:, f] <= th)
            best = max(best, leaf(go) + leaf(mask & ~go))
        return best

    every = np.ones(len(Xs), bool)
    best = stump(every)
    for f, th in splits:
        go = Xs[:, f] <= th
        best = max(best, stump(go) + stump(~go))
    return best


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_exact_depth2_pricing_equals_brute_force(seed, n_classes):
    _ens, dom, Xs, y0 = _setup(seed, n_classes)
    rng = np.random.default_rng(seed)
    m = len(Xs) * (n_classes - 1)
    duals = rng.exponential(size=m) * (rng.uniform(size=m) < 0.5)
    G = pricing.gains(pricing.dual_matrix(duals, y0, n_classes), y0)
    found = pricing.exact_depth2(Xs, G, dom, chunk=37)  # tiny chunks: exercise the loop
    assert found is not None and found.tree.depth <= 2
    assert 1.0 - found.reduced_cost == pytest.approx(_brute_depth2_value(Xs, G, dom), abs=1e-9)
    # its thresholds are cell boundaries: new trees never refine the oracle's cells
    for f, th in zip(found.tree.feature, found.tree.threshold):
        if f != LEAF:
            assert th in dom.thresholds[f]
    cands, kind = pricing.price_all(Xs, y0, duals, dom, depth=2, n_classes=n_classes)
    assert kind == "exact"
    assert cands[0].reduced_cost == pytest.approx(found.reduced_cost, abs=1e-9)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_l1_master_warm_start_matches_cold_solves(n_classes):
    """Samples and learners arrive over rounds; the persistent HiGHS model gives the same
    optimum (and valid duals) as a cold solve each time, re-solving from its basis."""
    ens, _dom, Xs, y0 = _setup(0, n_classes)
    rng = np.random.default_rng(1)
    warm = L1Master()
    learners = list(ens.trees[:3])
    n = max(2, len(Xs) // 3)
    warm_iters = cold_iters = 0
    for step in range(4):
        A = margin_rows(leaf_values(learners, Xs[:n]), y0[:n])
        got = warm.solve(A, len(learners))
        cold = solve_l1(A, len(learners))
        assert got.objective == pytest.approx(cold.objective, rel=1e-9, abs=1e-9)
        assert np.all(A @ np.r_[got.weights, got.offsets[1:]] >= 1 - 1e-7)  # feasible
        assert np.sum(got.weights) == pytest.approx(got.objective, rel=1e-9)
        # dual feasibility: every column in the LP prices at c >= 0
        G = pricing.gains(pricing.dual_matrix(got.duals, y0[:n], n_classes), y0[:n])
        for t in learners:
            assert pricing.reduced_cost(t, Xs[:n], G) >= -1e-6
        if step:
            warm_iters += warm.iterations
            h = new_highs()
            h.setOptionValue("presolve", "off")  # count simplex pivots, as a warm re-solve does
            load_highs(  # the same LP, cold, to count its iterations
                h,
                A,
                np.r_[np.ones(len(learners)), np.zeros(n_classes - 1)],
                np.r_[np.zeros(len(learners)), np.full(n_classes - 1, -INF)],
                np.full(A.shape[1], INF),
            )
            h.run()
            cold_iters += int(h.getInfo().simplex_iteration_count)
        n = min(len(Xs), n + int(rng.integers(1, 6)))
        learners.append(ens.trees[len(learners) % ens.n_trees])
    assert warm.rebuilds == 1  # extended in place, never rebuilt
    assert warm_iters < cold_iters
    # removing a learner is not an extension: rebuilt, same optimum
    fewer = learners[1:]
    A = margin_rows(leaf_values(fewer, Xs[:n]), y0[:n])
    assert warm.solve(A, len(fewer)).objective == pytest.approx(
        solve_l1(A, len(fewer)).objective, rel=1e-9
    )
    assert warm.rebuilds == 2
    # released: small models are kept, forced or large ones freed and built again
    warm.release()
    assert warm.h is not None
    warm.release(force=True)
    assert warm.h is None
    again = warm.solve(A, len(fewer))
    assert again.objective == pytest.approx(solve_l1(A, len(fewer)).objective, rel=1e-9)
    assert warm.rebuilds == 3
    warm.RELEASE_ENTRIES = A.size - 1  # this matrix counts as large
    warm.release()
    assert warm.h is None and warm.shape == (0, 0)


@pytest.mark.parametrize("seed", [0, 1])
def test_l0_lower_bound_cut_and_max_margin_weights(seed):
    """The min-support cut never changes the optimum it bounds; max-margin weights keep
    the support and meet every row."""
    ens, _dom, Xs, y0 = _setup(seed)
    learners = list(ens.trees)
    A = margin_rows(leaf_values(learners, Xs), y0)
    l1 = solve_l1(A, len(learners))
    big_m = 10 * l1.objective
    free = solve_l0(A, len(learners), big_m)
    assert free.optimal
    cut = solve_l0(A, len(learners), big_m, min_support=int(free.objective))
    assert cut.objective == free.objective
    more = solve_l0(A, len(learners), big_m, min_support=int(free.objective) + 1)
    assert more.objective >= free.objective + 1
    support = np.flatnonzero(free.weights > 0)
    mm = max_margin_on_support(A, len(learners), support)
    assert mm is not None
    assert set(np.flatnonzero(mm.weights > 0)) <= set(support)
    assert np.all(A @ np.r_[mm.weights, mm.offsets[1:]] >= 1 - 1e-7)


def test_boost_finds_a_single_new_tree_for_a_depth2_concept():
    """y0 = XOR of two thresholds: no stump in the pool separates it, one depth-2 tree
    does; boosting must return exactly that support, meeting every margin row."""
    from pace_cert.learners.boost import boost

    g = np.arange(4, dtype=np.float32)
    X = np.array([(a, b, c) for a in g for b in g for c in g], np.float32)
    y0 = ((X[:, 0] > 1.5) ^ (X[:, 1] > 1.5)).astype(np.int64)
    pool = [_stump(f, np.float32(t), np.eye(2)[0], np.eye(2)[1]) for f in range(3) for t in g]
    dom = build_domain(pool, 3)
    res = boost(X, y0, pool, dom, depth=2, n_classes=2, max_size=1)
    assert res is not None and res.feasible and res.support == 1
    assert len(res.new_trees) == 1 and np.all(res.weights[: len(pool)] == 0)
    A = margin_rows(leaf_values([*pool, *res.new_trees], X), y0)
    assert np.all(A @ np.r_[res.weights, res.offsets[1:]] >= 1 - 1e-7)
    assert np.array_equal(np.argmax(res.new_trees[0].value[res.new_trees[0].apply(X)], 1), y0)


def test_new_highs_leaves_stdout_alone_under_threads():
    """HiGHS instances built from many threads at once (the MILP oracle does) leave fd 1
    where it was: the banner redirection is serialised."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from pace_cert.master.highs import new_highs

    before = os.fstat(1)
    with ThreadPoolExecutor(max_workers=8) as ex:
        list(ex.map(lambda _: new_highs(), range(200)))
    after = os.fstat(1)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)


@pytest.mark.parametrize("solver", ["highs", "gurobi"])
def test_l0_milp_without_a_solution_raises_no_incumbent(solver):
    """A big-M below L1/T makes problem P infeasible (every feasible w sums to at least
    the L1 optimum): the MILP must say so with NoIncumbent, not return a support."""
    if solver == "gurobi" and not gurobi_available():
        pytest.skip("gurobipy not installed")
    ens, _dom, Xs, y0 = _setup(0)
    learners = list(ens.trees)
    A = margin_rows(leaf_values(learners, Xs), y0)
    l1 = solve_l1(A, len(learners))
    solve = solve_l0 if solver == "highs" else solve_l0_gurobi
    with pytest.raises(NoIncumbent):
        solve(A, len(learners), 0.5 * l1.objective / len(learners))


def test_gurobi_l0_reports_progress_during_a_solve():
    """With a period of 0 the gurobipy L0 solve reports from its MIP callback; every
    report's best support is a real support (>= the optimum) and its lower bound never
    exceeds the optimum. With a long period it says nothing."""
    if not gurobi_available():
        pytest.skip("gurobipy not installed")
    import re

    from pace_cert import zoo
    from pace_cert.model.onnx_reader import ensemble_from_model

    X, y = small_problem(1, n_features=4, n_classes=3)
    ens, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 40, 2, 1).fit(X, y), 4))
    learners = list(ens.trees)
    A = margin_rows(leaf_values(learners, X), ens.predict_index(X))
    big_m = 10 * solve_l1(A, len(learners)).objective
    msgs: list[str] = []
    sol = solve_l0_gurobi(A, len(learners), big_m, progress=msgs.append, progress_seconds=0.0)
    assert sol.optimal and msgs
    for m in msgs:
        got = re.fullmatch(
            r"MILP: \d+ s, (?:best support (\d+)|no support yet), lower bound (\d+)", m
        )
        assert got, m
        if got.group(1) is not None:
            assert int(got.group(1)) >= sol.objective
        assert int(got.group(2)) <= sol.objective
    assert any("best support" in m for m in msgs)
    quiet: list[str] = []
    solve_l0_gurobi(A, len(learners), big_m, progress=quiet.append, progress_seconds=1e9)
    assert quiet == []


@pytest.mark.parametrize("seed", [0, 1])
def test_distinct_rows_keep_the_l0_problem(seed):
    """Samples in different cells often give the same margin row; the L0 masters get
    each row once (distinct_rows): first-seen order, no repeats, nothing else dropped,
    and the same L0 optimum with its solution meeting every original row."""
    ens, _dom, Xs, y0 = _setup(seed)
    learners = list(ens.trees)
    A = margin_rows(leaf_values(learners, Xs), y0)
    A = np.vstack([A, A[::3]])  # repeats for sure
    D = distinct_rows(A)
    assert len(D) < len(A) and len(np.unique(D, axis=0)) == len(D)
    assert {r.tobytes() for r in D} == {r.tobytes() for r in A}
    firsts = [next(i for i in range(len(A)) if np.array_equal(A[i], r)) for r in D]
    assert firsts == sorted(firsts)
    big_m = 10 * solve_l1(A, len(learners)).objective
    full, dedup = (solve_l0(M, len(learners), big_m) for M in (A, D))
    assert full.optimal and dedup.optimal and full.objective == dedup.objective
    assert meets_rows(A, dedup)
    assert distinct_rows(A[:1]) is not None and len(distinct_rows(A[:0])) == 0


def _implied_brute(D: np.ndarray, T: int) -> np.ndarray:
    """Row i of distinct ``D`` is implied when another row has the same offset part and a
    learner part <= its own everywhere (pairwise, no shortcuts)."""
    out = np.zeros(len(D), bool)
    for i in range(len(D)):
        for r in range(len(D)):
            if r != i and np.array_equal(D[r, T:], D[i, T:]) and np.all(D[r, :T] <= D[i, :T]):
                out[i] = True
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_minimal_rows_drop_exactly_the_implied_rows(seed):
    """minimal_rows keeps every distinct row that no other row implies, drops the rest,
    in first-seen order, whatever the chunking: pinned against a pairwise brute force on
    real margin rows (2 and 3 classes) and on random small-valued rows with many ties,
    with the comparison blocks forced small."""
    ens, _dom, Xs, y0 = _setup(seed)
    learners = list(ens.trees)
    A = margin_rows(leaf_values(learners, Xs), y0)
    rng = np.random.default_rng(seed)
    T = 6
    R = np.hstack([rng.integers(-2, 3, (300, T)) / 2.0, rng.choice([-1.0, 1.0], (300, 2))])
    for M, t in ((A, len(learners)), (R, T)):
        D = distinct_rows(M)
        expect = D[~_implied_brute(D, t)]
        got = minimal_rows(M, t)
        assert np.array_equal(got, expect)  # same rows, same (first-seen) order
        # chunks of 16 rows: many blocks and chunks
        assert np.array_equal(minimal_rows(M, t, block_cells=16 * t), expect)
    assert len(minimal_rows(A[:1], len(learners))) == 1
    assert len(minimal_rows(A[:0], len(learners))) == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_minimal_rows_keep_the_l0_problem(seed, n_classes):
    """Dropping implied rows changes no feasible point with w >= 0: random nonnegative
    weights and offsets near the L1 solution (some meeting every row, some not) meet the
    minimal rows iff they meet every row, and the L0 optimum (big-M MILP and cover) is
    the same, its solution meeting every row."""
    from pace_cert.master.l0_cover import L0Cover

    from .test_l0_cover import _rows

    A, T = _rows(seed, n_classes)
    M = minimal_rows(A, T)
    assert len(M) < len(distinct_rows(A))  # something was implied
    rng = np.random.default_rng(seed)
    l1 = solve_l1(A, T)
    base = np.r_[l1.weights, l1.offsets[1:]]
    met = 0
    for _ in range(3000):
        x = base * rng.uniform(0.9, 3.0) * rng.uniform(0.8, 1.2, len(base))
        both = bool(np.all(A @ x >= 1)), bool(np.all(M @ x >= 1))
        assert both[0] == both[1]
        met += both[0]
    assert 0 < met < 3000  # both outcomes occurred
    big_m = 10 * l1.objective
    full, mini = (solve_l0(R, T, big_m) for R in (A, M))
    assert full.optimal and mini.optimal and full.objective == mini.objective
    assert meets_rows(A, mini)
    cov_full, cov_min = (L0Cover(T, n_classes - 1, seed=seed).solve(R) for R in (A, M))
    assert cov_full.objective == cov_min.objective == mini.objective
    assert np.all(A @ np.r_[cov_min.weights, cov_min.offsets[1:]] >= 1 - 1e-7)
