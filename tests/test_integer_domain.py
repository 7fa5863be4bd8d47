"""Integer-valued features (``--integer infer``): the certificate covers integer inputs only
for those features, and on them it must hold exactly (brute force, onnxruntime)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from typer.testing import CliRunner

from pace_cert.app import run_compress
from pace_cert.cert.certificate import Certificate
from pace_cert.cert.verify import run_verify
from pace_cert.cli.main import app
from pace_cert.model.ensemble import LEAF, Tree
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.model.runtime import labels, session
from pace_cert.region.domain import build_domain, infer_integer
from pace_cert.region.plausibility import load_artifact, plausibility_scores
from pace_cert.settings import CompressConfig

from .helpers import write_small_problem


def _stump(th: float) -> Tree:
    return Tree(
        np.array([0, LEAF, LEAF]),
        np.array([th, 0, 0], np.float32),
        np.array([1, LEAF, LEAF]),
        np.array([2, LEAF, LEAF]),
        np.zeros((3, 2)),
    )


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("bounded", [False, True])
def test_integer_cells_match_brute_force(seed, bounded):
    """Every integer lands in an allowed cell whose representative is an integer of that
    cell; a cell is allowed iff it holds an integer (within the bounds)."""
    rng = np.random.default_rng(seed)
    th = np.r_[rng.uniform(-2, 8, 6), rng.integers(-2, 8, 3), [2.3, 2.6, 2.9]]
    dom = build_domain(
        [_stump(t) for t in th],
        1,
        integer=np.array([True]),
        lower=np.array([-0.5]) if bounded else None,
        upper=np.array([6.5]) if bounded else None,
    )
    reps = dom.reps[0]
    ints = np.arange(-20, 30, dtype=np.float32)
    inside = (ints >= -0.5) & (ints <= 6.5) if bounded else np.ones(len(ints), bool)
    cells = dom.cell_index(ints[:, None])[:, 0]
    holds = np.zeros(len(reps), bool)
    holds[cells[inside]] = True
    assert np.array_equal(dom.allowed(0), holds)
    for k in np.flatnonzero(dom.allowed(0)):
        r = reps[k]
        assert r == np.round(r)
        assert dom.cell_index(np.array([[r]], np.float32))[0, 0] == k
    assert dom.contains(ints[:, None]).tolist() == inside.tolist()
    assert not dom.contains(np.array([[2.5]], np.float32))[0]


def test_integer_cells_beyond_float32_integer_precision():
    """Above 2**24 every float32 is an integer: those cells stay, with integer
    representatives inside them; integers there fall in allowed cells."""
    big = [2.0**24 + 0.5, 2.0**25, 2.0**25 + 4, 3e30, -(2.0**26)]
    dom = build_domain([_stump(t) for t in big], 1, integer=np.array([True]))
    reps = dom.reps[0]
    for k in np.flatnonzero(dom.allowed(0)):
        assert reps[k] == np.round(reps[k])
        assert dom.cell_index(np.array([[reps[k]]], np.float32))[0, 0] == k
    pts = np.array([[2.0**25 + 2], [2.0**26], [3e30], [3.1e30], [-(2.0**26) - 4]], np.float32)
    assert dom.contains(pts).all()
    assert all(dom.allowed(0)[dom.cell_index(pts)[:, 0]])


def test_infer_integer_ignores_fractional_columns():
    X = np.array([[0, 1.5, 3], [2, 2.0, -4]], np.float32)
    assert infer_integer(X).tolist() == [True, False, True]


def _problem(root):
    write_small_problem(root, "rf", 20, 2, 1, n_rows=200)


def _margin(path, P):
    ens, _ = read_ensemble(path)
    top = np.sort(ens.scores(P), axis=1)
    return (top[:, -1] - top[:, -2]) / ens.margin_scale


@pytest.mark.parametrize("integer", ["infer", "none"])
def test_certificate_holds_on_its_domain(tmp_path, integer):
    """compress (prune, eta = delta = 0.1): on every integer point of a box around the data
    (the whole integer domain: no tree splits outside it), or on a fine grid of floats,
    onnxruntime's labels agree wherever the original is confident and the point
    plausible; verify passes (``--exhaustive`` on the integer domain); certificate and
    report state the domain."""
    _problem(tmp_path)
    model, out = tmp_path / "model.onnx", tmp_path / "out"
    cfg = CompressConfig.of(
        mode="prune", eta=0.1, delta=0.1, integer=integer, time_limit=120, iforest_estimators=10
    )
    res = run_compress(model, tmp_path / "train.csv", out, cfg)
    assert res.exit_code == 0
    cert = Certificate.model_validate_json((out / "certificate.json").read_text())
    assert cert.region.domain["integer_features"] == ([0, 1, 2] if integer == "infer" else [])
    if integer == "infer":
        grid = np.arange(-2, 7, dtype=np.float32)  # every integer the trees can tell apart
    else:  # every cell: between the data's integers too
        grid = np.arange(-2, 7, 0.25, dtype=np.float32)
    P = np.array(list(itertools.product(grid, repeat=3)), np.float32)
    lo = labels(session(model.read_bytes()), P)
    lc = labels(session((out / "compressed.onnx").read_bytes()), P)
    forest = load_artifact(out / "plausibility.json")
    inside = (_margin(model, P) > 0.1) & (plausibility_scores(forest, P) >= forest.delta_abs)
    assert inside.sum() > len(P) // 4
    assert not np.any((lo != lc) & inside), "a disagreement inside the certified region"
    exhaustive = integer == "infer"  # the float32 domain has 8 M cells here
    rep = run_verify(
        model, out / "compressed.onnx", out / "certificate.json", exhaustive=exhaustive
    )
    assert rep.status == "verified", rep.message
    assert (rep.exhaustive_cells is not None) == exhaustive
    assert rep.domain == cert.region.domain


def _compress_args(root, out, *extra: str) -> list[str]:
    """``pace-cert compress`` on ``root``'s model and data into ``out``."""
    return [
        "compress",
        str(root / "model.onnx"),
        "--data",
        str(root / "train.csv"),
        "--out",
        str(out),
        *extra,
    ]


