"""The objective-based (FIPE-style) oracle agrees with the constraint-based one.

On small random problems both oracles must give the same status for every ordered
label pair, and every FEASIBLE point of the objective oracle must pass the checks of
``test_oracle_bruteforce``: inside the region, labelled y0 by the original, and within
the rounding slack of a disagreement of the candidate. The objective oracle's point is
the one of maximal disagreement, so its margin is at least the constraint oracle's.
"""

from __future__ import annotations

import numpy as np
import pytest

from pace_cert import zoo
from pace_cert.model.ensemble import Ensemble
from pace_cert.model.onnx_reader import ensemble_from_model
from pace_cert.oracle.cpsat import SeparationOracle
from pace_cert.oracle.objective import ObjectiveSeparationOracle
from pace_cert.oracle.score_model import PairResult, RegionSpec, ScoreModel
from pace_cert.plumbing.budget import Budget
from pace_cert.region.domain import build_domain, infer_binary
from pace_cert.region.margins import region_margin, required_margin
from pace_cert.region.masks import region_mask

from .helpers import candidates, oracle_region, small_problem


def _compare(original: Ensemble, cand: Ensemble, eta: float, forest, binary, threads: int):
    """Run both oracles on one candidate; check statuses and points; return results."""
    dom, region, c_o = oracle_region(original, cand.trees, eta, forest, binary)
    sm, cm = ScoreModel.from_ensemble(original), ScoreModel.from_ensemble(cand)
    e_req = required_margin(cand)
    ref = SeparationOracle(dom, sm, region).separate(cm, e_req, threads=threads)
    got = ObjectiveSeparationOracle(dom, sm, region).separate(cm, e_req, threads=threads)
    assert [(r.y0, r.y) for r in got] == [(r.y0, r.y) for r in ref]
    for a, b in zip(ref, got):
        assert b.status == a.status, (a.y0, a.y, a.status, b.status)
        assert b.scale_exp == a.scale_exp and b.error_bound == a.error_bound
        assert b.region_error_bound == a.region_error_bound
        if b.status != "FEASIBLE":
            assert b.point is None
            continue
        x = b.point[None, :]
        assert x.dtype == np.float32
        assert region_mask(original, c_o, forest, x, dom)[0], "point outside the region"
        assert int(original.predict_index(x)[0]) == b.y0
        s = cand.scores(x)[0]
        assert s[b.y] - s[b.y0] >= -e_req - 2 * b.error_bound
        s_ref = cand.scores(a.point[None, :])[0]  # maximal disagreement, up to rounding
        assert s[b.y] - s[b.y0] >= s_ref[b.y] - s_ref[b.y0] - 2 * b.error_bound
    return got


def _statuses(results: list[PairResult]) -> set[str]:
    return {r.status for r in results}


# three classes: make test-slow (the baseline oracles of Result 1, not the product's proof)
@pytest.mark.parametrize("n_classes", [2, pytest.param(3, marks=pytest.mark.slow)])
@pytest.mark.parametrize("eta", [0.0, 0.2])
def test_objective_oracle_matches_constraint_oracle(n_classes: int, eta: float) -> None:
    statuses: set[str] = set()
    for seed in range(2):
        X, y = small_problem(seed, n_features=3, n_classes=n_classes)
        model = zoo.export_onnx(zoo.make_model("rf", 6, 3, seed).fit(X, y), 3)
        original, _ = ensemble_from_model(model)
        rng = np.random.default_rng(seed)
        for cand in candidates(original, rng):
            statuses |= _statuses(_compare(original, cand, eta, None, None, threads=1))
    assert statuses == {"INFEASIBLE", "FEASIBLE"}  # both outcomes were exercised


@pytest.mark.slow  # a baseline oracle of Result 1 (the product proves with CP-SAT)
def test_objective_oracle_parallel_pairs_with_plausibility() -> None:
    """Binary domain, plausibility region, and pairs solved in worker threads."""
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


def test_objective_oracle_time_limit_is_unknown() -> None:
    X, y = small_problem(0, n_features=3, n_classes=2)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 4, 2).fit(X, y), 3))
    dom = build_domain(list(original.trees), original.n_features, None)
    sm = ScoreModel.from_ensemble(original)
    oracle = ObjectiveSeparationOracle(dom, sm, RegionSpec(region_margin(original, 0.0)))
    res = oracle.separate(sm, 1e-9, budget=Budget.seconds(1e-12))
    assert _statuses(res) == {"UNKNOWN"}
