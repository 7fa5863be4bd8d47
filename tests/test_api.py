"""The library's top-level API (issue 69): ``pace_cert.compress`` / ``verify`` /
``frontier`` on fitted estimators and DataFrames, the :class:`CertifiedModel` result,
bad input as one exception type, progress in a notebook, a KeyboardInterrupt, and
``to_sklearn`` on one-tree models. Tiny models, prune mode: each call takes seconds."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import types

import numpy as np
import pytest
from typer.testing import CliRunner

import pace_cert
from pace_cert.cli.main import app
from pace_cert.errors import InputError

pd = pytest.importorskip("pandas")

FAST = dict(mode="prune", time_limit=120, quiet=True)


def frame(seed: int = 0, n: int = 150) -> tuple:
    """A DataFrame of 3 integer-valued features (names with a space) and labels."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.integers(0, 4, size=(n, 3)).astype(float), columns=["age", "b c", "d"])
    y = ((X["age"] + X["b c"] + rng.normal(size=n)) > 3).astype(int).to_numpy()
    return X, y


def estimator(family: str, X, y):
    if family == "rf":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(8, max_depth=2, random_state=0).fit(X, y)
    if family == "lgbm":
        import lightgbm

        params = dict(max_depth=2, num_leaves=4, verbose=-1, n_jobs=1, min_child_samples=2)
        return lightgbm.LGBMClassifier(n_estimators=5, **params).fit(X, y)
    import xgboost

    return xgboost.XGBClassifier(n_estimators=5, max_depth=2, n_jobs=1).fit(X, y)


def cli_verify(d) -> object:
    files = [d / "original.onnx", d / "compressed.onnx", d / "certificate.json"]
    return CliRunner().invoke(app, ["verify", *map(str, files)])


@pytest.mark.parametrize("family,eta", [("rf", 0.1), ("lgbm", 0.5), ("xgb", 0.5)])
def test_fitted_estimator_and_dataframe_in_saved_directory_verifies(tmp_path, family, eta):
    """The issue's done-when: a fitted RandomForestClassifier, LGBMClassifier and
    XGBClassifier from a DataFrame, saved, checked by ``pace-cert verify`` (exit 0)."""
    X, y = frame()
    est = estimator(family, X, y)
    res = pace_cert.compress(est, X, y, eta=eta, **FAST)
    assert isinstance(res, pace_cert.CertifiedModel)
    assert res.exit_code == 0 and res.certified and not res.interrupted
    before, after = res.summary["trees"]
    assert after < before == res.certificate.original.trees
    cert = res.certificate
    assert cert.data.feature_names == ["age", "b c", "d"]
    assert cert.data.path == "<DataFrame>" and cert.original.path == "original.onnx"
    assert res.onnx.graph.node  # the ModelProto
    from pace_cert.model.runtime import labels, session

    X32 = X.to_numpy(np.float32)
    assert np.array_equal(res.predict(X), labels(session(res.onnx_bytes), X32))
    assert np.array_equal(res.predict(X32), res.predict(X))
    d = res.save(tmp_path / "saved")
    assert sorted(os.listdir(d)) == ["certificate.json", "compressed.onnx", "original.onnx"]
    out = cli_verify(d)
    assert out.exit_code == 0, out.output
    assert "verified" in out.stdout


def test_verify_forms_and_data_replay(tmp_path):
    X, y = frame(1)
    est = estimator("rf", X, y)
    res = pace_cert.compress(est, X, y, eta=0.1, **FAST)
    rep = pace_cert.verify(res, X=X, y=y)  # the same DataFrame: the same CSV bytes
    assert rep.verified and rep.data_same_file and rep.data_rows == len(X)
    d = res.save(tmp_path / "r")
    assert pace_cert.verify(d).verified
    orig = res.original  # the certified bytes, with the two files
    assert pace_cert.verify(orig, d / "compressed.onnx", d / "certificate.json").verified
    with pytest.raises(InputError, match="estimator exported again"):
        pace_cert.verify(est, d / "compressed.onnx", d / "certificate.json")
    again = pace_cert.CertifiedModel.load(d)
    assert again.files == res.files and again.original == res.original


