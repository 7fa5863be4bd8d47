"""The descent fallback (``pace_cert/driver/phases/descent.py``): bisection between the
L0 master's size and the best certified size on robust supports; every model it offers
is certified, smaller than the last, and gives the original's label on every cell
inside the region (onnxruntime on both files, brute force). And the L0 improve loop
goes on under a time limit when a re-solve was only stopped by its per-solve limit."""

from __future__ import annotations

import numpy as np
import pytest

from pace_cert.driver.phases import l0 as l0_phase
from pace_cert.driver.phases.descent import Descent, robust_support
from pace_cert.driver.result import PhaseResult
from pace_cert.master.max_margin import margin_on_support
from pace_cert.plumbing.budget import Budget
from pace_cert.settings import CompressConfig

from .test_shrink import _certified_start, check_fallback_offers


@pytest.mark.parametrize(("family", "seed"), [("rf", 1), ("gb", 4), ("ada", 2)])
def test_descent_offers_certified_smaller_models_faithful_on_every_cell(tmp_path, family, seed):
    check_fallback_offers(Descent(), tmp_path, family, seed, shrink_rounds=0, descent_rounds=8)


def test_descent_is_off_by_default_and_for_models_outside_the_pool(tmp_path):
    """Off by default (measured, not kept: docs/decisions/0016-l0-descent.md)."""
    assert CompressConfig().tuning.l0.descent_rounds == 0
    p, *_ = _certified_start(tmp_path, "rf", 1, shrink_rounds=0)
    assert not Descent().applies(p, None)
    q, *_ = _certified_start(tmp_path, "rf", 1, shrink_rounds=0, descent_rounds=8)
    res = q.best[0]
    q.best = (type(res)(res.model, res.proof, res.rounds, True, keep=[]), "refit")
    assert not Descent().applies(q, None)


def test_robust_support_keeps_k_learners_and_the_margin_it_states():
    """Rows where learner 0 alone meets everything: a support of 1 is {0}; the margin
    stated is the max-margin LP's on that support."""
    rng = np.random.default_rng(0)
    A = np.hstack([np.ones((6, 1)), rng.uniform(-1, 1, (6, 3)), np.zeros((6, 1))])
    for k in (1, 2, 3):
        S, rho = robust_support(A, 4, k, Budget.seconds(None))
        assert len(S) <= k
        mm, _ = margin_on_support(A, 4, np.array(S))
        assert rho == pytest.approx(mm.rho, abs=1e-9)
    assert robust_support(A, 4, 1, Budget.seconds(None))[0] == [0]


def _results(sizes_optimal):
    out = []
    for size, optimal in sizes_optimal:
        r = PhaseResult.nothing(1)
        r.certified, r.optimal, r.model = True, optimal, type("M", (), {"n_trees": size})()
        out.append(r)
    return out


class _Master:
    again = False


class _State:
    def __init__(self):
        self.said: list[str] = []
        self.stats = type("S", (), {"l0_proved": None})()

    def say(self, m):
        self.said.append(m)

    def record_stop(self, *a):
        pass


def test_improve_goes_on_under_a_limit_after_a_same_size_resolve(monkeypatch):
    """A re-solve that returns the certified size unproved (the per-solve limit stopped
    it) is not the end under a time limit: the next re-solve finds 9, then 9 proved."""
    answers = iter(_results([(10, False), (9, False), (9, True)]))
    monkeypatch.setattr(l0_phase, "faithful_loop", lambda *a, **k: next(answers))
    start = _results([(10, False)])[0]
    offers = list(l0_phase._improve(_State(), start, _Master(), [], "l0", Budget.seconds(1000.0)))
    assert [o.result.model.n_trees for o in offers] == [10, 9, 9]
    assert offers[-1].result.optimal


def test_improve_stops_without_a_limit_after_a_same_size_resolve(monkeypatch):
    answers = iter(_results([(10, False), (9, True)]))
    monkeypatch.setattr(l0_phase, "faithful_loop", lambda *a, **k: next(answers))
    start = _results([(10, False)])[0]
    offers = list(l0_phase._improve(_State(), start, _Master(), [], "l0", Budget.seconds(None)))
    assert [o.result.model.n_trees for o in offers] == [10]
