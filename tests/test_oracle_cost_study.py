"""benchmarks/studies/oracle_cost.py: its relaxed regions are supersets of the region
(so an INFEASIBLE there would be a proof), checked on every integer point of a small
problem's grid and 50,000 random points around it."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.studies.oracle_cost import relaxed
from pace_cert import zoo
from pace_cert.model.onnx_reader import ensemble_from_model
from pace_cert.oracle.score_model import ScoreModel
from pace_cert.oracle.screen import cell_product
from pace_cert.region.plausibility import fit_plausibility

from .helpers import oracle_region, small_problem


def inside(region, original, X) -> np.ndarray:
    """Float64 membership of the rows X in ``region`` (margin and plausibility)."""
    S = ScoreModel.from_ensemble(original).scores(X)
    top = np.sort(S, axis=1)
    ok = top[:, -1] - top[:, -2] > region.margin
    if region.plausibility is not None:
        ok &= region.plausibility.scores(X)[:, 0] >= region.delta_abs
    return ok


@pytest.mark.parametrize("keep", [0, 1, 4, 10])
def test_a_relaxed_region_holds_every_point_of_the_region(keep):
    X, y = small_problem(4, n_features=3, n_classes=2, n_rows=200)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 6, 2, 1).fit(X, y), 3))
    forest = fit_plausibility(X, 0.3, n_estimators=10, seed=0)
    _dom, region, _ = oracle_region(original, [], 0.1, forest)
    grid = cell_product([np.arange(4.0)] * 3)  # every integer point of the data's grid
    rng = np.random.default_rng(0)
    cells = np.vstack([grid, rng.uniform(-0.5, 3.5, (50_000, 3))]).astype(np.float32)
    exact = inside(region, original, cells)
    loose = inside(relaxed(region, keep), original, cells)
    assert exact.any() and not (exact & ~loose).any()  # a superset
    if keep == 10:  # every tree kept: the region itself
        assert (exact == loose).all()
    if keep == 0:
        assert loose.sum() > exact.sum()  # the plausibility condition was binding
