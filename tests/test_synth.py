"""pace_cert.synth: CP-SAT's answer (k label-pure trees exist or not) agrees with brute
force over every tree and every pair of trees on small grids, found trees are pure, and
shape_tree routes points as the cuts say."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pace_cert.driver.phases.synth import synthesize_trees
from pace_cert.learners.synth import Cut, candidate_cuts, shape_tree, synthesize
from pace_cert.region.domain import build_domain

from .helpers import run_state, stump, write_small_problem


def _grid(levels: tuple[int, ...]) -> np.ndarray:
    return np.array(list(itertools.product(*[range(v) for v in levels])), np.int64)


def _leaves(cells: np.ndarray, shape) -> np.ndarray:
    """Leaf rank (0..3) of every sample in the depth-2 tree ``shape``."""
    root, lo, hi = shape

    def goes_left(c):
        if c is None:
            return np.ones(len(cells), bool)
        return cells[:, c.feature] <= c.cell

    a = goes_left(root)
    return np.where(a, np.where(goes_left(lo), 0, 1), np.where(goes_left(hi), 2, 3))


def _pure(cell_ids: np.ndarray, y: np.ndarray) -> bool:
    return all(len(np.unique(y[cell_ids == c])) == 1 for c in np.unique(cell_ids))


def _all_shapes(cells: np.ndarray, depth: int):
    cuts = candidate_cuts(cells)
    kids = [None, *cuts] if depth == 2 else [None]
    return [(r, a, b) for r in cuts for a in kids for b in kids]


def _brute(cells: np.ndarray, y: np.ndarray, k: int, depth: int) -> bool:
    leaves = [_leaves(cells, s) for s in _all_shapes(cells, depth)]
    for combo in itertools.combinations_with_replacement(range(len(leaves)), k):
        joint = np.zeros(len(y), np.int64)
        for j in combo:
            joint = joint * 4 + leaves[j]
        if _pure(joint, y):
            return True
    return False


def _planted(cells: np.ndarray, n_trees: int, n_classes: int, seed: int) -> np.ndarray:
    """Labels of a random additive model of ``n_trees`` depth-2 trees."""
    rng = np.random.default_rng(seed)
    shapes = _all_shapes(cells, 2)
    score = np.zeros((len(cells), n_classes))
    for _ in range(n_trees):
        s = shapes[int(rng.integers(len(shapes)))]
        score += rng.normal(size=(4, n_classes))[_leaves(cells, s)]
    return np.argmax(score, axis=1)


@pytest.mark.parametrize(
    "n_trees,n_classes,seed", [(1, 2, 0), (2, 2, 1), (2, 3, 2), (3, 2, 3), (3, 3, 4), (4, 2, 5)]
)
def test_synthesize_agrees_with_brute_force(n_trees, n_classes, seed):
    cells = _grid((3, 3, 2, 2))
    y = _planted(cells, n_trees, n_classes, seed)
    outcomes = []
    for k, depth in ((1, 1), (1, 2), (2, 1), (2, 2)):
        res = synthesize(cells, y, n_classes, k, depth, time_limit=60)
        assert res.status in ("found", "infeasible")
        assert (res.status == "found") == _brute(cells, y, k, depth), (k, depth)
        if res.status == "found":
            assert len(res.shapes) == k
            joint = np.zeros(len(y), np.int64)
            for s in res.shapes:
                if depth == 1:
                    assert s[1] is None and s[2] is None
                joint = joint * 4 + _leaves(cells, s)
            assert _pure(joint, y)
        outcomes.append(res.status)
    assert outcomes  # the planted labels decide; see the mix test below


def test_outcomes_are_mixed():
    """The brute-force comparison above sees both answers (so it can fail both ways)."""
    cells = _grid((3, 3, 2, 2))
    seen = set()
    for seed in range(6):
        y = _planted(cells, 3, 2, seed)
        seen.add(synthesize(cells, y, 2, 1, 2, time_limit=60).status)
    assert seen == {"found", "infeasible"}


def test_exclude_and_hint():
    cells = _grid((3, 3))
    y = (cells[:, 0] <= 0).astype(np.int64)  # one stump separates
    first = synthesize(cells, y, 2, 1, 1, time_limit=30)
    assert first.status == "found"
    assert first.shapes[0][0] == Cut(0, 0)
    again = synthesize(cells, y, 2, 1, 1, time_limit=30, exclude=[first.shapes], hint=first.shapes)
    assert again.status == "infeasible"  # the only separating stump is excluded


def test_shape_tree_routes_like_its_cuts():
    X = _grid((4, 3, 2)).astype(np.float32)
    stumps = [stump(f, t + 0.5) for f, levels in enumerate((4, 3, 2)) for t in range(levels - 1)]
    domain = build_domain(stumps, 3, None, X.min(axis=0), X.max(axis=0), np.ones(3, bool))
    cells = domain.cell_index(X)
    rng = np.random.default_rng(0)
    shapes = _all_shapes(cells, 2)
    for j in rng.choice(len(shapes), 25, replace=False):
        shape = shapes[int(j)]
        tree = shape_tree(shape, domain.thresholds, 2)
        rank = np.full(len(tree.feature), -1)
        rank[tree.leaves] = np.arange(len(tree.leaves))
        got = rank[tree.apply(X)]
        want = _leaves(cells, shape)
        # the same partition of the grid (leaf ranks differ: a leaf child is one leaf)
        for c in np.unique(want):
            assert len(np.unique(got[want == c])) == 1
        for c in np.unique(got):
            assert len(np.unique(want[got == c])) == 1


def _region_cells(original, eta: float):
    """Cell indices (per feature) and labels of every grid point of small_problem's
    4-level grid inside the confidence region of ``original``."""
    from pace_cert.region.margins import region_margin
    from pace_cert.region.masks import margin_mask

    X = _grid((4,) * original.n_features).astype(np.float32)
    inside = margin_mask(original, X, region_margin(original, eta))
    return X[inside].astype(np.int64), original.predict_index(X[inside])


def _pure_pair_exists(cells: np.ndarray, y: np.ndarray) -> bool:
    """Brute force, vectorised: some pair of depth-2 trees (every shape over every cut)
    has a joint partition with one label per cell."""
    L = np.unique(np.array([_leaves(cells, s) for s in _all_shapes(cells, 2)]), axis=0)
    k = int(y.max()) + 1
    for i in range(len(L)):
        code = (np.arange(len(L))[:, None] * 16 + L[i][None, :] * 4 + L) * k + y[None, :]
        seen = np.zeros(len(L) * 16 * k, bool)
        seen[code.ravel()] = True
        if ((seen.reshape(len(L), 16, k).sum(axis=2) <= 1).all(axis=1)).any():
            return True
    return False


@pytest.mark.parametrize("seed", [1, pytest.param(5, marks=pytest.mark.slow)])
def test_pace_size_bound_holds_on_every_cell_of_the_region(tmp_path, seed):
    """PACE's size_lower_bound (the synth phase's proof) is 3 on these RF 25 x depth 2
    models (4 features on a 4-level grid, 3 classes, eta = 0): brute force over every
    pair of depth-2 trees finds none label-pure on the region's cells (all enumerated),
    so no model of two such trees is faithful; the kept model has 3 trees."""
    from pace_cert.app import run_compress
    from pace_cert.model.onnx_reader import read_ensemble
    from pace_cert.settings import CompressConfig

    write_small_problem(tmp_path, "rf", 25, 2, seed, n_features=4, n_classes=3, n_rows=300)
    cfg = CompressConfig.of(mode="pace", eta=0.0, time_limit=120, seed=0)
    res = run_compress(tmp_path / "model.onnx", tmp_path / "train.csv", tmp_path / "out", cfg)
    assert res.exit_code == 0
    summary = res.certificate.summary
    assert summary.size_lower_bound == summary.trees_after == 3
    original, _ = read_ensemble(tmp_path / "model.onnx")
    cells, labels = _region_cells(original, 0.0)
    assert not _pure_pair_exists(cells, labels)
    # the brute force says yes on these cells when a pair exists (labels of two trees)
    assert _pure_pair_exists(cells, _planted(cells, 2, 3, seed))


@pytest.mark.slow  # where the plan stops, not soundness
def test_pace_stops_after_pruning_when_the_pruned_model_is_proved_minimal(tmp_path):
    """RF 25 x depth 2 (4 features on a 4-level grid, 3 classes, eta = 0, seed 8): the
    pruned model has 3 trees and the bound step right after pruning proves that no two
    trees are pure on the samples, so PACE returns the pruned model without generating
    (the certificate says why). Brute force over every pair of depth-2 trees on every
    region cell confirms the bound; the written model verifies on every cell."""
    from pace_cert.app import run_compress
    from pace_cert.driver.result import STOP_PROVED_MINIMAL
    from pace_cert.model.onnx_reader import read_ensemble
    from pace_cert.settings import CompressConfig

    from .test_pace import assert_verifies_exhaustively

    write_small_problem(tmp_path, "rf", 25, 2, 8, n_features=4, n_classes=3, n_rows=300)
    summaries = {}
    for mode in ("prune", "pace"):
        cfg = CompressConfig.of(mode=mode, eta=0.0, time_limit=120, seed=0)
        out = tmp_path / mode
        res = run_compress(tmp_path / "model.onnx", tmp_path / "train.csv", out, cfg)
        assert res.exit_code == 0
        summaries[mode] = res.certificate
    pace = summaries["pace"]
    assert pace.summary.trees_after == summaries["prune"].summary.trees_after == 3
    assert pace.summary.size_lower_bound == 3
    assert pace.summary.generation_stop == STOP_PROVED_MINIMAL
    original, _ = read_ensemble(tmp_path / "model.onnx")
    cells, labels = _region_cells(original, 0.0)
    assert not _pure_pair_exists(cells, labels)
    assert_verifies_exhaustively(tmp_path / "model.onnx", tmp_path / "pace")


@pytest.mark.slow  # a full pace run
def test_synthesis_beats_the_other_phases_on_a_small_adaboost(tmp_path):
    """AdaBoost 20 x depth 2 (4 features on a 4-level grid, eta = 0): PACE without the
    synthesis phase keeps 5 trees (its only lower bound comes from boundary witnesses);
    with it, 4 synthesized trees, proved minimal, and the written ONNX verifies with
    onnxruntime on every cell."""
    from pace_cert.app import run_compress
    from pace_cert.settings import CompressConfig

    from .test_pace import assert_verifies_exhaustively

    write_small_problem(tmp_path, "ada", 20, 2, 0, n_features=4, n_rows=300)
    sizes = {}
    for synth_size in (0, 5):
        out = tmp_path / f"out{synth_size}"
        cfg = CompressConfig.of(mode="pace", eta=0.0, time_limit=120, seed=0, synth_size=synth_size)
        res = run_compress(tmp_path / "model.onnx", tmp_path / "train.csv", out, cfg)
        assert res.exit_code == 0
        sizes[synth_size] = res.certificate.summary
    without, with_synth = sizes[0], sizes[5]
    assert without.size_lower_bound == without.witness_bound < with_synth.trees_after
    assert with_synth.phase == "synth"
    assert with_synth.trees_after < without.trees_after
    assert with_synth.size_lower_bound == with_synth.trees_after
    assert_verifies_exhaustively(tmp_path / "model.onnx", tmp_path / "out5")


def test_a_synthesis_solve_stopped_at_its_cap_is_retried_with_the_time_left(tmp_path):
    """With a per-solve cap far too short (1 ms), a time-limited synthesis phase asks
    the stopped question again with all the time left and reaches the same bound as
    with the default cap; without a time limit it stops at the first stopped solve."""
    from pace_cert import zoo
    from pace_cert.model.onnx_reader import read_ensemble
    from pace_cert.settings import CompressConfig

    from .helpers import small_problem

    X, y = small_problem(1, n_features=4, n_classes=3, n_rows=300)
    model = zoo.make_model("rf", 25, 2, 1).fit(X, y)
    (tmp_path / "model.onnx").write_bytes(zoo.export_onnx(model, 4).SerializeToString())
    original, _ = read_ensemble(tmp_path / "model.onnx")
    X = X.astype(np.float32)

    def bound(**kw) -> tuple[int | None, list[str]]:
        said: list[str] = []
        p = run_state(
            original, X, CompressConfig.of(mode="pace", eta=0.0, seed=0, **kw), said.append
        )
        synthesize_trees(p, 2, p.budget)
        return p.size_bound, said

    expected, _ = bound(time_limit=120)
    assert expected == 3
    retried, said = bound(time_limit=120, synth_seconds=1e-3)
    assert retried == expected
    assert any("again with the" in m for m in said)
    unlimited, said = bound(synth_seconds=1e-3)
    assert unlimited is None or unlimited < expected
    assert not any("again with the" in m for m in said)


def test_synthesis_solves_use_synth_threads_workers(monkeypatch):
    """Each synthesis solve runs with ``cfg.synth_threads`` CP-SAT workers (default 1),
    or ``cfg.threads`` when it is 0; the bound is the same either way."""
    from pace_cert import zoo
    from pace_cert.learners import synth
    from pace_cert.model.onnx_reader import ensemble_from_model
    from pace_cert.settings import CompressConfig

    from .helpers import small_problem

    X, y = small_problem(1, n_features=4, n_classes=3, n_rows=300)
    model = zoo.make_model("rf", 25, 2, 1).fit(X, y)
    original, _ = ensemble_from_model(zoo.export_onnx(model, 4))
    real = synth.synthesize
    used: list[int] = []

    def recording(*args, **kw):
        used.append(kw["threads"])
        return real(*args, **kw)

    monkeypatch.setattr(synth, "synthesize", recording)
    bounds = {}
    for kw, workers in (({}, 1), ({"synth_threads": 0, "threads": 2}, 2)):
        used.clear()
        cfg = CompressConfig.of(mode="pace", eta=0.0, seed=0, time_limit=120, **kw)
        p = run_state(original, X.astype(np.float32), cfg)
        synthesize_trees(p, 2, p.budget)
        assert used and set(used) == {workers}
        bounds[workers] = p.size_bound
    assert bounds[1] == bounds[2] == 3


def test_a_synthesis_model_too_large_to_build_is_not_built():
    """30 trees of depth 2 would need 4^30 cells: synthesize says "too-large" without
    building (a run grew to 5 GB building it), and proves nothing."""
    from pace_cert.learners import synth

    cells = _grid((3, 3, 3))
    y = (cells.sum(axis=1) % 2).astype(np.int64)
    res = synthesize(cells, y, 2, 30, 2)
    assert res.status == "too-large" and res.shapes == []
    assert len(cells) * 4**3 <= synth.MAX_CLAUSES  # a small question is still built
    assert synthesize(cells, y, 2, 3, 2).status in ("found", "infeasible")


def test_the_synthesis_phase_stops_at_a_size_too_large_to_build():
    """A size bound far above what synthesis can build (witnesses can give 30 trees):
    the phase says so and returns at once instead of building, with no bound raised."""
    from pace_cert import zoo
    from pace_cert.model.onnx_reader import ensemble_from_model
    from pace_cert.settings import CompressConfig

    from .helpers import small_problem

    X, y = small_problem(1, n_features=4, n_classes=3, n_rows=300)
    model = zoo.make_model("rf", 25, 2, 1).fit(X, y)
    original, _ = ensemble_from_model(zoo.export_onnx(model, 4))
    said: list[str] = []
    cfg = CompressConfig.of(mode="pace", eta=0.0, seed=0, time_limit=120)
    p = run_state(original, X.astype(np.float32), cfg, said.append)
    p.raise_bound(30)
    out = synthesize_trees(p, 40, p.budget)
    assert not out.certified and p.size_bound == 30
    assert any("too large" in m for m in said)