def test_options_flow_through_the_settings_table(tmp_path):
    """Keywords are the CLI's flags (iforest_trees/iforest_samples mapped to their
    fields) plus any setting of the table; an unknown one is the table's error."""
    from pace_cert.api import config_of

    cfg = config_of({"iforest_trees": 7, "iforest_samples": 0, "synth_size": 0})
    assert cfg.iforest_estimators == 7 and cfg.iforest_max_samples == "auto"
    assert cfg.tuning.pace.synth_size == 0
    X, y = frame()
    est = estimator("rf", X, y)
    with pytest.raises(InputError) as e:
        pace_cert.compress(est, X, y, no_such_option=1, **FAST)
    assert str(e.value) == "no_such_option is not a setting" and e.value.exit_code == 3
    with pytest.raises(InputError, match=r"^--eta must be >= 0, got -1"):
        pace_cert.compress(est, X, y, eta=-1, **FAST)


@pytest.mark.parametrize(
    "case,needle",
    [
        ("model", "expected a fitted estimator"),
        ("unfitted", "not fitted"),
        ("no-target", "no labels"),
        ("target-and-y", "has a column 'target' and y is given"),
        ("text-column", "column 'd' is not numeric"),
        ("short-y", "y has 10 labels but X has 150 rows"),
        ("array-no-y", "y is needed"),
        ("inf", "<DataFrame>: data row 3"),
        ("label", "is not one of the model's classes"),
        ("one-d", "X must be 2-D"),
    ],
)
def test_bad_input_is_one_exception_with_one_line_and_nothing_written(tmp_path, case, needle):
    from sklearn.ensemble import RandomForestClassifier

    X, y = frame()
    est = estimator("rf", X, y)
    args: tuple = (est, X, y)
    if case == "model":
        args = ({"not": "a model"}, X, y)
    elif case == "unfitted":
        args = (RandomForestClassifier(), X, y)
    elif case == "no-target":
        args = (est, X, None)
    elif case == "target-and-y":
        args = (est, X.assign(target=y), y)
    elif case == "text-column":
        args = (est, X.assign(d="x"), y)
    elif case == "short-y":
        args = (est, X, y[:10])
    elif case == "array-no-y":
        args = (est, X.to_numpy(), None)
    elif case == "inf":
        bad = X.copy()
        bad.iloc[2, 0] = np.inf
        args = (est, bad, y)
    elif case == "label":
        args = (est, X, y + 5)
    elif case == "one-d":
        args = (est, X.to_numpy()[:, 0], y)
    out = tmp_path / "out"
    with pytest.raises(InputError) as e:
        pace_cert.compress(*args, out=out, **FAST)
    assert e.value.exit_code == 3
    msg = str(e.value)
    assert needle in msg and "\n" not in msg and "/tmp" not in msg and "pace-cert-" not in msg
    assert not out.exists()  # nothing half-written


def test_private_temp_dirs_removed_and_concurrent_calls(tmp_path, monkeypatch):
    """Each call stages its files in a directory of its own and removes it; two calls
    at once both succeed."""
    import tempfile

    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    X, y = frame(2)
    est = estimator("rf", X, y)
    results: list = []
    calls = [
        threading.Thread(
            target=lambda: results.append(pace_cert.compress(est, X, y, eta=0.1, **FAST))
        )
        for _ in range(2)
    ]
    for t in calls:
        t.start()
    for t in calls:
        t.join()
    assert len(results) == 2 and all(r.exit_code == 0 for r in results)
    with pytest.raises(InputError):
        pace_cert.compress(est, X, None, **FAST)
    assert list(base.iterdir()) == []


