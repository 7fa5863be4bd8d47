"""Soundness of the separation oracle against brute force over every cell (SPEC §5).

For small models (3 features, few thresholds) every cell representative is evaluated
with onnxruntime on both ONNX files. Wherever the oracle says INFEASIBLE for a pair
(y0, y), no cell inside the region has original label y0 and compressed label y, and
the compressed y0-margin exceeds E_req there. Wherever it returns a point, the point
lies in the region, the original labels it y0 and the compressed model's margin is
within the stated rounding slack of a disagreement.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from pace_cert import zoo
from pace_cert.model.onnx_reader import OnnxModelInfo, ensemble_from_model
from pace_cert.model.onnx_writer import ensemble_to_onnx
from pace_cert.model.runtime import labels, session
from pace_cert.oracle.cpsat import SeparationOracle
from pace_cert.oracle.score_model import PairResult, ScoreModel
from pace_cert.oracle.screen import Screen
from pace_cert.oracle.settings import OracleSettings
from pace_cert.plumbing.budget import Budget
from pace_cert.region.domain import infer_binary
from pace_cert.region.margins import required_margin
from pace_cert.region.masks import region_mask

from .helpers import candidates, oracle_region, small_problem


def _check(
    original,
    orig_onnx,
    cand,
    eta,
    forest,
    binary,
    threads=1,
    schedule="parallel",
    tree_sums="plausibility",
    sum_links="linear",
):
    info = OnnxModelInfo("X", "label", "probabilities", False)
    comp_onnx = ensemble_to_onnx(cand, info).SerializeToString()
    dom, region, c_o = oracle_region(original, cand.trees, eta, forest, binary)
    settings = OracleSettings(schedule=schedule, tree_sums=tree_sums, sum_links=sum_links)
    oracle = SeparationOracle(dom, ScoreModel.from_ensemble(original), region, settings=settings)
    e_req = required_margin(cand)
    results = oracle.separate(ScoreModel.from_ensemble(cand), e_req, threads=threads)
    assert [(r.y0, r.y) for r in results] == [
        (a, b) for a in range(original.n_classes) for b in range(original.n_classes) if a != b
    ]

    reps = [dom.reps[i][dom.allowed(i)] for i in range(dom.n_features)]
    grid = np.array(list(itertools.product(*reps)), np.float32)
    inside = region_mask(original, c_o, forest, grid, dom)
    lo = labels(session(orig_onnx), grid)
    lc = labels(session(comp_onnx), grid)
    assert np.array_equal(lc, cand.predict(grid))  # writer == IR
    S = cand.scores(grid)
    idx = {c: i for i, c in enumerate(original.classes)}
    for r in results:
        y0, y = r.y0, r.y
        if r.status == "INFEASIBLE":
            sel = inside & (np.array([idx[v] for v in lo]) == y0)
            assert not np.any(sel & (np.array([idx[v] for v in lc]) == y)), "false proof"
            assert np.all(S[sel, y] - S[sel, y0] < -e_req), "strict margin claim is false"
        elif r.status == "FEASIBLE":
            x = r.point[None, :]
            assert region_mask(original, c_o, forest, x, dom)[0], "point outside the region"
            assert idx[labels(session(orig_onnx), x)[0]] == y0
            s = cand.scores(x)[0]
            assert s[y] - s[y0] >= -e_req - 2 * r.error_bound
        else:
            pytest.fail("UNKNOWN without a time limit")
    return results


@pytest.mark.parametrize("kind", ["rf", "ada"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("eta", [0.0, 0.2])
def test_oracle_matches_brute_force(kind, n_classes, eta):
    statuses = set()
    for seed in range(3):
        X, y = small_problem(seed, n_features=3, n_classes=n_classes)
        m = zoo.make_model(kind, 6, 2, seed).fit(X, y)
        model = zoo.export_onnx(m, 3)
        original, _ = ensemble_from_model(model)
        rng = np.random.default_rng(seed)
        for cand in candidates(original, rng):
            for r in _check(original, model.SerializeToString(), cand, eta, None, None):
                statuses.add(r.status)
    assert statuses == {"INFEASIBLE", "FEASIBLE"}  # both outcomes were exercised


@pytest.mark.parametrize("schedule", ["parallel", "sequential", "race"])
def test_pair_schedules_match_brute_force(schedule):
    """Every way of spreading threads over the pairs (pairs at once with a share of the
    workers, one pair at a time with all of them, or single-worker races of several
    seeds) gives sound answers for every pair, in order; the statuses do not depend on
    the schedule (no time limit: each is a fact about the region)."""
    statuses = set()
    for seed in range(2):
        X, y = small_problem(seed, n_features=3, n_classes=3)
        m = zoo.make_model("rf", 6, 2, seed).fit(X, y)
        model = zoo.export_onnx(m, 3)
        original, _ = ensemble_from_model(model)
        rng = np.random.default_rng(seed)
        for cand in candidates(original, rng):
            got = _check(original, model.SerializeToString(), cand, 0.0, None, None, 4, schedule)
            ref = _check(original, model.SerializeToString(), cand, 0.0, None, None, 1)
            assert [r.status for r in got] == [r.status for r in ref]
            statuses |= {r.status for r in got}
    assert statuses == {"INFEASIBLE", "FEASIBLE"}


def test_race_on_one_pair_runs_several_seeds_and_keeps_the_first_answer():
    """One pair, three threads: three attempts race; the answer is a checked one (the
    point separates, or the proof matches brute force) and no attempt is left running."""
    import threading

    X, y = small_problem(1, n_features=3, n_classes=2)
    m = zoo.make_model("rf", 6, 2, 1).fit(X, y)
    model = zoo.export_onnx(m, 3)
    original, _ = ensemble_from_model(model)
    statuses = set()
    for cand in candidates(original, np.random.default_rng(1)):
        dom, region, _c_o = oracle_region(original, cand.trees, 0.0, None, None)
        oracle = SeparationOracle(dom, ScoreModel.from_ensemble(original), region)
        ref = _check(original, model.SerializeToString(), cand, 0.0, None, None, 1)
        before = threading.active_count()
        for r0 in ref:
            got = oracle.separate(
                ScoreModel.from_ensemble(cand), required_margin(cand), [(r0.y0, r0.y)], threads=3
            )
            assert [g.status for g in got] == [r0.status]
            if got[0].status == "FEASIBLE":
                s = cand.scores(got[0].point[None, :])[0]
                assert s[r0.y] - s[r0.y0] >= -required_margin(cand) - 2 * got[0].error_bound
            statuses.add(got[0].status)
        assert threading.active_count() <= before
    assert statuses == {"INFEASIBLE", "FEASIBLE"}


def test_racing_attempts_alternate_the_lp_and_every_one_answers_soundly(monkeypatch):
    """The racing portfolio: a pair's attempts run with linearization_level 0, 1, 0, ...
    (OracleSettings.race_linearization), each CP-SAT solve really gets its level, and an attempt run
    alone at either level gives the brute-force answer (no level is a shortcut)."""
    import pace_cert.oracle.cpsat as mod

    S = OracleSettings()
    X, y = small_problem(1, n_features=3, n_classes=2)
    model = zoo.export_onnx(zoo.make_model("rf", 6, 2, 1).fit(X, y), 3)
    original, _ = ensemble_from_model(model)
    levels: list[int] = []
    real_solve = mod.cp_model.CpSolver.solve

    def spy(solver, m, *a, **kw):
        levels.append(int(solver.parameters.linearization_level))
        return real_solve(solver, m, *a, **kw)

    monkeypatch.setattr(mod.cp_model.CpSolver, "solve", spy)
    for cand in candidates(original, np.random.default_rng(1)):
        dom, region, _c_o = oracle_region(original, cand.trees, 0.0, None, None)
        oracle = SeparationOracle(dom, ScoreModel.from_ensemble(original), region)
        ref = _check(original, model.SerializeToString(), cand, 0.0, None, None, 1)
        sm, e_req = ScoreModel.from_ensemble(cand), required_margin(cand)
        comp_slots = [oracle.register(t) for t in sm.trees]
        for r0 in ref:
            for lin in S.race_linearization:
                levels.clear()
                got = oracle._solve_pair(
                    r0.y0, r0.y, sm, comp_slots, e_req, 1, None, linearization=lin
                )
                assert got.status == r0.status and set(levels) == {lin}
        called: list[int | None] = []

        def record(*a, real_pair=oracle._solve_pair, called=called, **kw):
            called.append(kw.get("linearization"))
            return real_pair(*a, **kw)

        monkeypatch.setattr(oracle, "_solve_pair", record)
        oracle.separate(sm, e_req, [(ref[0].y0, ref[0].y)], threads=3)
        k = len(S.race_linearization)
        assert len(called) >= 2  # three threads, one pair: attempts race
        assert called == [S.race_linearization[i % k] for i in range(len(called))]
    assert oracle.race_linearization() == S.race_linearization
    assert S.race_linearization[:2] == (0, 1)
    # with an isolation forest in the region every attempt keeps CP-SAT's LP
    assert _pool_problem(0.2)[-1].race_linearization() == S.race_linearization_plausible == (1,)
    assert _pool_problem(0.0)[-1].race_linearization() == S.race_linearization


def test_stump_ensembles_race_with_the_lp_first():
    """Depth-1 originals without a plausibility forest start their racing attempts with
    CP-SAT's LP (OracleSettings.race_linearization_stumps), and both levels still give
    the brute-force answer on every pair of every candidate."""
    S = OracleSettings()
    assert S.race_linearization_stumps[:2] == (1, 0)
    X, y = small_problem(3, n_features=3, n_classes=3)
    for family in ("rf", "ada"):
        model = zoo.export_onnx(zoo.make_model(family, 8, 1, 3).fit(X, y), 3)
        original, _ = ensemble_from_model(model)
        assert original.max_depth == 1
        for cand in candidates(original, np.random.default_rng(3)):
            dom, region, _c_o = oracle_region(original, cand.trees, 0.0, None, None)
            oracle = SeparationOracle(dom, ScoreModel.from_ensemble(original), region)
            assert oracle.race_linearization() == S.race_linearization_stumps
            ref = _check(original, model.SerializeToString(), cand, 0.0, None, None, 1)
            sm, e_req = ScoreModel.from_ensemble(cand), required_margin(cand)
            comp_slots = [oracle.register(t) for t in sm.trees]
            for r0 in ref:
                for lin in S.race_linearization_stumps:
                    got = oracle._solve_pair(
                        r0.y0, r0.y, sm, comp_slots, e_req, 1, None, linearization=lin
                    )
                    assert got.status == r0.status
            got = oracle.separate(sm, e_req, threads=2)
            assert [g.status for g in got] == [r.status for r in ref]


def test_until_found_stops_the_proofs_of_a_round_that_found_a_sample(monkeypatch):
    """separate(until_found=True), racing: once some pair has a separating sample, a
    pair still undecided after the grace is stopped and reported UNKNOWN (never a proof:
    here its attempts would wait 300 s, then prove INFEASIBLE); decided pairs keep their
    brute-force answers; a call with no sample (the faithful original) is unchanged."""
    import time

    X, y = small_problem(2, n_features=3, n_classes=3)
    model = zoo.export_onnx(zoo.make_model("rf", 6, 2, 2).fit(X, y), 3)
    original, _ = ensemble_from_model(model)
    for cand in candidates(original, np.random.default_rng(2)):
        ref = _check(original, model.SerializeToString(), cand, 0.0, None, None, 1)
        if {"FEASIBLE", "INFEASIBLE"} <= {r.status for r in ref}:
            break
    else:
        pytest.fail("no candidate with both a separating and a proved pair")
    dom, region, _c_o = oracle_region(original, cand.trees, 0.0, None, None)
    oracle = SeparationOracle(dom, ScoreModel.from_ensemble(original), region)
    faithful = oracle.separate(
        ScoreModel.from_ensemble(original), required_margin(original), threads=2,
        until_found=True,
    )  # fmt: skip
    assert {r.status for r in faithful} == {"INFEASIBLE"}
    slow = next((r.y0, r.y) for r in ref if r.status == "INFEASIBLE")
    real = oracle._solve_pair
    stopped: list[bool] = []  # per attempt at the slow pair: ended by its race

    def solve(*a, **kw):
        if (a[0], a[1]) == slow:  # a proof stuck for 300 s unless its race is stopped
            t = time.perf_counter()
            while not kw["race"].decided and time.perf_counter() - t < 300:
                time.sleep(0.01)
            stopped.append(kw["race"].decided)
        return real(*a, **kw)

    monkeypatch.setattr(oracle, "_solve_pair", solve)
    got = oracle.separate(
        ScoreModel.from_ensemble(cand), required_margin(cand), threads=2, until_found=True
    )
    assert stopped and all(stopped), stopped  # the race stopped it, not the 300 s
    by = {(r.y0, r.y): r for r in got}
    assert by[slow].status == "UNKNOWN"
    for r0 in ref:
        assert by[(r0.y0, r0.y)].status in (r0.status, "UNKNOWN")
    assert any(r.status == "FEASIBLE" for r in got)


@pytest.mark.parametrize("schedule", ["race", "parallel", "sequential"])
def test_pairs_past_the_deadline_are_unknown_in_every_schedule(schedule):
    """A deadline that passes before some pairs start leaves them UNKNOWN (never a
    proof, never missing): seen as a crash of the race schedule on a 3-class prune."""
    X, y = small_problem(2, n_features=3, n_classes=3)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 4, 2, 0).fit(X, y), 3))
    dom, region, _c_o = oracle_region(original, original.trees, 0.0, None, None)
    settings = OracleSettings(schedule=schedule)
    oracle = SeparationOracle(dom, ScoreModel.from_ensemble(original), region, settings=settings)
    got = oracle.separate(
        ScoreModel.from_ensemble(original),
        required_margin(original),
        threads=2,
        budget=Budget.seconds(0.0),
    )
    assert [(r.y0, r.y) for r in got] == [(a, b) for a in range(3) for b in range(3) if a != b]
    assert {r.status for r in got} == {"UNKNOWN"}


def test_schedule_for_names_the_schedule_separate_runs(monkeypatch):
    """``schedule_for`` (what the certificate states) against the path ``separate``
    takes, spied on, for every schedule, thread count and number of pairs."""
    X, y = small_problem(2, n_features=3, n_classes=3)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 4, 2, 0).fit(X, y), 3))
    dom, region, _c_o = oracle_region(original, original.trees, 0.0, None, None)
    oracle = SeparationOracle(dom, ScoreModel.from_ensemble(original), region)
    seen: list[tuple[str, int]] = []
    import pace_cert.oracle.cpsat as mod
    import pace_cert.oracle.schedule as schedule_mod

    monkeypatch.setattr(mod, "run_race", lambda pairs, *a, **kw: seen.append(("race", 1)) or [])

    def solve(*a, **kw):
        seen.append(("solve", a[5]))
        return PairResult(a[0], a[1], "UNKNOWN")

    monkeypatch.setattr(oracle, "_solve_pair", solve)

    class Spy(schedule_mod.ThreadPoolExecutor):
        def __init__(self, *a, **kw):
            seen.append(("pool", 0))
            super().__init__(*a, **kw)

    monkeypatch.setattr(schedule_mod, "ThreadPoolExecutor", Spy)
    sm = ScoreModel.from_ensemble(original)
    for schedule in ("race", "parallel", "sequential"):
        oracle.settings = replace(oracle.settings, schedule=schedule)
        for threads in (1, 2, 3):
            for pairs in ([(0, 1)], [(0, 1), (1, 0), (2, 0)]):
                seen.clear()
                oracle.separate(sm, 0.0, pairs, threads=threads)
                name = oracle.schedule_for(threads, len(pairs))
                if name == "race":
                    assert seen == [("race", 1)]
                elif name == "parallel":
                    assert seen[0] == ("pool", 0) and len(seen) == 1 + len(pairs)
                else:  # one pair after the other, all threads for each
                    assert seen == [("solve", threads)] * len(pairs)


def test_certificate_states_the_schedule_that_ran(tmp_path):
    """The certificate's cpsat.schedule comes from the oracle's own rule."""
    from pace_cert.app import run_compress
    from pace_cert.settings import CompressConfig

    X, y = small_problem(2, n_features=3, n_classes=3)
    (tmp_path / "m.onnx").write_bytes(
        zoo.export_onnx(zoo.make_model("rf", 4, 2, 0).fit(X, y), 3).SerializeToString()
    )
    zoo.write_csv(tmp_path / "t.csv", X, y, ["f0", "f1", "f2"])
    for threads, want in ((1, "sequential"), (2, "race")):
        cfg = CompressConfig.of(mode="prune", threads=threads)
        res = run_compress(tmp_path / "m.onnx", tmp_path / "t.csv", tmp_path / f"o{threads}", cfg)
        assert res.exit_code == 0
        assert res.certificate.cpsat.schedule == want
        if want == "race":  # delta = 0: the attempts' LP levels as they ran
            assert "linearization_level from (0, 1): the pair's first attempt" in (
                res.certificate.cpsat.num_workers_per_pair
            )


@pytest.mark.parametrize("delta", [0.1, 0.3])
def test_oracle_with_plausibility_and_binary_domain(delta):
    from pace_cert.region.plausibility import fit_plausibility

    rng = np.random.default_rng(7)
    X = rng.integers(0, 2, size=(200, 4)).astype(np.float32)
    y = ((X[:, 0] + X[:, 1] * X[:, 2] + rng.uniform(size=200)) > 1.2).astype(int)
    m = zoo.make_model("rf", 6, 2, 0).fit(X, y)
    model = zoo.export_onnx(m, 4)
    original, _ = ensemble_from_model(model)
    forest = fit_plausibility(X, delta, n_estimators=10, seed=0)
    for cand in candidates(original, rng):
        ref = _check(original, model.SerializeToString(), cand, 0.1, forest, infer_binary(X))
        got = _check(
            original, model.SerializeToString(), cand, 0.1, forest, infer_binary(X), 2, "race"
        )
        assert [r.status for r in got] == [r.status for r in ref]


def test_per_tree_sums_answer_as_brute_force_and_as_the_flat_sums():
    """The plausibility (and, with "all", every) condition posted as one integer per tree,
    tied to its leaves by the sum alone or with value literals, gives the same statuses
    as the long flat sum, each checked against every cell."""
    from pace_cert.region.plausibility import fit_plausibility

    rng = np.random.default_rng(5)  # binary features: the brute force stays small
    X = rng.integers(0, 2, size=(300, 6)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + X[:, 3] + rng.uniform(size=300)).astype(int) % 3
    model = zoo.export_onnx(zoo.make_model("rf", 8, 2, 0).fit(X, y), 6)
    original, _ = ensemble_from_model(model)
    forest = fit_plausibility(X, 0.2, n_estimators=12, seed=0)
    orig_onnx = model.SerializeToString()
    statuses: dict[str, list[str]] = {}
    encodings = [("none", "linear"), ("plausibility", "linear"), ("plausibility", "values")]
    for tree_sums, links in [*encodings, ("all", "linear"), ("all", "values")]:
        rng = np.random.default_rng(3)  # the same candidates for each encoding
        key = f"{tree_sums}/{links}"
        statuses[key] = []
        for cand in candidates(original, rng):
            res = _check(
                original, orig_onnx, cand, 0.1, forest, infer_binary(X),
                tree_sums=tree_sums, sum_links=links,
            )  # fmt: skip
            statuses[key] += [r.status for r in res]
    assert len({tuple(v) for v in statuses.values()}) == 1
    assert {"INFEASIBLE", "FEASIBLE"} <= set(statuses["none/linear"])  # both answers


@pytest.mark.parametrize("seed", range(4))
def test_value_literals_keep_every_solution_of_a_tree_sum(seed):
    """d = sum(c * z) over some leaves of a tree (exactly one leaf true, the others of
    coefficient 0): with the value literals the (leaves, d) solutions are exactly those
    of the sum alone, every one enumerated by CP-SAT; a mutation that drops a value's
    literal or its leaves loses or adds solutions."""
    from ortools.sat.python import cp_model

    from pace_cert.oracle.cpsat import _value_literals

    rng = np.random.default_rng(seed)
    n_leaves = int(rng.integers(3, 8))
    listed = sorted(rng.choice(n_leaves, int(rng.integers(1, n_leaves)), replace=False))
    cs = [int(c) for c in rng.integers(1, 4, len(listed))]  # repeated values likely

    def solutions(links: bool) -> set[tuple[int, ...]]:
        m = cp_model.CpModel()
        z = [m.new_bool_var(f"z{i}") for i in range(n_leaves)]
        m.add_exactly_one(z)
        zs = [z[i] for i in listed]
        d = m.new_int_var_from_domain(cp_model.Domain.from_values([0, *cs]), "d")
        m.add(d == cp_model.LinearExpr.weighted_sum(zs, cs))
        if links:
            _value_literals(m, d, zs, cs)
        solver = cp_model.CpSolver()
        solver.parameters.enumerate_all_solutions = True
        found: set[tuple[int, ...]] = set()

        class Collect(cp_model.CpSolverSolutionCallback):
            def on_solution_callback(self) -> None:
                found.add((*(self.value(v) for v in z), self.value(d)))

        assert solver.solve(m, Collect()) == cp_model.OPTIMAL
        return found

    plain = solutions(False)
    assert len(plain) == n_leaves  # one per leaf, d its coefficient
    assert solutions(True) == plain


def test_racing_attempts_cycle_through_the_race_sum_links():
    """Attempt k of a pair (seed = oracle seed + k) posts with race_sum_links[k mod len];
    outside the race, and with an empty cycle, every solve uses sum_links; a link that
    is not one of SUM_LINKS is refused."""
    X, y = small_problem(11, n_features=3, n_classes=2, n_rows=200)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 4, 2, 0).fit(X, y), 3))
    dom, region, _ = oracle_region(original, (), 0.0, None)
    settings = OracleSettings(race_sum_links=("linear", "values"))
    oracle = SeparationOracle(dom, ScoreModel.from_ensemble(original), region, seed=7,
                              settings=settings)  # fmt: skip
    assert [oracle._links(s) for s in (None, 7, 8, 9, 10)] == [
        "linear", "linear", "values", "linear", "values",
    ]  # fmt: skip
    oracle.settings = OracleSettings(sum_links="values")
    assert {oracle._links(s) for s in (None, 7, 8)} == {"values"}
    with pytest.raises(ValueError):
        OracleSettings(race_sum_links=("linear", "sums"))


def test_per_tree_sums_post_one_bounded_integer_per_isolation_tree():
    from pace_cert.region.plausibility import fit_plausibility

    X, y = small_problem(11, n_features=3, n_classes=2, n_rows=200)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 4, 2, 0).fit(X, y), 3))
    forest = fit_plausibility(X, 0.2, n_estimators=12, seed=0)
    dom, region, _ = oracle_region(original, (), 0.0, forest)
    oracle = SeparationOracle(dom, ScoreModel.from_ensemble(original), region)
    slots, cond = oracle._region_conds[0][-1]
    assert slots is oracle._plaus_slots
    varying = [a for a in cond.coefs if np.ptp(a) > 0]  # trees whose leaves differ
    base = len(oracle.model.proto.constraints)
    added = {}
    for per_tree in (False, True):
        oracle.settings = replace(
            oracle.settings,
            tree_sums="plausibility" if per_tree else "none",
            sum_links="linear",
        )
        m = oracle.model.clone()
        n_vars = len(m.proto.variables)
        oracle._post(m, slots, cond)
        variables = m.proto.variables
        new = [variables[i] for i in range(n_vars, len(variables))]
        added[per_tree] = (len(new), len(m.proto.constraints) - base)
        for v, a in zip(new, varying):  # domain: the tree's shifted coefficients
            domain = list(v.domain)  # sorted [lo, hi] intervals
            assert domain[0] == 0 and domain[-1] == a.max() - a.min()
    assert len(varying) > 1
    assert added[False] == (0, 1)  # one long sum over the leaf booleans
    assert added[True] == (len(varying), len(varying) + 1)  # a link per tree, then the sum


def _pool_problem(delta: float):
    """A binary RF8 x d2 on 3 real-valued features (a pool-screened domain), eta = 0.1 and
    a plausibility forest when ``delta`` > 0: (X, original, forest, domain, c_o, oracle)."""
    from pace_cert.region.plausibility import fit_plausibility

    X, y = small_problem(1, n_features=3, n_classes=2, n_rows=200)
    X = X + np.random.default_rng(1).uniform(0, 0.9, X.shape).astype(np.float32)
    m = zoo.make_model("rf", 8, 2, 1).fit(X, y)
    original, _ = ensemble_from_model(zoo.export_onnx(m, 3))
    forest = fit_plausibility(X, delta, n_estimators=10, seed=0) if delta else None
    dom, region, c_o = oracle_region(original, [], 0.1, forest)
    sm = ScoreModel.from_ensemble(original)
    oracle = SeparationOracle(dom, sm, region, hints=Screen(dom, sm, region))
    return X, original, forest, dom, c_o, oracle


def _assert_separates(r, original, c_o, forest, dom, cand, e_req: float) -> None:
    """A screened or climbed point: inside the region, labelled y0 by the original, and
    the candidate fails its margin there (float64, no rounding slack)."""
    x = r.point[None, :]
    assert region_mask(original, c_o, forest, x, dom)[0]
    assert original.predict_index(x)[0] == r.y0
    s = cand.scores(x)[0]
    assert s[r.y] - s[r.y0] >= -e_req


def _separating_rows(cand, X: np.ndarray, y0: np.ndarray, e_req: float) -> np.ndarray:
    """Per row of X (original label y0): whether the candidate fails its margin there."""
    S = cand.scores(X)
    other = np.arange(S.shape[1])[None, :] != y0[:, None]
    return ((S - S[np.arange(len(X)), y0][:, None] >= -e_req) & other).any(axis=1)


@pytest.mark.parametrize("delta", [0.0, 0.2])
def test_screening_pool_points_are_inside_and_separating(delta):
    """The numpy screen over the sample pool (used on domains too large to enumerate)
    only returns points inside the region that fail the candidate's margin, and grows
    around CP-SAT points without leaving the region."""
    X, original, forest, dom, c_o, oracle = _pool_problem(delta)
    assert oracle.hints.seed_pool(X, per_row=5) > 0
    PX, Py = oracle.hints._pool
    assert region_mask(original, c_o, forest, PX, dom).all()
    assert np.array_equal(Py, original.predict_index(PX))
    rng = np.random.default_rng(0)
    hits = 0
    for cand in candidates(original, rng):
        e_req = required_margin(cand)
        found = oracle.hints.screen(ScoreModel.from_ensemble(cand), e_req, per_pair=5)
        assert bool(found) == bool(_separating_rows(cand, PX, Py, e_req).any())
        for r in found:
            _assert_separates(r, original, c_o, forest, dom, cand, e_req)
        hits += len(found)
        cp = oracle.separate(ScoreModel.from_ensemble(cand), e_req)
        pts = [r.point for r in cp if r.status == "FEASIBLE"]
        oracle.hints.grow_pool(pts)
        PX, Py = oracle.hints._pool
        assert region_mask(original, c_o, forest, PX, dom).all()
    assert hits > 0  # the screen found something on some candidate


@pytest.mark.parametrize("delta", [0.0, 0.2])
def test_climbed_points_are_inside_and_separating(delta):
    """The beam search from the pool (large domains, before CP-SAT) returns only points
    inside the region, labelled y0 by the original, that fail the candidate's margin;
    never a point for a pair CP-SAT proves INFEASIBLE; and it finds points the pool
    itself does not hold (the pool is stripped of separating points first)."""
    X, original, forest, dom, c_o, oracle = _pool_problem(delta)
    hits = 0
    for cand in candidates(original, np.random.default_rng(0)):
        oracle.hints.seed_pool(X[::4], per_row=2)
        PX, Py = oracle.hints._pool
        sm, e_req = ScoreModel.from_ensemble(cand), required_margin(cand)
        keep = ~_separating_rows(cand, PX, Py, e_req)
        oracle.hints._pool = (PX[keep], Py[keep])
        found = oracle.hints.climb(sm, e_req, per_pair=5, width=8, steps=10)
        proved = {(r.y0, r.y) for r in oracle.separate(sm, e_req) if r.status == "INFEASIBLE"}
        for r in found:
            _assert_separates(r, original, c_o, forest, dom, cand, e_req)
            assert (r.y0, r.y) not in proved
            assert not any(np.array_equal(r.point, p) for p in oracle.hints._pool[0])
        hits += len(found)
    assert hits > 0


@pytest.mark.parametrize("enumerable", [True, False])
def test_solution_hints_only_steer_the_search(enumerable):
    """CP-SAT solution hints (the grid or pool point nearest to separating) change no
    status: with and without them every pair gets the same answer, and hints were given.
    Without a plausibility forest the domain is enumerable (hints from the grid); with
    one it is not, and hints come from the screening pool."""
    from pace_cert.region.plausibility import fit_plausibility

    X, y = small_problem(2, n_features=3, n_classes=3, n_rows=200)
    m = zoo.make_model("rf", 8, 2, 2).fit(X, y)
    original, _ = ensemble_from_model(zoo.export_onnx(m, 3))
    forest = None if enumerable else fit_plausibility(X, 0.1, n_estimators=10, seed=0)
    dom, region, _ = oracle_region(original, [], 0.1, forest)
    sm0 = ScoreModel.from_ensemble(original)
    oracle = SeparationOracle(dom, sm0, region, hints=Screen(dom, sm0, region))
    assert oracle.hints.can_enumerate() == enumerable
    if not enumerable:
        assert oracle.hints.seed_pool(X, per_row=5) > 0
    plain = SeparationOracle(
        dom, sm0, region, settings=OracleSettings(use_hints=False), hints=oracle.hints
    )
    statuses = set()
    for cand in candidates(original, np.random.default_rng(3)):
        sm, e_req = ScoreModel.from_ensemble(cand), required_margin(cand)
        hinted = oracle.separate(sm, e_req, threads=1)
        assert oracle._pair_hints, "no hint was given"
        bare = plain.separate(sm, e_req, threads=1)
        assert not plain._pair_hints
        assert [r.status for r in hinted] == [r.status for r in bare]
        statuses |= {r.status for r in hinted}
    assert statuses == {"INFEASIBLE", "FEASIBLE"}


def test_a_round_scores_its_candidate_on_the_grid_once(monkeypatch):
    """The screen and the CP-SAT hints of one round use the candidate's scores on the
    grid computed once (memo by identity of the model and the points); another
    candidate is scored afresh, and every screen still equals the brute-force one."""
    X, y = small_problem(2, n_features=3, n_classes=3, n_rows=200)
    m = zoo.make_model("rf", 8, 2, 2).fit(X, y)
    original, _ = ensemble_from_model(zoo.export_onnx(m, 3))
    dom, region, _ = oracle_region(original, [], 0.1, None)
    sm0 = ScoreModel.from_ensemble(original)
    oracle = SeparationOracle(dom, sm0, region, hints=Screen(dom, sm0, region))
    grid, y0 = oracle.hints.grid()
    scored: list[int] = []
    real = ScoreModel.scores
    monkeypatch.setattr(
        ScoreModel, "scores", lambda self, P: scored.append(id(self)) or real(self, P)
    )
    for cand in candidates(original, np.random.default_rng(3)):
        sm, e_req = ScoreModel.from_ensemble(cand), required_margin(cand)
        scored.clear()
        found = oracle.hints.screen(sm, e_req, per_pair=5)
        oracle.separate(sm, e_req, threads=1)
        assert scored.count(id(sm)) == 1
        assert bool(found) == bool(_separating_rows(cand, grid, y0, e_req).any())


def test_the_pool_and_the_moves_stay_within_their_caps():
    """Raw features have thousands of cells: one-cell moves of a point are capped (the
    neighbouring cells of every feature first) and the pool keeps at most ``pool_cap``
    points, newest first; every point kept is still inside the region."""
    X, original, forest, dom, c_o, oracle = _pool_problem(0.0)
    screen = oracle.hints
    total = sum(len(c) for c in screen.allowed_cells)
    screen.moves_per_point = 12
    assert total > 12
    x = X[0]
    moves = screen._moves(x)
    assert len(moves) < total and (moves != x).sum(axis=1).max() <= 1
    cells = dom.cell_index(x[None, :])[0]
    for f, allowed in enumerate(screen.allowed_cells):  # both neighbouring cells are tried
        r = int(np.searchsorted(allowed, cells[f]))
        near = set(allowed[max(0, r - 1) : r + 2].tolist())
        tried = set(dom.cell_index(moves)[:, f].tolist())
        assert near <= tried
    screen.seed_pool(X, per_row=5)
    screen.pool_cap = 300
    new = [X[i] for i in range(5)]
    size = screen.grow_pool(new)
    PX, Py = screen._pool
    assert size == len(PX) <= 300
    assert region_mask(original, c_o, forest, PX, dom).all()
    assert np.array_equal(Py, original.predict_index(PX))


@pytest.mark.parametrize("schedule", ["parallel", "race"])
def test_harvested_samples_separate_inside_the_region_with_new_leaf_patterns(schedule):
    """``OracleSettings.harvest``: the extra samples of a pair are, like its first one,
    inside the region (checked on the replayed grid), labelled y0 by the original (ONNX
    replay) and within the rounding slack of a disagreement; each has a leaf pattern of
    the original's trees that no earlier sample of the pair has (a new master row); the
    pair statuses are those of the oracle without harvesting."""
    harvested = 0
    for seed in range(3):
        X, y = small_problem(seed, n_features=3, n_classes=3)
        m = zoo.make_model("rf", 6, 2, seed).fit(X, y)
        model = zoo.export_onnx(m, 3)
        original, _ = ensemble_from_model(model)
        sess = session(model.SerializeToString())
        idx = {c: i for i, c in enumerate(original.classes)}
        rng = np.random.default_rng(seed)
        for cand in candidates(original, rng):
            dom, region, c_o = oracle_region(original, cand.trees, 0.1, None, None)
            plain, more = (
                SeparationOracle(
                    dom, ScoreModel.from_ensemble(original), region,
                    settings=OracleSettings(schedule=schedule, harvest=h),
                ).separate(ScoreModel.from_ensemble(cand), required_margin(cand), threads=2)
                for h in (0, 4)
            )  # fmt: skip
            assert [r.status for r in more] == [r.status for r in plain]
            e_req = required_margin(cand)
            for r in more:
                if r.status != "FEASIBLE":
                    assert not r.extra
                    continue
                P = np.array([r.point, *r.extra], np.float32)
                assert region_mask(original, c_o, None, P, dom).all(), "outside the region"
                assert all(idx[v] == r.y0 for v in labels(sess, P))
                S = cand.scores(P)
                assert np.all(S[:, r.y] - S[:, r.y0] >= -e_req - 2 * r.error_bound)
                leaves = np.stack([t.apply(P) for t in original.trees], axis=1)
                assert len(np.unique(leaves, axis=0)) == len(P), "a leaf pattern repeated"
                harvested += len(r.extra)
    assert harvested > 0  # the harvest ran
