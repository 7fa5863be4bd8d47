"""Data columns are matched to the model's features by name whenever the model records
names (a fitted estimator's ``feature_names_in_``, kept in the ONNX metadata), exactly:
reordered columns give the same certificate; a renamed, missing or extra column is
refused naming the columns on both sides (exit 3, nothing written). A model that records
no names reads columns by position, and the certificate says which rule was used."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from typer.testing import CliRunner

import pace_cert
from pace_cert.cli.main import app
from pace_cert.errors import InputError
from pace_cert.model.onnx_graph import FEATURE_NAMES_KEY

pd = pytest.importorskip("pandas")

RUN = dict(mode="prune", eta=0.1, time_limit=120, threads=1, quiet=True)
NAMES = ["age", "b c", "dose", "e"]


def frame(n: int = 160) -> tuple:
    """Four integer features whose roles differ (the label reads 'age' and 'dose')."""
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.integers(0, 4, size=(n, 4)).astype(float), columns=NAMES)
    y = ((2 * X["age"] - X["dose"] + rng.normal(size=n)) > 2).astype(int).to_numpy()
    return X, y


@pytest.fixture(scope="module")
def forest():
    from sklearn.ensemble import RandomForestClassifier

    X, y = frame()
    return RandomForestClassifier(6, max_depth=2, random_state=0).fit(X, y), X, y


def test_reordered_dataframe_gives_the_same_certificate(forest):
    est, X, y = forest
    a = pace_cert.compress(est, X, y, **RUN)
    b = pace_cert.compress(est, X[X.columns[::-1]], y, **RUN)
    assert a.certificate.data.columns_matched_by == "name"
    assert b.certificate.data.feature_names == NAMES
    assert a.certificate.data.sha256 == b.certificate.data.sha256  # the same CSV, model order
    assert a.certificate.region == b.certificate.region
    assert a.summary["trees"] == b.summary["trees"]
    assert a.files["compressed.onnx"] == b.files["compressed.onnx"]
    # predicting reads the frame by name too
    Xr = X[X.columns[::-1]]
    assert np.array_equal(a.predict(Xr), a.predict(X))
    assert np.array_equal(a.predict(X), est.predict(X)) or a.certificate.region.eta > 0


@pytest.mark.parametrize(
    "change,needles",
    [
        ("renamed", ["'age'", "'r'", "by name"]),
        ("missing", ["no column 'e'"]),
        ("extra", ["'extra' not among the features"]),
        ("duplicate", ["'age' appears more than once"]),
    ],
)
def test_renamed_missing_or_extra_columns_are_refused(forest, tmp_path, change, needles):
    est, X, y = forest
    if change == "renamed":
        bad = X[X.columns[::-1]].rename(columns={"age": "r"})
    elif change == "missing":
        bad = X.drop(columns=["e"])
    elif change == "extra":
        bad = X.assign(extra=1.0)
    else:
        bad = pd.concat([X, X[["age"]]], axis=1)
    out = tmp_path / "out"
    with pytest.raises(InputError) as e:
        pace_cert.compress(est, bad, y, out=out, **RUN)
    msg = str(e.value)
    assert e.value.exit_code == 3 and "\n" not in msg and msg.startswith("<DataFrame>")
    for needle in needles:
        assert needle in msg, msg
    assert not out.exists()


def test_predict_refuses_a_renamed_frame(forest):
    est, X, y = forest
    res = pace_cert.compress(est, X, y, **RUN)
    with pytest.raises(InputError, match="'r'"):
        res.predict(X.rename(columns={"age": "r"}))


def test_a_model_without_names_reads_by_position_and_says_so():
    from sklearn.ensemble import RandomForestClassifier

    X, y = frame()
    est = RandomForestClassifier(6, max_depth=2, random_state=0).fit(X.to_numpy(), y)
    res = pace_cert.compress(est, X.rename(columns={"age": "r"}), y, **RUN)
    assert res.certificate.data.columns_matched_by == "position"
    assert res.certificate.data.feature_names == ["r", "b c", "dose", "e"]
    assert FEATURE_NAMES_KEY not in {p.key for p in res.onnx.metadata_props}


def write_csv(path, X, y) -> None:
    X.assign(target=y).to_csv(path, index=False)


def test_cli_matches_a_csv_header_by_the_names_the_model_records(forest, tmp_path):
    from pace_cert.export import estimator_to_onnx

    est, X, y = forest
    model = tmp_path / "m.onnx"
    model.write_bytes(estimator_to_onnx(est).SerializeToString())
    assert (
        json.loads({p.key: p.value for p in onnx.load(model).metadata_props}[FEATURE_NAMES_KEY])
        == NAMES
    )
    write_csv(tmp_path / "a.csv", X, y)
    write_csv(tmp_path / "b.csv", X[["e", "dose", "age", "b c"]], y)
    cli = CliRunner()
    base = ["--eta", "0.1", "--mode", "prune", "--threads", "1", "--time-limit", "120"]
    for name in ("a", "b"):
        data, out = tmp_path / f"{name}.csv", tmp_path / f"out-{name}"
        r = cli.invoke(app, ["compress", str(model), "--data", str(data), "--out", str(out), *base])
        assert r.exit_code in (0, 2), r.output
    ca = json.loads((tmp_path / "out-a" / "certificate.json").read_text())
    cb = json.loads((tmp_path / "out-b" / "certificate.json").read_text())
    assert ca["region"] == cb["region"] and ca["data"]["columns_matched_by"] == "name"
    assert ca["compressed"]["trees"] == cb["compressed"]["trees"]
    comp = tmp_path / "out-a" / "compressed.onnx"
    assert FEATURE_NAMES_KEY in {p.key for p in onnx.load(comp).metadata_props}
    # verify --data reads the reordered CSV by name as well
    files = [str(model), str(comp), str(tmp_path / "out-a" / "certificate.json")]
    r = cli.invoke(app, ["verify", *files, "--data", str(tmp_path / "b.csv")])
    assert r.exit_code == 0, r.output
    # a renamed column: exit 3, one line naming both sides, nothing written
    write_csv(tmp_path / "c.csv", X.rename(columns={"dose": "dosage"}), y)
    r = cli.invoke(app, ["compress", str(model), "--data", str(tmp_path / "c.csv"), "--out",
                         str(tmp_path / "out-c"), *base])  # fmt: skip
    assert r.exit_code == 3
    assert "'dose'" in r.output and "'dosage'" in r.output
    assert not (tmp_path / "out-c").exists()
    r = cli.invoke(app, ["verify", *files, "--data", str(tmp_path / "c.csv")])
    assert r.exit_code == 3 and "'dosage'" in r.output


def test_recorded_names_that_do_not_fit_the_input_are_refused(forest, tmp_path):
    from pace_cert.export import estimator_to_onnx

    est, X, y = forest
    proto = estimator_to_onnx(est)
    for p in proto.metadata_props:
        if p.key == FEATURE_NAMES_KEY:
            p.value = json.dumps(NAMES[:3])
    model = tmp_path / "m.onnx"
    model.write_bytes(proto.SerializeToString())
    write_csv(tmp_path / "a.csv", X, y)
    r = CliRunner().invoke(app, ["compress", str(model), "--data", str(tmp_path / "a.csv"), "--out",
                                 str(tmp_path / "o")])  # fmt: skip
    assert r.exit_code == 3 and "names 3 features" in r.output


def test_a_regressor_is_named_as_such():
    from sklearn.ensemble import RandomForestRegressor

    X, y = frame()
    reg = RandomForestRegressor(3, max_depth=2, random_state=0).fit(X, y.astype(float))
    with pytest.raises(InputError, match="is a regressor, not a classifier"):
        pace_cert.compress(reg, X, y, **RUN)


def test_column_order_is_exact_or_lightgbm_whitespace_one_to_one():
    from pace_cert.data import ColumnMismatch, column_order

    assert column_order(["b", "a"], ["a", "b"]) == [1, 0]
    # LightGBM records "b c" as "b_c": matched when the pairing is one to one
    assert column_order(["b c", "a"], ["a", "b_c"]) == [1, 0]
    with pytest.raises(ColumnMismatch, match="no column 'a'"):
        column_order(["b c", "x"], ["a", "b_c"])
    with pytest.raises(ColumnMismatch):  # "b c" and "b_c" would both be "b_c"
        column_order(["b c", "b_c"], ["b_c", "a"])
