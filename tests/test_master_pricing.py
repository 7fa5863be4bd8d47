"""L1 duals, reduced costs and exact stump pricing (paper §3, Proposition 1)."""

from __future__ import annotations

import numpy as np
import pytest

from pace_cert import master, pricing
from pace_cert.domain import build_domain
from pace_cert.ensemble import LEAF, Tree
from pace_cert.pace import leaf_values

from .helpers import small_problem


def _setup(seed: int, n_classes: int = 2):
    from pace_cert import zoo
    from pace_cert.onnx_reader import ensemble_from_model

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
    A = master.margin_rows(leaf_values(learners, Xs), y0)
    return master.solve_l1(A, len(learners))


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