def test_keyboard_interrupt_returns_the_best_certified_model_so_far(tmp_path):
    """A KeyboardInterrupt (raised here from the commit callback, right after the first
    smaller certified model was committed: no timing) returns that model, marked
    interrupted, its certificate saying how the run ended; it verifies."""
    X, y = frame(3)
    from sklearn.ensemble import RandomForestClassifier

    rf = RandomForestClassifier(20, max_depth=3, random_state=0).fit(X, y)
    seen: list = []

    def interrupt(cert) -> None:
        seen.append(cert.summary.trees_after)
        if cert.summary.certified:
            raise KeyboardInterrupt

    res = pace_cert.compress(rf, X, y, eta=0.1, on_commit=interrupt, out=tmp_path / "o", **FAST)
    assert res.interrupted and res.exit_code == 0 and res.certified
    assert res.summary["trees"] == (20, seen[-1]) and seen[-1] < 20
    assert "KeyboardInterrupt" in res.certificate.summary.stop_reason
    assert "interrupted" in repr(res)
    on_disk = pace_cert.CertifiedModel.load(tmp_path / "o", res.original)
    assert on_disk.files == res.files  # the out directory holds the same complete set
    assert pace_cert.verify(res).verified

    def at_once(cert) -> None:  # the original's set only: returned unchanged (exit 2)
        raise KeyboardInterrupt

    res = pace_cert.compress(rf, X, y, eta=0.1, on_commit=at_once, **FAST)
    assert res.interrupted and res.exit_code == 2 and not res.certified
    assert res.files["compressed.onnx"] == res.original


def test_progress_in_a_notebook_updates_one_area_and_quiet_says_nothing(monkeypatch, capsys):
    """In a Jupyter kernel the progress is one display area updated in place; on a
    terminal lines on stderr; ``quiet=True``: nothing."""
    shown: list = []

    class Handle:
        def update(self, obj) -> None:
            shown.append(repr(obj))

    def display(obj, display_id=False):
        assert display_id is True
        shown.append(repr(obj))
        return Handle()

    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: types.SimpleNamespace(kernel=object())  # type: ignore[attr-defined]
    disp = types.ModuleType("IPython.display")
    disp.display = display  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", disp)
    X, y = frame(4)
    est = estimator("rf", X, y)
    res = pace_cert.compress(est, X, y, eta=0.1, mode="prune", time_limit=120)
    assert res.certified
    assert len(shown) > 2 and all("best:" in s for s in shown)
    assert any("trees certified" in s for s in shown)
    assert capsys.readouterr().err == ""
    res.summary._repr_html_()
    assert "<table>" in res._repr_html_()

    monkeypatch.delitem(sys.modules, "IPython")
    pace_cert.compress(est, X, y, eta=0.1, mode="prune", time_limit=120)
    err = capsys.readouterr().err
    assert "best so far" in err and "s]" in err  # the CLI's lines
    pace_cert.compress(est, X, y, eta=0.1, **FAST)
    assert capsys.readouterr().err == ""


def test_summary_pairs_every_before_after_field_of_the_certificate():
    X, y = frame()
    res = pace_cert.compress(estimator("rf", X, y), X, y, eta=0.1, **FAST)
    s, cert = res.summary, res.certificate
    fields = type(cert.summary).model_fields
    pairs = {k.removesuffix("_before") for k in fields if k.endswith("_before")}
    pairs = {u for u in pairs if f"{u}_after" in fields}
    assert pairs and pairs <= set(s.sizes)
    for u in pairs:
        assert s[u] == (getattr(cert.summary, f"{u}_before"), getattr(cert.summary, f"{u}_after"))
    assert s.facts["fidelity"] == cert.summary.fidelity
    text = repr(s)
    assert "trees" in text and "before" in text and "fidelity" in text


# ------------------------------------------------- issue 73: a new user's findings


