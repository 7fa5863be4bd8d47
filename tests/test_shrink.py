"""The shrink fallback (``pace_cert/driver/phases/shrink.py``): from the smallest
certified weighting it removes one learner at a time; every model it offers is
certified, smaller than the last, and gives the original's label on every
cell inside the region (onnxruntime on both files, brute force)."""

from __future__ import annotations

import numpy as np
import pytest

from pace_cert import zoo
from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.phases.eliminate import offsets_without
from pace_cert.driver.phases.shrink import Shrink, removal_margins
from pace_cert.driver.result import Offer
from pace_cert.master.rows import MasterSolution
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.oracle.settings import OracleSettings
from pace_cert.plumbing.budget import Budget
from pace_cert.settings import CompressConfig

from .helpers import assert_faithful_on_every_cell, run_state, small_problem


def _certified_start(tmp_path, family: str, seed: int, shrink_rounds: int = 3, **tuning):
    X, y = small_problem(seed, n_features=3, n_rows=200)
    path = tmp_path / "model.onnx"
    path.write_bytes(
        zoo.export_onnx(zoo.make_model(family, 16, 2, seed).fit(X, y), 3).SerializeToString()
    )
    original, info = read_ensemble(path)
    # enumeration off: the domain is screened by a pool, as a large one would be
    cfg = CompressConfig.of(
        mode="prune", eta=0.1, seed=0, oracle=OracleSettings(enum_limit=0),
        shrink_rounds=shrink_rounds, **tuning,
    )  # fmt: skip
    p = run_state(original, X.astype(np.float32), cfg)
    # the original's own weighting of all its trees, certified: shrinking starts there
    n = original.n_trees
    sol = MasterSolution(
        np.asarray(original.weights, float), offsets_without(p, range(n)), n, None, False, "-"
    )
    res = faithful_loop(p, "l0", lambda _A: sol, p.learners[:n], p.budget, max_rounds=1)
    assert res.certified and len(res.keep) == n
    p.offer(Offer(res, "l0"))
    return p, original, path, info


def check_fallback_offers(step, tmp_path, family: str, seed: int, **tuning) -> None:
    """An L0 fallback run from a certified start offers certified models, each smaller
    than the last, every one faithful on every cell (onnxruntime, brute force)."""
    p, original, path, info = _certified_start(tmp_path, family, seed, **tuning)
    start = p.best[0].model.n_trees
    assert step.applies(p, None)
    results = list(step.run(p, p.learners, None, p.budget))
    sizes = [r.model.n_trees for r in results]
    assert all(r.certified for r in results)
    assert sizes and sizes[0] < start and sizes == sorted(set(sizes), reverse=True)
    assert_faithful_on_every_cell(p, original, path, info, [r.model for r in results])


@pytest.mark.parametrize(("family", "seed"), [("rf", 1), ("gb", 4), ("ada", 2)])
def test_shrink_offers_certified_models_one_learner_smaller_faithful_on_every_cell(
    tmp_path, family, seed
):
    check_fallback_offers(Shrink(), tmp_path, family, seed)


def test_shrink_is_off_by_default_and_for_models_outside_the_pool(tmp_path):
    """Off by default (measured, not kept: benchmarks/results/studies/shrink.md)."""
    assert CompressConfig().tuning.l0.shrink_rounds == 0
    p, *_ = _certified_start(tmp_path, "rf", 1, shrink_rounds=0)
    assert not Shrink().applies(p, None)
    q, *_ = _certified_start(tmp_path, "rf", 1)
    res = q.best[0]
    q.best = (type(res)(res.model, res.proof, res.rounds, True, keep=[]), "refit")
    assert not Shrink().applies(q, None)


def test_removal_margins_rank_removals_by_the_margin_the_rest_keeps():
    """A learner that every row needs ranks last; one no row needs ranks first (its
    rest keeps the whole margin); a rest already refuted is not scored."""
    # rows: learner 0 meets every row, learner 1 adds nothing, learner 2 is needed by
    # row 1 only; one offset column (binary)
    A = np.array([[1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.5, 0.0]])
    scores = removal_margins(A, 3, [0, 1, 2], set(), Budget.unlimited())
    assert [t for _, t in scores][-1] == 0 and scores[-1][0] <= 0
    assert scores[0][1] in (1, 2) and scores[0][0] > 0
    skip = {frozenset([0, 2])}
    assert [t for _, t in removal_margins(A, 3, [0, 1, 2], skip, Budget.unlimited())] == [2, 0]


@pytest.mark.slow  # the step's place in the plan; faithfulness is pinned on every cell above
def test_the_plan_step_shrinks_after_elimination_only(tmp_path):
    """``ShrinkStep`` (after eliminate in the prune and pace plans) runs when the L1 loop
    did not certify (the L0 loop then follows), and its offers are certified and faithful."""
    from pace_cert.driver.phases.shrink import ShrinkStep
    from pace_cert.driver.plans import PLANS
    from pace_cert.driver.state import L1State

    for mode in ("prune", "pace"):
        names = [s.name for s in PLANS[mode].steps]
        assert names.index("shrink") == names.index("eliminate") + 1
    p, original, path, info = _certified_start(tmp_path, "rf", 1)
    step = ShrinkStep()
    assert step.applies(p)
    offers = list(step.run(p, p.budget))
    assert offers and all(o.result.certified and o.name == "shrink" for o in offers)
    assert_faithful_on_every_cell(p, original, path, info, [o.result.model for o in offers])
    p.l1 = L1State(offers[0].result, None, first_certified=True)
    assert not step.applies(p)
