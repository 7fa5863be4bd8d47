"""Every solver call gets the time its budget has left (STYLE: "a call without one is
a bug a test should catch").

The HiGHS, CP-SAT and gurobipy entry points are wrapped for the length of a test and
record, at each solve, the limit the solver was given and the time the run's budget
had left; a solve with no limit, or one past the budget, fails the test. A static
check keeps every HiGHS solve going through :func:`pace_cert.master.highs.run_highs`.
No assertion depends on the machine's speed: only on the limits handed out.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from pathlib import Path

import highspy
import numpy as np
import pytest
from ortools.sat.python import cp_model

from pace_cert.app import run_compress
from pace_cert.plumbing.budget import MIN_SOLVER_SECONDS, Budget
from pace_cert.settings import CompressConfig

from .behaviour import Run, _model_and_data

PACKAGE = Path(__file__).resolve().parents[1] / "pace_cert"
#: a limit may exceed the time left by the solver floor and by the microseconds between
#: the limit being set and the solve starting; verify's hitting-set check floors at 0.1 s
SLACK = 0.12


@dataclass
class Solve:
    solver: str
    limit: float  # seconds the solver was allowed (inf: no limit)
    left: float | None  # what the run's budget had left then (None: unlimited)
    status: object = None
    seconds: float | None = None  # the solver's own run time (HiGHS)


def _option(h, name: str) -> float:
    got = h.getOptionValue(name)
    return float(got[1] if isinstance(got, tuple) else got)


@pytest.fixture
def solves(monkeypatch):
    """Record every solve; ``record.budget`` is the budget ``left`` is read from."""

    class Record(list):
        budget: Budget = Budget.unlimited()

    rec = Record()
    run = highspy.Highs.run

    def highs_run(self):
        before = self.getRunTime()
        limit = _option(self, "time_limit") - before  # HiGHS counts all runs together
        entry = Solve("highs", limit, rec.budget.left())
        out = run(self)
        entry.status, entry.seconds = self.getModelStatus(), self.getRunTime() - before
        rec.append(entry)
        return out

    solve = cp_model.CpSolver.solve

    def cpsat_solve(self, model, *args, **kw):
        limit = float(self.parameters.max_time_in_seconds)
        rec.append(Solve("cp-sat", limit, rec.budget.left()))
        return solve(self, model, *args, **kw)

    monkeypatch.setattr(highspy.Highs, "run", highs_run)
    monkeypatch.setattr(cp_model.CpSolver, "solve", cpsat_solve)
    try:
        import gurobipy as gp
    except ImportError:
        pass
    else:
        optimize = gp.Model.optimize

        def gurobi_optimize(self, *args, **kw):
            rec.append(Solve("gurobi", float(self.Params.TimeLimit), rec.budget.left()))
            return optimize(self, *args, **kw)

        monkeypatch.setattr(gp.Model, "optimize", gurobi_optimize)
    return rec


def _within_budget(solves: list[Solve]) -> None:
    assert solves, "no solver ran"
    for s in solves:
        assert math.isfinite(s.limit), f"a {s.solver} solve without a time limit"
        assert s.left is not None
        assert s.limit <= max(s.left, MIN_SOLVER_SECONDS) + SLACK, (s, "past the budget")


@pytest.mark.parametrize(
    "run, limit",
    [
        # the L1 and L0 masters, boosting, generation, refit (a small domain)
        (Run("limits-pace", "compas", "rf", 10, 2, "pace", 0.1, 0.1), 20.0),
        # raw features: elimination, the max-margin box, the pruning bound's Farkas LP
        (Run("limits-raw", "cancer", "rf", 20, 3, "pace", 0.1, 0.1, raw=True), 8.0),
    ],
    ids=["compas-pace", "cancer-raw"],
)
def test_every_solve_of_a_limited_run_has_the_time_left(run, limit, tmp_path, solves):
    model, data = _model_and_data(run, tmp_path)
    cfg = CompressConfig.of(mode=run.mode, eta=run.eta, delta=run.delta, threads=1)
    solves.budget = Budget.seconds(limit)
    res = run_compress(model, data, tmp_path / "out", cfg, budget=solves.budget)
    assert res.exit_code in (0, 2)
    _within_budget(solves)
    assert {s.solver for s in solves} >= {"highs", "cp-sat"}


def _forest_points(n_trees: int, copies: int) -> tuple[np.ndarray, np.ndarray]:
    """A leaf table H[point, tree, class] of a random forest 100 x depth 4 on raw
    breast-cancer features, at the rows and jittered copies of them, and the original's
    label index at each: the Farkas LP on it has thousands of rows."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    d = load_breast_cancer()
    X = d.data.astype(np.float32)
    rf = RandomForestClassifier(n_trees, max_depth=4, random_state=0).fit(X, d.target)
    rng = np.random.default_rng(0)
    P = np.repeat(X, copies, axis=0) * rng.uniform(0.9, 1.1, (len(X) * copies, X.shape[1]))
    P = P.astype(np.float32)
    H = np.stack([t.tree_.value[t.apply(P)][:, 0, :] for t in rf.estimators_], axis=1)
    return H.astype(np.float64), H.sum(axis=1).argmax(axis=1)