@pytest.mark.parametrize("kind", ["rf", "pipeline"])
def test_a_fitted_regressor_is_refused_as_a_regressor_not_as_unfitted(kind):
    """Item 2: a fitted regressor is not "not fitted": the message says it is a
    regressor and that only classifiers are compressed (bad input, exit code 3)."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = frame()
    reg = RandomForestRegressor(3, max_depth=2, random_state=0)
    if kind == "pipeline":
        reg = make_pipeline(StandardScaler(), reg)
    reg.fit(X, y.astype(float))
    for call in (pace_cert.compress, pace_cert.frontier):
        with pytest.raises(InputError) as e:
            call(reg, X, y, mode="prune", time_limit=60, quiet=True)
        msg = str(e.value)
        assert e.value.exit_code == 3 and "is a regressor, not a classifier" in msg, msg
        assert "classifiers only" in msg and "fit it first" not in msg


def test_compress_out_folder_loads_and_verifies_alone(tmp_path, monkeypatch):
    """Item 3: ``compress(..., out=d)`` of an estimator leaves what ``save`` leaves:
    original.onnx with the other files, so ``CertifiedModel.load(d)`` and ``pace-cert
    verify d/...`` need nothing else; a folder without the original is named, with
    what to do."""
    monkeypatch.chdir(tmp_path)  # the certificate names the original "original.onnx"
    X, y = frame(5)
    res = pace_cert.compress(estimator("rf", X, y), X, y, eta=0.1, out=tmp_path / "o", **FAST)
    d = tmp_path / "o"
    assert sorted(os.listdir(d)) == ["certificate.json", "compressed.onnx", "original.onnx"]
    assert (d / "original.onnx").read_bytes() == res.original
    again = pace_cert.CertifiedModel.load(d)
    assert again.files == res.files and again.original == res.original
    out = cli_verify(d)
    assert out.exit_code == 0, out.output
    (d / "original.onnx").unlink()
    with pytest.raises(InputError) as e:
        pace_cert.CertifiedModel.load(d)
    msg = str(e.value)
    assert msg.startswith(f"{d}: holds no original.onnx") and "original=" in msg, msg
    assert pace_cert.CertifiedModel.load(d, res.original).files == res.files
    with pytest.raises(InputError, match=r"holds no certificate\.json"):
        pace_cert.CertifiedModel.load(tmp_path)


def test_summary_is_a_read_only_mapping_with_its_groups_nested():
    """Items 4 and 5: the summary is a Mapping (keys, items, values, get, len, iter,
    in), the pruning bound's fields stay under ``pruning_bound`` (its seconds no longer
    overwrite the run's), and nothing in it can be written."""
    from collections.abc import Mapping

    X, y = frame()
    res = pace_cert.compress(estimator("rf", X, y), X, y, eta=0.1, **FAST)
    s, cert = res.summary, res.certificate
    assert isinstance(s, Mapping) and list(s.keys())[:3] == ["status", "certified", "trees"]
    assert s["trees"] == s.get("trees") == dict(s.items())["trees"] == s.sizes["trees"]
    assert len(s) == len(list(s)) == len(list(s.values())) and "fidelity" in s
    assert s.get("no such key") is None and "value" not in s and "meets_points" not in s
    pb = cert.summary.pruning_bound
    assert pb is not None and s["pruning_bound"]["value"] == pb.value
    assert s["pruning_bound"]["seconds"] == pb.seconds
    assert s["seconds"] == s.facts["seconds"] == cert.summary.seconds
    assert s["deployment"]["rows"] == len(X)
    for target, key in ((s, "trees"), (s.facts, "fidelity"), (s["pruning_bound"], "value")):
        with pytest.raises(TypeError):
            target[key] = 0
    with pytest.raises(TypeError):
        s.sizes["trees"] = (0, 0)


def test_the_result_opens_with_verdict_sizes_region_and_estimate(tmp_path):
    """Items 6 and 7: print(result) opens with the verdict, trees and leaves before ->
    after, eta, delta, mode and the rows inside the region, then the free-pattern
    estimate (also ``result.estimate`` and ``summary["estimate"]``); the HTML opens
    the same way; print(result.summary) is the mapping view, not the same text."""
    X, y = frame()
    res = pace_cert.compress(estimator("rf", X, y), X, y, eta=0.1, **FAST)
    s, cov = res.certificate.summary, res.certificate.region.coverage
    lines = str(res).splitlines()
    assert lines[0] == (
        f"CertifiedModel: certified: trees {s.trees_before} -> {s.trees_after}, "
        f"leaves {s.leaves_before} -> {s.leaves_after}"
    )
    assert lines[1].startswith("region: eta 0.1 (vote share), delta 0, mode prune; ")
    assert f"{cov.inside} of {cov.rows} data rows inside the region (" in lines[1]
    est = res.estimate
    assert est is not None and est.trees == s.trees_before and 1 <= est.floor <= est.trees
    assert lines[2].startswith("estimate: ") and f"fewer than {est.floor} of" in lines[2]
    assert res.summary["estimate"]["floor"] == est.floor
    assert repr(res) == str(res) != str(res.summary)
    assert str(res.summary).startswith("ResultSummary: a read-only mapping")
    page = res._repr_html_()
    assert page.startswith("<div><p><b>CertifiedModel: certified: trees ")
    assert "eta 0.1 (vote share), delta 0, mode prune" in page
    loaded = pace_cert.CertifiedModel.load(res.save(tmp_path / "r"))
    assert loaded.estimate == est  # computed again from the original for a loaded result


