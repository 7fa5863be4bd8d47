"""Screening inside the L0 master (``driver/lazy_screen.py``, ``search.lazy_screen``):
each incumbent support is screened at once and its separating samples become rows of
the same solve. The rows are the run's own sample rows, every answer meets them, and
runs with it on still certify only models faithful on every cell (onnxruntime, brute
force)."""

from __future__ import annotations

import numpy as np
import pytest

from pace_cert.driver.l0_master import L0Master
from pace_cert.driver.lazy_screen import LazyScreen
from pace_cert.driver.phases.l0 import l0_loops
from pace_cert.master.l0_bigm import gurobi_available, solve_l0_gurobi
from pace_cert.master.l0_cover import L0Cover
from pace_cert.master.max_margin import max_margin_on_support
from pace_cert.master.rows import MasterSolution, meets_rows, minimal_rows
from pace_cert.plumbing.budget import Budget

from .helpers import assert_faithful_on_every_cell
from .test_shrink import _certified_start


def _keep_first_samples(p, k: int) -> None:
    """Forget every sample of run state ``p`` after the first ``k`` (the screen's pool
    keeps them: its points become new ground for the screen again)."""
    p.X, p.y0 = p.X[:k], p.y0[:k]
    p.cells = {tuple(c) for c in p.domain.cell_index(p.X)}


def _smallest_refuted(p, learners, A) -> MasterSolution:
    """The L0 master's first answer on ``A`` without the screen (a minimum support on
    the first samples, which the screen refutes on these problems)."""
    return L0Master(p, learners, 1.0, None).solve(A, Budget.seconds(None))


def _refuted_start(tmp_path):
    """A certified AdaBoost start with its screening pool, the original's trees as
    learners, their rows and the master's first (refuted) answer on them."""
    p, *_ = _certified_start(tmp_path, "ada", 5, lazy_screen=0)
    p.ensure_pool()  # as the faithful loop does: the screen's pool of region points
    n = p.original.n_trees
    learners = p.learners[:n]
    A = p.matrix(learners)
    return p, n, learners, A, _smallest_refuted(p, learners, A)


def test_lazy_rows_are_the_run_samples_rows_and_refute_the_support(tmp_path):
    p, n, learners, A, sol = _refuted_start(tmp_path)
    before = len(p.X)
    lazy = LazyScreen(p, learners, minimal_rows(A, n), Budget.seconds(None), limit=5)
    rows = lazy(sol)
    assert len(rows) > 0, "the minimum support on the first samples should be refuted"
    added = len(p.X) - before
    assert added == lazy.added > 0 and lazy.screened == 1
    # the rows are exactly the margin rows of the samples just added
    assert np.array_equal(rows, p.matrix(learners)[-len(rows) :])
    # every added sample is in the region, labelled by the original
    assert np.array_equal(p.y0[before:], p.original.predict_index(p.X[before:]))
    # the support's max-margin weights on the old rows (what was screened) fail a new row
    support = np.flatnonzero(sol.weights > 0)
    mm = max_margin_on_support(minimal_rows(A, n), n, support, budget=Budget.seconds(None))
    assert mm is not None and not meets_rows(rows, mm)


def test_lazy_screen_stops_at_its_limit(tmp_path):
    p, n, learners, A, sol = _refuted_start(tmp_path)
    lazy = LazyScreen(p, learners, minimal_rows(A, n), Budget.seconds(None), limit=0)
    assert len(lazy(sol)) == 0 and lazy.screened == 0 and lazy.added == 0


@pytest.mark.parametrize("solver", ["cover", "gurobi"])
def test_a_solve_with_the_screen_meets_every_row_it_added(tmp_path, solver):
    if solver == "gurobi" and not gurobi_available():
        pytest.skip("gurobipy is not installed")
    p, *_ = _certified_start(tmp_path, "ada", 5, lazy_screen=0)
    p.ensure_pool()  # as the faithful loop does: the screen's pool of region points
    _keep_first_samples(p, 5)  # a master on few samples: its supports get refuted
    n = p.original.n_trees
    learners = p.learners[:n]
    A = p.matrix(learners)
    rows = minimal_rows(A, n)
    lazy = LazyScreen(p, learners, rows, Budget.seconds(None), limit=50)
    if solver == "cover":
        cover = L0Cover(n, p.original.n_classes - 1, seed=0)
        sol = cover.solve(rows, budget=Budget.seconds(None), lazy=lazy)
    else:
        sol = solve_l0_gurobi(rows, n, 10.0 * n, threads=1, lazy=lazy)
    assert lazy.screened > 0 and lazy.added > 0
    assert sol.optimal
    assert meets_rows(p.matrix(learners), sol)  # the old rows and every lazy row


