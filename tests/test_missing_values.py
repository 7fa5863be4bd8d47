"""Rows with missing values (issue 47, item 6): models trained with NaN come with NaN in
their data. Such rows are read (an empty cell or ``nan``), counted outside every proof,
kept out of everything that builds the region, and the rows whose label the compressed
model changes are counted with onnxruntime."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from typer.testing import CliRunner

from pace_cert.cli.main import app
from pace_cert.model.runtime import labels, session

runner = CliRunner()
NAMES = ("age", "priors", "score")


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def _data(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three integer columns, the label a threshold on two of them; NaN in about 10% of
    the rows of column 1 (and one row with NaN in two columns)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 3).astype(np.int64)
    X[rng.random(n) < 0.1, 1] = np.nan
    X[0, [0, 2]] = np.nan
    return X, y


def _write_csv(path: Path, X: np.ndarray, y: np.ndarray, nan_as: str = "") -> Path:
    with open(path, "w") as f:
        f.write(",".join([*NAMES, "target"]) + "\n")
        for r, t in zip(X, y):
            cells = [nan_as if np.isnan(v) else f"{v:g}" for v in r]
            f.write(",".join([*cells, str(t)]) + "\n")
    return path


def _needs(*mods: str) -> None:
    for m in mods:
        pytest.importorskip(m, reason=f"{m} is not installed (pip install -e '.[boosters]')")


@pytest.fixture(scope="module")
def lgbm_files(tmp_path_factory) -> tuple[Path, Path, np.ndarray]:
    """A LightGBM model trained on rows with NaN, its CSV (NaN as empty cells, as
    pandas writes them) and the rows."""
    _needs("lightgbm", "onnxmltools")
    from tests.booster_models import lgbm

    d = tmp_path_factory.mktemp("lgbm-nan")
    X, y = _data()
    _, model = lgbm(X, y, 4, 2)
    onnx.save(model, d / "model.onnx")
    return d / "model.onnx", _write_csv(d / "train.csv", X, y), X


def _changed(model: Path, comp: Path, X: np.ndarray) -> tuple[int, int]:
    """(rows with missing values, of them labelled differently), by onnxruntime."""
    Xm = X[np.isnan(X).any(axis=1)]
    lo = labels(session(model.read_bytes()), Xm)
    lc = labels(session(comp.read_bytes()), Xm)
    return len(Xm), int((lo != lc).sum())


def test_a_booster_trained_with_nan_is_compressed_and_its_nan_rows_counted(lgbm_files, tmp_path):
    model, data, X = lgbm_files
    out = tmp_path / "out"
    res = invoke("compress", model, "--data", data, "--out", out, "--time-limit", 120, "--quiet")
    assert res.exit_code == 0, (res.stdout, res.stderr)
    m, k = _changed(model, out / "compressed.onnx", X)
    assert m == int(np.isnan(X).any(axis=1).sum()) > 20
    assert f"; outside: {m} with missing values" in res.stdout
    assert f"{m} rows with missing values: outside every proof" in res.stdout
    line = f"{k} of {m} rows with missing values get a different label from the compressed model"
    assert line in res.stdout
    cert = json.loads((out / "certificate.json").read_text())
    cov = cert["region"]["coverage"]
    assert cov["rows"] == len(X) and cov["missing"] == m
    assert cov["inside"] + cov["missing"] + cov["outside_domain"] + cov["tie_band"] + cov[
        "low_confidence"
    ] + cov["implausible"] == len(X)
    assert cert["summary"]["missing_label_changes"] == k
    assert cert["region"]["samples_kept"] == cov["inside"]
    assert cert["data"]["feature_names"] == list(NAMES)
    # the feature names on the domain line and the narrowing by --integer infer
    assert "3 integer-valued (age, priors, score)" in res.stdout
    assert "--integer none" in res.stdout
    # verify --data reads the same file and counts the same
    v = invoke(
        "verify", model, out / "compressed.onnx", out / "certificate.json", "--data", data,
        "--probe", 200,
    )  # fmt: skip
    assert v.exit_code == 0, v.output
    assert f"{m} rows with missing values: outside every proof" in v.stdout
    assert line in v.stdout
    assert "checked: data coverage" in v.stdout  # the stated counts re-counted, equal


def test_nan_spelled_nan_reads_as_missing(lgbm_files, tmp_path):
    """``nan`` cells are missing values like empty ones (the same rows, the same counts);
    +-inf stays bad input."""
    from pace_cert.data import read_csv

    model, _, X = lgbm_files
    y = np.zeros(len(X), np.int64)
    a = read_csv(_write_csv(tmp_path / "a.csv", X, y, ""), np.array([0, 1]), 3)
    b = read_csv(_write_csv(tmp_path / "b.csv", X, y, "nan"), np.array([0, 1]), 3)
    assert np.array_equal(np.isnan(a.X), np.isnan(X)) and np.array_equal(np.isnan(b.X), np.isnan(X))
    assert a.n_missing == b.n_missing == int(np.isnan(X).any(axis=1).sum())
    inf = _write_csv(tmp_path / "inf.csv", X, y, "inf")
    res = invoke("compress", model, "--data", inf, "--out", tmp_path / "o")
    assert res.exit_code == 3 and "inf.csv" in res.stderr and "not finite" in res.stderr
    assert not (tmp_path / "o").exists()


def test_too_few_complete_rows_is_bad_input(lgbm_files, tmp_path):
    model, _, X = lgbm_files
    X = X[:5].copy()
    X[1:, 1] = np.nan
    data = _write_csv(tmp_path / "few.csv", X, np.zeros(5, np.int64))
    res = invoke("compress", model, "--data", data, "--out", tmp_path / "o")
    assert res.exit_code == 3, res.output
    assert "few.csv" in res.stderr and "0 data rows without missing values (of 5)" in res.stderr
    assert not (tmp_path / "o").exists()


def test_nan_rows_do_not_enter_the_region(lgbm_files, tmp_path):
    """Bounds, the integer domain and the plausibility forest are built from the
    complete rows only: the training box is theirs, and the rows with NaN are counted
    apart from those outside the domain or implausible."""
    from pace_cert.app import run_compress
    from pace_cert.settings import CompressConfig

    model, data, X = lgbm_files
    cfg = CompressConfig.of(delta=0.1, bounds="data", iforest_estimators=10, time_limit=120)
    res = run_compress(model, data, tmp_path / "out", cfg)
    complete = X[~np.isnan(X).any(axis=1)]
    dom = res.certificate.region.domain
    assert dom["bounds"]["lower"] == [float(v) for v in complete.min(axis=0)]
    assert dom["bounds"]["upper"] == [float(v) for v in complete.max(axis=0)]
    assert dom["integer_features"] == [0, 1, 2]
    cov = res.certificate.region.coverage
    assert cov.missing == len(X) - len(complete) and cov.outside_domain == 0
    assert cov.inside + cov.implausible + cov.low_confidence + cov.tie_band == len(complete)


def test_an_imputer_pipeline_says_its_nan_behaviour_differs(tmp_path):
    """A Pipeline's Imputer is folded away: the compressed model reads the raw input, so
    its labels of rows with NaN follow its own trees. compress, verify and the report say
    so, with the count measured by onnxruntime."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.impute import SimpleImputer

    from tests.booster_models import pipeline

    X, y = _data(seed=1)
    rf = RandomForestClassifier(n_estimators=6, max_depth=2, random_state=0)
    _, model = pipeline(X, y, [SimpleImputer(strategy="constant", fill_value=3.0)], rf)
    onnx.save(model, tmp_path / "pipe.onnx")
    data = _write_csv(tmp_path / "train.csv", X, y)
    out = tmp_path / "out"
    res = invoke(
        "compress", tmp_path / "pipe.onnx", "--data", data, "--out", out, "--time-limit", 120,
        "--quiet",
    )  # fmt: skip
    assert res.exit_code == 0, (res.stdout, res.stderr)
    m, k = _changed(tmp_path / "pipe.onnx", out / "compressed.onnx", X)
    assert f"{k} of {m} rows with missing values get a different label" in res.stdout
    assert "behaviour on inputs with missing values differs from the original's" in res.stdout
    rep = invoke("report", out / "certificate.json", "--out", tmp_path / "r.html")
    assert rep.exit_code == 0, rep.output
    html = (tmp_path / "r.html").read_text()
    assert "behaviour on inputs with missing values differs from the original" in html
    assert f"{k} of {m} rows with missing values get a different label" in html