def test_the_pruning_bound_keeps_within_a_small_budget(solves):
    """The Farkas LP once ran 225 s of a 30 s budget (no time limit): now every LP and
    every hitting-set solve is handed what the budget has left, an LP stopped by it
    proves nothing (no ``meets``), and the cuts found before stand."""
    from pace_cert.master.pruning_bound import prove_pruning_bound

    H, y0 = _forest_points(100, 6)
    budget = Budget.seconds(1.0)
    solves.budget = budget
    res = prove_pruning_bound(H, y0, budget)
    lps = [s for s in solves if s.solver == "highs"]
    assert lps, "no Farkas LP ran"
    _within_budget(solves)
    for s in lps:  # HiGHS's own clock: it stopped at the limit it was handed
        assert s.seconds <= s.limit + 1.0, s
    stopped = [s for s in lps if s.status == highspy.HighsModelStatus.kTimeLimit]
    if stopped:
        assert stopped[-1] is lps[-1], "the loop went on after the budget stopped an LP"
        assert res.meets is None  # an LP stopped by the limit says nothing of its support
        assert budget.expired()
    assert res.lp_solves == len(lps)


def test_a_warm_started_model_gets_the_time_left_not_its_whole_run_time():
    """HiGHS counts ``time_limit`` against the instance's run time over every
    ``run()``: :func:`run_highs` hands it the run time so far plus the time left."""
    from pace_cert.master.highs import load_highs, new_highs, run_highs

    h = new_highs(1, 0)
    A = np.array([[1.0, 2.0], [3.0, 1.0]])
    load_highs(h, A, np.ones(2), np.zeros(2), np.full(2, highspy.kHighsInf))
    budget = Budget.seconds(30.0)
    for _ in range(3):
        assert run_highs(h, budget) == highspy.HighsModelStatus.kOptimal
        given = _option(h, "time_limit") - h.getRunTime()
        assert given <= 30.0
    run_highs(h, Budget.unlimited())
    assert _option(h, "time_limit") == math.inf


# ---------------------------------------------------------------- static checks
def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            yield name, node


#: the functions that run HiGHS; each call in the package passes ``budget``
BUDGETED = {
    "solve_l1",
    "solve_on_support",
    "solve_max_margin",
    "max_margin_on_support",
    "margin_on_support",
    "max_margin_in_box",
}


def test_every_highs_solve_goes_through_run_highs():
    """``h.run()`` is called in one place (``run_highs``, which sets the time limit),
    and every call of a function that solves an LP passes it a budget."""
    bare, unbudgeted = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        where = path.relative_to(PACKAGE.parent)
        for name, node in _calls(tree):
            method = isinstance(node.func, ast.Attribute)
            if name == "run" and method and not node.args and where.name != "highs.py":
                bare.append(f"{where}:{node.lineno}")
            if name in BUDGETED and "budget" not in {k.arg for k in node.keywords}:
                unbudgeted.append(f"{where}:{node.lineno} {name}")
            if name == "solve" and isinstance(node.func, ast.Attribute):
                owner = ast.unparse(node.func.value)
                budgeted = len(node.args) >= 3 or any(k.arg == "budget" for k in node.keywords)
                if "l1_master" in owner and not budgeted:
                    unbudgeted.append(f"{where}:{node.lineno} {owner}.solve")
    assert not bare, f"HiGHS run() outside run_highs: {bare}"
    assert not unbudgeted, f"LP solves without a budget: {unbudgeted}"


def test_every_cpsat_and_gurobi_solver_gets_a_time_limit():
    """Each module that creates a CP-SAT solver or a gurobipy model sets its limit."""
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if "cp_model.CpSolver()" in text and "max_time_in_seconds" not in text:
            missing.append(str(path))
        if "gp.Model(" in text and "TimeLimit" not in text:
            missing.append(str(path))
    assert not missing, missing