def test_an_inconclusive_result_says_why_and_what_to_try_as_the_cli_does():
    """Items 6 and 7: a result that certified nothing smaller prints the CLI's why:
    and try: lines (the same library function) and never a field with no value (an
    inconclusive certificate's empty phase)."""
    from sklearn.tree import DecisionTreeClassifier

    from pace_cert.outcome_words import Asked, unchanged_lines

    X, y = frame()
    res = pace_cert.compress(DecisionTreeClassifier(max_depth=2).fit(X, y), X, y, **FAST)
    assert res.exit_code == 2 and not res.certified
    text = str(res)
    assert text.startswith("CertifiedModel: inconclusive, nothing smaller certified: trees 1 -> 1")
    why, tip = unchanged_lines(res.outcome, Asked.of(res.certificate, 120))
    assert why.startswith("why: no faithful model of fewer than 1 trees exists")
    assert why in text.splitlines() and tip in text.splitlines()
    assert "--eta 0.1" in tip
    assert not any(line.rstrip().endswith(":") for line in text.splitlines()), text
    assert res.certificate.summary.phase == "" and "phase" not in text


def test_a_misspelt_keyword_gets_a_suggestion():
    """Item 10: an unknown keyword names the closest setting or keyword of compress."""
    from pace_cert.settings import CompressConfig, SettingError

    X, y = frame()
    est = estimator("rf", X, y)
    for typo, meant in (
        ("time_limt", "time_limit"),
        ("quite", "quiet"),
        ("synth_sise", "synth_size"),
    ):
        with pytest.raises(InputError) as e:
            pace_cert.compress(est, X, y, **{typo: 1}, mode="prune", quiet=True)
        assert str(e.value) == f"{typo} is not a setting; did you mean {meant!r}?"
    with pytest.raises(SettingError, match=r"did you mean 'iforest_trees'\?"):
        CompressConfig.of(iforest_tree=3)


# ------------------------------------------------------------------- to_sklearn


def every_cell(trees, n_features: int) -> np.ndarray:
    """One representative of every domain cell, plus each threshold and its float32
    neighbours, and large finite values: every way a point can meet the splits."""
    from pace_cert.region.domain import build_domain

    dom = build_domain(trees, n_features)
    per = []
    for i in range(n_features):
        th = dom.thresholds[i].astype(np.float32)
        up = np.nextafter(th, np.float32(np.inf), dtype=np.float32)
        down = np.nextafter(th, np.float32(-np.inf), dtype=np.float32)
        big = np.array([0, -1e30, 1e30, -3.4e38, 3.4e38], np.float32)
        reps = dom.reps[i][~np.isnan(dom.reps[i])]
        per.append(np.unique(np.concatenate([reps, th, up, down, big]).astype(np.float32)))
    return np.array(list(itertools.product(*per)), np.float32)


def assert_same_labels_everywhere(clf, model: bytes) -> int:
    import onnx

    from pace_cert.model.onnx_reader import ensemble_from_model
    from pace_cert.model.runtime import labels, session

    ens, _ = ensemble_from_model(onnx.load_from_string(model))
    cells = every_cell(ens.trees, ens.n_features)
    want = labels(session(model), cells)
    names = getattr(clf, "feature_names_in_", None)
    rows = cells if names is None else pd.DataFrame(cells, columns=list(names))
    with np.errstate(over="ignore", invalid="ignore"):  # scikit-learn sums X to test it
        got = clf.predict(rows)
    assert len(cells) > 50
    assert np.array_equal(np.asarray(got).astype(want.dtype), want)
    return len(cells)


