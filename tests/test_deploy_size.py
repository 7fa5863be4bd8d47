"""The size in what deployment pays for (pace_cert/deploy_size.py): structural counts
against hand-built trees, comparisons per prediction against a row-by-row walk, and a
latency measurement that is bounded and returns positive numbers (never their speed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pace_cert import deploy_size, zoo
from pace_cert.deploy_size import comparisons, measure_latency, node_depths, structure
from pace_cert.model.ensemble import LEAF, Ensemble, Tree

from .helpers import small_problem, stump


def _chain() -> Tree:
    """x0 <= 1 ? leaf : (x1 <= 2 ? leaf : (x0 <= 3 ? leaf : leaf)): depth 3, 3 splits,
    4 leaves; nodes numbered out of order (children before the root's other side)."""
    feature = np.array([0, LEAF, 1, LEAF, 0, LEAF, LEAF])
    threshold = np.array([1, 0, 2, 0, 3, 0, 0], np.float32)
    left = np.array([1, LEAF, 3, LEAF, 5, LEAF, LEAF])
    right = np.array([2, LEAF, 4, LEAF, 6, LEAF, LEAF])
    return Tree(feature, threshold, left, right, np.zeros((7, 2)))


def _ensemble(trees) -> Ensemble:
    return Ensemble(tuple(trees), np.ones(len(trees)), np.zeros(2), np.array([0, 1]), n_features=2)


def test_structure_counts_hand_built_trees():
    ens = _ensemble([_chain(), stump(1, 0.5), _chain()])
    s = structure(ens, np.zeros((0, 2), np.float32))
    assert (s.trees, s.leaves, s.internal_nodes, s.max_depth) == (3, 4 + 2 + 4, 3 + 1 + 3, 3)
    assert (s.mean_comparisons, s.rows) == (0.0, 0)
    assert node_depths(_chain()).tolist() == [0, 1, 1, 2, 2, 3, 3]


def test_comparisons_follow_each_rows_path():
    """Per row: the chain makes 1 (x0 <= 1), 2 (x1 <= 2) or 3 comparisons, the stump 1."""
    ens = _ensemble([_chain(), stump(1, 0.5)])
    X = np.array([[0, 9], [2, 1], [2, 5], [5, 0]], np.float32)
    assert comparisons(ens, X).tolist() == [1 + 1, 2 + 1, 3 + 1, 2 + 1]
    assert structure(ens, X).mean_comparisons == 12 / 4


def _walk(tree: Tree, x: np.ndarray) -> int:
    """Comparisons on the path of ``x``, one node at a time."""
    node, n = 0, 0
    while tree.left[node] != LEAF:
        n += 1
        go_left = x[tree.feature[node]] <= tree.threshold[node]
        node = tree.left[node] if go_left else tree.right[node]
    return n


@pytest.mark.parametrize("chunk", [64, deploy_size.CHUNK_ROWS])
def test_comparisons_equal_a_brute_force_walk(monkeypatch, chunk):
    """A trained forest of uneven trees (chunked or not): the vectorised count is the
    per-row, per-tree walk, row by row."""
    monkeypatch.setattr(deploy_size, "CHUNK_ROWS", chunk)
    from pace_cert.model.onnx_reader import ensemble_from_model

    X, y = small_problem(3, n_features=4, n_rows=200)
    model = zoo.make_model("rf", 6, 4, 0).fit(X, y)
    ens, _ = ensemble_from_model(zoo.export_onnx(model, 4))
    rng = np.random.default_rng(0)
    Z = np.vstack([X, rng.uniform(-1, 5, size=(50, 4)).astype(np.float32)])
    want = np.array([sum(_walk(t, z) for t in ens.trees) for z in Z])
    assert comparisons(ens, Z).tolist() == want.tolist()
    s = structure(ens, Z)
    assert s.mean_comparisons == pytest.approx(want.mean(), rel=1e-15)
    assert s.internal_nodes == sum(int((t.left != LEAF).sum()) for t in ens.trees)
    assert s.leaves == s.internal_nodes + s.trees  # binary trees


def test_a_model_without_trees_makes_no_comparison():
    ens = Ensemble((), np.zeros(0), np.zeros(2), np.array([0, 1]), n_features=2)
    s = structure(ens, np.ones((5, 2), np.float32))
    assert (s.trees, s.leaves, s.internal_nodes, s.max_depth, s.mean_comparisons) == (
        0,
        0,
        0,
        0,
        0.0,
    )


@pytest.fixture(scope="module")
def two_models():
    X, y = small_problem(1, n_features=3, n_rows=300)
    big = zoo.export_onnx(zoo.make_model("rf", 8, 3, 0).fit(X, y), 3).SerializeToString()
    small = zoo.export_onnx(zoo.make_model("rf", 2, 2, 0).fit(X, y), 3).SerializeToString()
    return big, small, X


def test_latency_is_measured_for_both_models(two_models):
    """Only that the numbers exist and are positive: no test depends on speed."""
    big, small, X = two_models
    lat = measure_latency(big, small, X, seconds=0.5)
    assert lat is not None and not lat.same_model
    for v in (*lat.batch1_us, *lat.per_row_us):
        assert np.isfinite(v) and v > 0
    assert 1 <= lat.repeats <= deploy_size.MAX_REPEATS
    assert deploy_size.MIN_CALLS <= lat.calls <= deploy_size.MAX_CALLS
    assert 1 <= lat.batch_rows <= len(X)
    assert lat.threads == 1 and lat.onnxruntime


def test_the_same_file_is_measured_once(two_models):
    big, _, X = two_models
    lat = measure_latency(big, big, X, seconds=0.5)
    assert lat is not None and lat.same_model
    assert lat.batch1_us[0] == lat.batch1_us[1] and lat.per_row_us[0] == lat.per_row_us[1]


@pytest.mark.parametrize("seconds", [0.0, -1.0, float("nan"), deploy_size.MIN_LATENCY_SECONDS / 2])
def test_no_time_no_latency(two_models, seconds):
    big, small, X = two_models
    assert measure_latency(big, small, X, seconds) is None
    assert measure_latency(big, small, X[:0]) is None


# ---------------------------------------------------------------- compress states it

TINY = ("seeds", "rf", 4, 1)  # merged and proved minimal within seconds


def _compress(zoo_model, out, certs):
    from pace_cert.app import run_compress
    from pace_cert.settings import CompressConfig

    model, data = zoo_model(*TINY)
    cfg = CompressConfig.of(eta=0.1, delta=0.1, time_limit=120)
    return run_compress(model, data, out, cfg, on_commit=certs.append), cfg


@pytest.fixture(scope="module")
def tiny(zoo_model, tmp_path_factory):
    """(outcome, config, every certificate committed) of a run on a tiny forest."""
    certs: list = []
    res, cfg = _compress(zoo_model, tmp_path_factory.mktemp("deploy") / "out", certs)
    assert res.exit_code == 0
    return res, cfg, certs


def test_every_commit_states_the_sizes_the_last_one_the_latency(tiny, zoo_model):
    """Sizes at every commit (the files' own), latency at the final commit only."""
    from pace_cert.data import read_csv
    from pace_cert.model.onnx_reader import read_ensemble

    res, _, certs = tiny
    model, data = zoo_model(*TINY)
    assert len(certs) >= 2 and certs[-1] == res.certificate
    for cert in certs[:-1]:
        dep = cert.summary.deployment
        assert dep.latency_setup is None and "at the run's end" in dep.latency_note
        assert dep.before.latency_us_batch1 is None and dep.after.latency_us_per_row_batch is None
    dep = res.certificate.summary.deployment
    comp_path = res.out_dir / "compressed.onnx"
    orig, _ = read_ensemble(model)
    comp, _ = read_ensemble(comp_path)
    X = read_csv(data, orig.classes, orig.n_features).X
    for stated, ens, path in ((dep.before, orig, model), (dep.after, comp, comp_path)):
        want = structure(ens, X)
        got = (stated.trees, stated.leaves, stated.internal_nodes, stated.max_depth)
        assert got == (want.trees, want.leaves, want.internal_nodes, want.max_depth)
        assert stated.mean_comparisons == want.mean_comparisons
        assert stated.onnx_bytes == path.stat().st_size
        for v in (stated.latency_us_batch1, stated.latency_us_per_row_batch):
            assert np.isfinite(v) and v > 0
    s = res.certificate.summary
    assert (dep.after.trees, dep.after.leaves) == (s.trees_after, s.leaves_after)
    assert dep.rows == len(X) and dep.latency_note is None
    setup = dep.latency_setup
    assert (setup.intra_op_threads, setup.inter_op_threads) == (1, 1)
    assert 1 <= setup.batch_rows <= len(X) and setup.batch1_calls >= 1 and setup.onnxruntime


def test_the_summary_and_json_state_before_and_after(tiny, zoo_model, capsys):
    from pace_cert.cli.compress_cmd import _say_result, compress_summary

    res, cfg, _ = tiny
    model, _ = zoo_model(*TINY)
    dep = res.certificate.summary.deployment
    lines = compress_summary(res, cfg, model).splitlines()
    size = next(ln for ln in lines if ln.startswith("size: "))
    assert size.startswith(f"size: {dep.before.trees} -> {dep.after.trees} trees, ")
    assert f"{dep.before.internal_nodes} -> {dep.after.internal_nodes} internal nodes" in size
    assert "comparisons/row" in size and size.endswith(" ONNX")
    latency = next(ln for ln in lines if ln.startswith("latency"))
    assert "1 thread, measured" in latency and "at a batch of 1" in latency
    _say_result(res, cfg, model, True, 0)
    js = json.loads(capsys.readouterr().out)["summary"]["deployment"]
    assert js["after"]["internal_nodes"] == dep.after.internal_nodes
    assert js["before"]["onnx_bytes"] == dep.before.onnx_bytes
    assert js["latency_setup"]["batch_rows"] == dep.latency_setup.batch_rows


def test_the_guard_rewrite_states_no_latency(tiny, tmp_path):
    """A run the process guard ends: the last commit taken while the run went on is
    rewritten, and its latency stays null."""
    from pace_cert.app import guard_outcome
    from pace_cert.driver.result import StopReason
    from pace_cert.plumbing.outputs import Committed, OutputDir

    _, _, certs = tiny
    output = OutputDir(tmp_path)
    blob = (certs[0].model_dump_json() + "\n").encode()
    output.commit({"certificate.json": blob}, Committed(2, "x", certificate=certs[0]))
    res = guard_outcome(output, StopReason.guard("l1", "SIGTERM", None))
    dep = res.certificate.summary.deployment
    assert res.certificate.summary.stop_reason and dep.latency_setup is None
    assert dep.after.latency_us_batch1 is None and dep.latency_note


def test_no_time_left_no_latency(zoo_model, tmp_path, monkeypatch):
    """The run's budget decides: with no time left the latency is null, said why."""
    from pace_cert import app
    from pace_cert.plumbing.budget import Budget

    assert app.final_latency(Budget.seconds(-1.0)) == 0.0
    assert app.final_latency(Budget.unlimited()) == deploy_size.LATENCY_SECONDS
    assert app.latency_reserve(Budget.seconds(10.0)) == pytest.approx(0.2, abs=0.01)
    assert app.latency_reserve(Budget.seconds(1e4)) == app.LATENCY_RESERVE_CAP
    monkeypatch.setattr(app, "final_latency", lambda budget: 0.0)
    res, _ = _compress(zoo_model, tmp_path / "out", [])
    dep = res.certificate.summary.deployment
    assert dep.latency_setup is None and dep.after.latency_us_per_row_batch is None
    assert "time limit left 0.00 s" in dep.latency_note
    assert dep.after.internal_nodes < dep.before.internal_nodes  # sizes all the same
