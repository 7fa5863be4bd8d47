"""The HiGHS MILP (FIPE-style) oracle agrees with the CP-SAT constraint oracle.

On small random problems both oracles must give the same status for every ordered
label pair. Every FEASIBLE point of the MILP oracle is checked independently with
numpy and the reference evaluators: it lies in the region (``region_mask``), the
original labels it y0, and the compressed model fails its margin there
(``S'_y - S'_y0 >= -E_req``; the oracle checks this exactly, so no rounding slack).
Its point maximises the disagreement, so its margin is at least the constraint
oracle's point's (up to HiGHS's tolerance).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from pace_cert import zoo
from pace_cert.model.ensemble import Ensemble
from pace_cert.model.onnx_reader import ensemble_from_model
from pace_cert.oracle.cpsat import SeparationOracle
from pace_cert.oracle.milp import MilpSeparationOracle
from pace_cert.oracle.score_model import PairResult, RegionSpec, ScoreModel
from pace_cert.plumbing.budget import Budget
from pace_cert.region.domain import build_domain, infer_binary
from pace_cert.region.margins import region_margin, required_margin
from pace_cert.region.masks import region_mask

from .helpers import candidates, oracle_region, small_problem

FLOAT_SLACK = 1e-12  # float64 summation of a few O(1) scores vs the oracle's exact check
MAX_TOL = 1e-6  # HiGHS optimality tolerance allowance when comparing maxima


def _compare(
    original: Ensemble,
    cand: Ensemble,
    eta: float,
    forest,
    binary,
    threads: int,
    linking: str = "node",
) -> list[PairResult]:
    """Run both oracles on one candidate; check statuses and points; return MILP results."""
    dom, region, c_o = oracle_region(original, cand.trees, eta, forest, binary)
    sm, cm = ScoreModel.from_ensemble(original), ScoreModel.from_ensemble(cand)
    e_req = required_margin(cand)
    ref = SeparationOracle(dom, sm, region).separate(cm, e_req, threads=threads)
    milp = MilpSeparationOracle(dom, sm, region, linking=linking)
    got = milp.separate(cm, e_req, threads=threads)
    assert [(r.y0, r.y) for r in got] == [(r.y0, r.y) for r in ref]
    for a, b in zip(ref, got):
        assert b.status == a.status, (a.y0, a.y, a.status, b.status)
        assert b.seconds > 0
        if b.status != "FEASIBLE":
            assert b.point is None
            continue
        x = b.point[None, :]
        assert x.dtype == np.float32
        assert region_mask(original, c_o, forest, x, dom)[0], "point outside the region"
        assert int(original.predict_index(x)[0]) == b.y0
        s = cand.scores(x)[0]
        assert s[b.y] - s[b.y0] >= -e_req - FLOAT_SLACK, "point does not separate"
        s_ref = cand.scores(a.point[None, :])[0]
        assert s[b.y] - s[b.y0] >= s_ref[b.y] - s_ref[b.y0] - 2 * a.error_bound - MAX_TOL
    return got


def _statuses(results: list[PairResult]) -> set[str]:
    return {r.status for r in results}


# three classes: make test-slow (the baseline oracles of Result 1, not the product's proof)
@pytest.mark.parametrize("n_classes", [2, pytest.param(3, marks=pytest.mark.slow)])
@pytest.mark.parametrize("eta", [0.0, 0.2])
def test_milp_oracle_matches_constraint_oracle(n_classes: int, eta: float) -> None:
    """Random forests on a 3-feature grid, random sub-ensembles: same statuses."""
    statuses: set[str] = set()
    for seed in range(2):
        X, y = small_problem(seed, n_features=3, n_classes=n_classes)
        model = zoo.export_onnx(zoo.make_model("rf", 6, 3, seed).fit(X, y), 3)
        original, _ = ensemble_from_model(model)
        rng = np.random.default_rng(seed)
        for cand in candidates(original, rng):
            statuses |= _statuses(_compare(original, cand, eta, None, None, threads=1))
    assert statuses == {"INFEASIBLE", "FEASIBLE"}  # both outcomes were exercised


def test_milp_leaf_linking_matches_constraint_oracle() -> None:
    """The per-leaf linking rows (z[leaf] <= literal per path condition) agree too."""
    statuses: set[str] = set()
    X, y = small_problem(1, n_features=3, n_classes=3)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 6, 3, 1).fit(X, y), 3))
    for cand in candidates(original, np.random.default_rng(1)):
        statuses |= _statuses(_compare(original, cand, 0.1, None, None, 1, linking="leaf"))
    assert statuses == {"INFEASIBLE", "FEASIBLE"}


def test_milp_oracle_rejects_unknown_linking() -> None:
    X, y = small_problem(0)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 2, 2).fit(X, y), 3))
    dom = build_domain(list(original.trees), original.n_features, None)
    with pytest.raises(ValueError, match="linking"):
        MilpSeparationOracle(dom, ScoreModel.from_ensemble(original), RegionSpec(0.0), linking="x")


@pytest.mark.slow  # a baseline oracle of Result 1 (the product proves with CP-SAT)
def test_milp_oracle_parallel_pairs_with_plausibility() -> None:
    """Binary domain, plausibility region (delta > 0), 3 classes, pairs in threads."""
    from pace_cert.region.plausibility import fit_plausibility

    rng = np.random.default_rng(3)
    X = rng.integers(0, 2, size=(200, 5)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + X[:, 3] + rng.uniform(size=200)).astype(int) % 3
    model = zoo.export_onnx(zoo.make_model("rf", 8, 3, 0).fit(X, y), 5)
    original, _ = ensemble_from_model(model)
    forest = fit_plausibility(X, 0.2, n_estimators=10, seed=0)
    statuses: set[str] = set()
    for cand in candidates(original, rng):
        statuses |= _statuses(_compare(original, cand, 0.1, forest, infer_binary(X), threads=3))
    assert "FEASIBLE" in statuses and "INFEASIBLE" in statuses


def test_milp_oracle_empty_region_is_infeasible() -> None:
    """A margin above every reachable original margin leaves no region: all INFEASIBLE."""
    X, y = small_problem(1, n_features=3, n_classes=3)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 5, 3).fit(X, y), 3))
    dom = build_domain(list(original.trees), original.n_features, None)
    sm = ScoreModel.from_ensemble(original)
    top = sum(float(np.abs(t).max()) for t in sm.tables) + float(np.abs(sm.base).max())
    oracle = MilpSeparationOracle(dom, sm, RegionSpec(2 * top + 1.0))
    res = oracle.separate(sm, 1.0e3, threads=1)  # would separate anywhere in the region
    assert len(res) == 6 and _statuses(res) == {"INFEASIBLE"}


def test_milp_oracle_excludes_boundary_points_by_nogood() -> None:
    """Region margin c_o at the largest exact margin of a label y0: the region of y0 is
    empty (the margin must exceed c_o), but the relaxed MILP rows admit the boundary
    cells. They must be rejected by the exact check and excluded by no-goods, and the
    pair proved INFEASIBLE, as by the constraint oracle."""
    X, y = small_problem(2, n_features=3, n_classes=2)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 4, 2, 2).fit(X, y), 3))
    dom = build_domain(list(original.trees), original.n_features, None)
    sm = ScoreModel.from_ensemble(original)
    reps = [dom.reps[f][dom.allowed(f)] for f in range(dom.n_features)]
    grid = np.array(list(itertools.product(*reps)), np.float32)
    margins = []  # exact S_0 - S_1 per distinct leaf combination
    for row in {tuple(r) for r in np.stack([t.apply(grid) for t in sm.trees], axis=1)}:
        sc = sm.exact_scores([int(v) for v in row])
        margins.append(sc[0] - sc[1])
    y0 = 0 if max(margins) > 0 else 1
    own = [m if y0 == 0 else -m for m in margins]
    top = max(own)
    assert top > 0
    c_o = float(top)
    if Fraction(c_o) < top:
        c_o = float(np.nextafter(c_o, np.inf))
    assert 0 <= Fraction(c_o) - top < Fraction(1, 10**12)  # within the row tolerance
    region = RegionSpec(c_o)
    pair = [(y0, 1 - y0)]
    ref = SeparationOracle(dom, sm, region).separate(sm, 1.0e3, pairs=pair)
    got = MilpSeparationOracle(dom, sm, region).separate(sm, 1.0e3, pairs=pair)
    assert ref[0].status == got[0].status == "INFEASIBLE"
    assert got[0].spurious >= 1  # boundary leaf combinations were found and excluded
    assert got[0].spurious <= sum(m == top for m in own)


def test_milp_oracle_time_limit_is_unknown() -> None:
    X, y = small_problem(0, n_features=3, n_classes=2)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 4, 2).fit(X, y), 3))
    dom = build_domain(list(original.trees), original.n_features, None)
    sm = ScoreModel.from_ensemble(original)
    oracle = MilpSeparationOracle(dom, sm, RegionSpec(region_margin(original, 0.0)))
    res = oracle.separate(sm, 1e-9, budget=Budget.seconds(1e-12))
    assert _statuses(res) == {"UNKNOWN"}
    assert all(r.point is None for r in res)