def test_integer_domain_is_smaller_and_printed(tmp_path):
    """With plausibility (isolation-forest thresholds fall between the data's integers) the
    integer domain keeps fewer cells than the float32 one, and both command outputs say
    which inputs the certificate covers."""
    _problem(tmp_path)
    runner = CliRunner()
    outs = {}
    for integer in ("infer", "none"):
        out = tmp_path / integer
        r = runner.invoke(
            app,
            _compress_args(
                tmp_path,
                out,
                *("--mode", "prune", "--eta", "0.1", "--delta", "0.1"),
                *("--iforest-trees", "10", "--integer", integer, "--quiet"),
            ),
        )
        assert r.exit_code == 0, r.output
        outs[integer] = Certificate.model_validate_json((out / "certificate.json").read_text())
        word = "3 integer-valued" if integer == "infer" else "3 any float32"
        assert word in r.output
        v = runner.invoke(
            app,
            [
                "verify",
                str(tmp_path / "model.onnx"),
                str(out / "compressed.onnx"),
                str(out / "certificate.json"),
            ],
        )
        assert v.exit_code == 0, v.output
        assert word in v.output
    ci = outs["infer"].region.domain["allowed_cells_per_feature"]
    cn = outs["none"].region.domain["allowed_cells_per_feature"]
    assert all(a <= 5 for a in ci)  # data 0..3: at most one cell per integer -1..3 + above
    assert all(a < b for a, b in zip(ci, cn))
    bad = runner.invoke(app, _compress_args(tmp_path, tmp_path / "bad", "--integer", "yes"))
    assert bad.exit_code == 3 and "--integer" in bad.output
    assert not (tmp_path / "bad").exists()