def test_to_sklearn_of_a_booster_compressed_to_one_tree():
    X, y = frame(5)
    res = pace_cert.compress(estimator("xgb", X, y), X, y, eta=0.5, **FAST)
    assert res.summary["trees"][1] == 1
    clf = res.to_sklearn()
    assert assert_same_labels_everywhere(clf, res.onnx_bytes)
    assert list(clf.feature_names_in_) == ["age", "b c", "d"]
    assert clf.tree_.n_node_samples[0] == len(X)  # the training rows
    from sklearn.tree import export_text

    assert "age" in export_text(clf, feature_names=list(clf.feature_names_in_))


def test_mode_tree_of_a_forest_gives_an_sklearn_tree_equal_on_every_cell(tmp_path):
    """``mode="tree"`` and its caps are keywords as on the CLI; the certified tree
    comes back as a DecisionTreeClassifier whose labels are onnxruntime's everywhere
    (the whole domain: eta = delta = 0), and the saved directory verifies."""
    X, y = frame(6)
    rf = estimator("rf", X, y)
    res = pace_cert.compress(rf, X, y, mode="tree", max_depth=6, time_limit=120, quiet=True)
    assert res.summary["trees"][1] == 1 and res.certificate.summary.certified
    clf = res.to_sklearn()
    assert clf.get_depth() <= 6
    internal = clf.tree_.node_count - clf.get_n_leaves()  # deployment units in the summary
    assert res.summary["internal_nodes"][1] == internal
    assert res.summary["leaves"][1] == clf.get_n_leaves()
    assert res.summary["onnx_bytes"][1] == len(res.onnx_bytes)
    assert "size lower bound" not in repr(res)  # a pruning bound: not about one tree
    assert assert_same_labels_everywhere(clf, res.onnx_bytes)
    assert np.array_equal(clf.predict(X), rf.predict(X))  # faithful on every cell
    saved = res.save(tmp_path / "out")
    assert pace_cert.verify(saved).verified
    with pytest.raises(pace_cert.InputError, match="max-leaves"):
        pace_cert.compress(rf, X, y, mode="tree", max_leaves=0, quiet=True)


def test_to_sklearn_of_a_decision_tree_original_with_string_labels():
    """A DecisionTreeClassifier (one tree: written back unchanged) on real-valued
    features and three string classes: thresholds that are not round numbers."""
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(6)
    X = pd.DataFrame(rng.normal(size=(200, 3)), columns=["u", "v", "w"])
    y = np.array(["low", "mid", "high"])[np.digitize(X["u"] + 0.5 * X["v"], [-0.5, 0.5])]
    dt = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y)
    res = pace_cert.compress(dt, X, y, **FAST)
    assert res.exit_code == 2 and res.files["compressed.onnx"] == res.original
    clf = res.to_sklearn()
    assert assert_same_labels_everywhere(clf, res.onnx_bytes)
    assert np.array_equal(clf.predict(X), dt.predict(X))