@pytest.mark.parametrize(("family", "seed"), [("rf", 1), ("ada", 5), ("gb", 4)])
@pytest.mark.parametrize("milp", ["cover", "auto"])
def test_l0_with_the_screen_inside_certifies_models_faithful_on_every_cell(
    tmp_path, family, seed, milp
):
    p, original, path, info = _certified_start(tmp_path, family, seed, milp=milp)
    assert p.cfg.tuning.search.lazy_screen > 0
    n = original.n_trees
    offers = list(l0_loops(p, p.learners[:n], 1.0, None, "l0", p.budget))
    models = [o.result.model for o in offers if o.result.certified]
    assert models
    assert_faithful_on_every_cell(p, original, path, info, models)


def _blind_screen(p) -> None:
    """Empty the screen's pool of run state ``p``: the screen then passes every
    candidate, as a pool that misses most of a large region does."""
    F = p.X.shape[1]
    p.screen._set_pool(np.zeros((0, F), np.int64))


def test_lazy_oracle_refutes_what_the_screen_passes_with_region_samples(tmp_path):
    p, n, learners, A, sol = _refuted_start(tmp_path)
    _blind_screen(p)
    rows0 = minimal_rows(A, n)
    off = LazyScreen(p, learners, rows0, Budget.seconds(None), limit=5)
    assert len(off(sol)) == 0 and off.checked == 0, "without CP-SAT the blind screen passes it"
    before = len(p.X)
    lazy = LazyScreen(p, learners, rows0, Budget.seconds(None), limit=5, oracle=1)
    rows = lazy(sol)
    assert lazy.checked == 1 and len(rows) > 0 and lazy.added == len(p.X) - before > 0
    assert np.array_equal(rows, p.matrix(learners)[-len(rows) :])
    assert np.array_equal(p.y0[before:], p.original.predict_index(p.X[before:]))
    support = np.flatnonzero(sol.weights > 0)
    mm = max_margin_on_support(rows0, n, support, budget=Budget.seconds(None))
    assert mm is not None and not meets_rows(rows, mm)
    # its one check is spent: CP-SAT is not called again in this solve
    lazy(sol)
    assert lazy.checked == 1


@pytest.mark.parametrize(("family", "seed"), [("rf", 1), ("ada", 5), ("gb", 4)])
def test_l0_with_cpsat_inside_the_master_certifies_models_faithful_on_every_cell(
    tmp_path, monkeypatch, family, seed
):
    """With the pool emptied every incumbent reaches the in-solve CP-SAT check (the
    real one, counted: ada's refutes incumbents there, rf's and gb's find nothing), and
    the L0 loop still certifies only models faithful on every cell."""
    p, original, path, info = _certified_start(tmp_path, family, seed, lazy_oracle=20)
    _blind_screen(p)
    real, found = LazyScreen._check, []

    def counted(self, sm, e_req):
        found.append(len(out := real(self, sm, e_req)))
        return out

    monkeypatch.setattr(LazyScreen, "_check", counted)
    n = original.n_trees
    offers = list(l0_loops(p, p.learners[:n], 1.0, None, "l0", p.budget))
    models = [o.result.model for o in offers if o.result.certified]
    assert models
    assert found, "no incumbent went to CP-SAT inside the solve"
    assert family != "ada" or sum(found) > 0
    assert_faithful_on_every_cell(p, original, path, info, models)


@pytest.mark.slow  # the plan's order of fallbacks, not soundness
def test_a_first_l0_loop_certified_without_optimality_still_runs_the_fallbacks(
    tmp_path, monkeypatch
):
    """Under a time limit, an L0 loop whose certified support its master did not prove
    optimal (here: the real solver's answers with the optimality flag dropped until the
    loop's first offer, as a per-solve limit leaves them) no longer skips the
    fallbacks: reweighted L1 runs after it, every offer faithful on every cell. Before,
    such a loop went straight to the improve re-solve."""
    import dataclasses

    p, original, path, info = _certified_start(tmp_path, "rf", 1)
    real = L0Master.solve
    monkeypatch.setattr(
        L0Master, "solve", lambda m, A, b: dataclasses.replace(real(m, A, b), optimal=False)
    )
    n = original.n_trees
    offers = []
    for offer in l0_loops(p, p.learners[:n], 1.0, None, "l0", Budget.seconds(600)):
        if not offers:  # from here on the master proves what it can
            monkeypatch.setattr(L0Master, "solve", real)
        offers.append(offer)
    names = [o.name for o in offers]
    assert names[0] == "l0" and offers[0].result.certified and not offers[0].result.optimal
    assert "l0-reweighted" in names
    models = [o.result.model for o in offers if o.result.certified]
    assert_faithful_on_every_cell(p, original, path, info, models)