def test_to_sklearn_of_a_pipeline_reads_the_raw_input():
    """A StandardScaler Pipeline: the scaler is folded into the split thresholds, so the
    DecisionTreeClassifier takes the raw columns, as the ONNX model does."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(8)
    X = pd.DataFrame(rng.normal(size=(200, 3)) * [1, 100, 0.01], columns=["u", "v", "w"])
    y = (X["u"] + 0.01 * X["v"] > 0).astype(int).to_numpy()
    p = make_pipeline(StandardScaler(), DecisionTreeClassifier(max_depth=3, random_state=0))
    res = pace_cert.compress(p.fit(X, y), X, y, **FAST)
    assert res.certificate.original.input_transform is not None
    clf = res.to_sklearn()
    assert assert_same_labels_everywhere(clf, res.onnx_bytes)
    assert np.array_equal(clf.predict(X), p.predict(X))


def test_to_sklearn_of_an_ir_tree_whose_labels_depend_on_base_scores():
    """A tree built as IR arrays (odd float32 thresholds, a subnormal, negative
    values), weighted, with base scores that flip some leaves' argmax, written by the
    ONNX writer: each leaf's label is onnxruntime's."""
    from pace_cert.model.ensemble import LEAF, Ensemble, Tree
    from pace_cert.model.onnx_graph import OnnxModelInfo
    from pace_cert.model.onnx_writer import ensemble_to_onnx
    from pace_cert.model.sklearn_tree import decision_tree_of

    f32 = np.float32
    tree = Tree(
        np.array([0, 1, LEAF, LEAF, 2, LEAF, 0, LEAF, LEAF]),
        np.array([0.1, -2.5, 0, 0, 1e-40, 0, 7.3, 0, 0], f32),
        np.array([1, 2, LEAF, LEAF, 5, LEAF, 7, LEAF, LEAF]),
        np.array([6, 4, LEAF, LEAF, 3, LEAF, 8, LEAF, LEAF]),
        np.array(
            [
                [0, 0, 0],
                [0, 0, 0],
                [1, 0.2, 0],
                [0.1, 0.9, 0.3],
                [0, 0, 0],
                [0.4, 0.41, 0.1],
                [0, 0, 0],
                [0.2, 0.1, 0.6],
                [0.3, 0.3, 0.3],
            ],
            f32,
        ).astype(float),
    )
    base = np.array([0.0, -0.02, -0.1], f32).astype(float)  # leaf 5: 0.41 - 0.02 < 0.4
    ens = Ensemble((tree,), np.array([1.0]), base, np.array([7, 8, 9]), 3, kind="margin")
    info = OnnxModelInfo("X", "label", "probabilities", False)
    model = ensemble_to_onnx(ens, info).SerializeToString()
    clf = decision_tree_of(model)
    assert assert_same_labels_everywhere(clf, model)
    assert f32(clf.tree_.threshold[4]) == f32(1e-40)


def test_to_sklearn_refuses_more_than_one_tree():
    X, y = frame()
    res = pace_cert.compress(estimator("rf", X, y), X, y, eta=0.1, **FAST)
    assert res.summary["trees"][1] > 1
    with pytest.raises(InputError, match="only a one-tree model"):
        res.to_sklearn()


# ---------------------------------------------------------------------- frontier


def test_frontier_in_memory_and_saved_rungs_verify(tmp_path):
    X, y = frame(7)
    est = estimator("rf", X, y)
    res = pace_cert.frontier(est, X, y, eta=[0.1, 0.3], mode="prune", time_limit=120, quiet=True)
    assert isinstance(res, pace_cert.FrontierResult)
    assert res.exit_code == 0 and set(res.rungs) == {r.name for r in res.record.rungs}
    assert res.record.model == "original.onnx" and res.record.data == "<DataFrame>"
    assert "eta" in res.table and "FrontierResult" in repr(res)
    d = res.save(tmp_path / "front")
    for name in res.rungs:
        out = CliRunner().invoke(
            app,
            ["verify", str(d / "original.onnx"), str(d / name / "compressed.onnx"),
             str(d / name / "certificate.json")],
        )  # fmt: skip
        assert out.exit_code in (0, 2), out.output  # 2: that rung kept the original
    assert any(r.certified for r in res.rungs.values())


# ------------------------------------------------------------------ the package


def test_top_level_names_and_a_light_import():
    for name in pace_cert.__all__:
        assert getattr(pace_cert, name) is not None
    assert callable(pace_cert.compress) and callable(pace_cert.frontier)
    assert issubclass(pace_cert.InputError, Exception) and pace_cert.InputError.exit_code == 3
    code = "import sys, pace_cert; print(sorted(m for m in sys.modules if m.startswith('pace_')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['pace_cert']"  # the API loads on first use


def test_readme_python_section_uses_only_top_level_names():
    """The README's Python API section names pace_cert's top-level API only: every
    ``pace_cert.NAME`` it mentions is in ``__all__``, and no internal module path."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    names = set(re.findall(r"\bpace_cert\.(\w+)", section))
    assert names and names <= set(pace_cert.__all__), names - set(pace_cert.__all__)
    assert not re.search(r"\bpace_cert\.\w+\.\w", section)
