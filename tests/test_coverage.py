"""``--coverage Q`` (issue #75): the region that holds Q % of the training rows, its eta
derived from the rows (``compress`` and ``pace_cert.compress``), recorded in the
certificate as ``region.coverage_asked``. A 7-tree depth-2 forest on iris, mode prune:
each run takes about a second; the time limits only bound a broken run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import pace_cert
from pace_cert.cert.words import asked_coverage_line
from pace_cert.cli.main import app
from pace_cert.errors import InputError
from pace_cert.outcome_words import Asked, what_to_try
from pace_cert.settings import CompressConfig, SettingError

FAST = dict(mode="prune", time_limit=300, quiet=True)
runner = CliRunner()


@pytest.fixture(scope="module")
def iris():
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    X, y = load_iris(return_X_y=True)
    return RandomForestClassifier(7, max_depth=2, random_state=0).fit(X, y), X, y


def inside_by_margin(original: bytes, X: np.ndarray, eta: float, tmp: Path) -> np.ndarray:
    """Rows of ``X`` whose original margin is above c_o for ``eta``, counted here from the
    original's ONNX file (the IR's scores and margin mask, not the certificate's counts)."""
    from pace_cert.model.onnx_reader import read_ensemble
    from pace_cert.region.margins import region_margin
    from pace_cert.region.masks import margin_mask

    (tmp / "original.onnx").write_bytes(original)
    ens, _ = read_ensemble(tmp / "original.onnx")
    return margin_mask(ens, X, region_margin(ens, eta))


def test_coverage_90_holds_at_least_90_percent_of_the_rows(iris, tmp_path):
    rf, X, y = iris
    res = pace_cert.compress(rf, X, y, coverage=90, **FAST)
    reg = res.certificate.region
    assert reg.coverage_asked == 90 and reg.eta > 0
    assert reg.coverage.rows == len(X) and reg.coverage.missing == 0
    assert reg.coverage.inside >= 0.9 * len(X)  # delta 0: inside is held by margin
    inside = inside_by_margin(res.original, X, reg.eta, tmp_path)
    assert inside.sum() == reg.coverage.inside and inside.mean() >= 0.9
    text = repr(res)
    assert f"coverage 90 %: eta {reg.eta:g} (vote share) holds" in text
    assert f"({reg.coverage.inside} of {len(X)})" in text


def test_coverage_100_is_the_global_region_holding_every_row(iris, tmp_path):
    rf, X, y = iris
    res = pace_cert.compress(rf, X, y, coverage=100, **FAST)
    reg = res.certificate.region
    assert reg.coverage_asked == 100 and reg.eta == 0  # eta_for_share: 0 for a share of 1
    assert reg.coverage.inside == reg.coverage.rows == len(X)  # no row in the tie band
    assert inside_by_margin(res.original, X, reg.eta, tmp_path).all()


def test_eta_given_records_no_coverage(iris):
    rf, X, y = iris
    res = pace_cert.compress(rf, X, y, eta=0.1, **FAST)
    assert res.certificate.region.coverage_asked is None
    assert "coverage 90" not in repr(res) and "holds" not in repr(res)


@pytest.mark.parametrize("q", [0.99, 0, -5, 100.5, float("nan")])
def test_coverage_outside_1_to_100_is_bad_input(iris, q):
    rf, X, y = iris
    with pytest.raises(InputError) as e:
        pace_cert.compress(rf, X, y, coverage=q, **FAST)
    assert e.value.exit_code == 3
    assert "--coverage" in str(e.value) and "percentage" in str(e.value)
    assert "99 for 99 %" in str(e.value)


def test_coverage_with_a_nonzero_eta_is_bad_input(iris):
    rf, X, y = iris
    with pytest.raises(InputError) as e:
        pace_cert.compress(rf, X, y, eta=0.1, coverage=90, **FAST)
    assert e.value.exit_code == 3
    assert "either --coverage or --eta" in str(e.value)


def test_settings_table_derived_eta_keeps_the_coverage():
    """The user's config refuses --coverage with --eta (CompressConfig.of); the config
    with eta derived from the rows keeps both and passes the table."""
    import dataclasses

    with pytest.raises(SettingError, match="either --coverage or --eta"):
        CompressConfig.of(coverage=90, eta=0.2)
    cfg = CompressConfig.of(coverage=90)
    assert cfg.eta == 0 and cfg.coverage == 90
    derived = dataclasses.replace(cfg, eta=0.48)
    assert (derived.eta, derived.coverage) == (0.48, 90)
    with pytest.raises(SettingError, match="percentage"):
        dataclasses.replace(cfg, coverage=0.5)
    assert CompressConfig().coverage is None  # the frontier's rungs: eta as given


def test_coverage_line_rounds_down_and_says_the_tie_band():
    line = asked_coverage_line(99, 0.4, "vote share", 9999, 10000)
    assert line == (
        "coverage 99 %: eta 0.4 (vote share) holds 99.9 % of the training rows by margin "
        "(9999 of 10000)"
    )
    assert "100.0" not in asked_coverage_line(99, 0.4, "vote share", 19999, 20000)
    tie = asked_coverage_line(100, 0.0, "raw score", 98, 100)
    assert "holds 98.0 %" in tie and "tie band" in tie


def test_what_to_try_after_coverage_names_a_smaller_coverage_not_eta(iris):
    rf, X, y = iris
    res = pace_cert.compress(rf, X, y, coverage=100, **FAST)
    outcome = res.outcome
    tips = what_to_try(outcome, Asked(None, 0.0, 0.0, "prune", 100.0))
    assert "--coverage 99" in tips and "--eta" not in tips
    assert "--coverage 90" in what_to_try(outcome, Asked(None, 0.0, 0.0, "prune", 95.0))
    assert "--eta" in what_to_try(outcome, Asked(None, 0.0, 0.0, "prune"))


def _files(iris, tmp: Path) -> tuple[Path, Path]:
    from pace_cert.staging import model_input

    rf, X, y = iris
    model = tmp / "rf.onnx"
    model.write_bytes(model_input(rf).onnx_bytes)
    data = tmp / "train.csv"
    header = ",".join([f"f{i}" for i in range(X.shape[1])] + ["target"])
    rows = [",".join([*(repr(float(v)) for v in x), str(int(t))]) for x, t in zip(X, y)]
    data.write_text("\n".join([header, *rows]) + "\n")
    return model, data


def test_cli_coverage_end_to_end_then_verify(iris, tmp_path):
    model, data = _files(iris, tmp_path)
    out = tmp_path / "out"

    def compress(out: Path, *more: str):
        args = ["compress", model, "--data", data, "--out", out, "--coverage", "90", *more]
        return runner.invoke(app, [str(a) for a in [*args, "--mode", "prune", "--time-limit", 300]])

    res = compress(out)
    assert res.exit_code == 0, (res.stdout, res.stderr)
    cert = json.loads((out / "certificate.json").read_text())
    reg = cert["region"]
    assert reg["coverage_asked"] == 90 and reg["eta"] > 0
    assert reg["coverage"]["inside"] >= 0.9 * reg["coverage"]["rows"]
    said = [line for line in res.stdout.splitlines() if line.startswith("coverage 90 %")]
    assert said == [
        f"coverage 90 %: eta {reg['eta']:g} (vote share) holds "
        f"{int(1000 * reg['coverage']['inside'] / reg['coverage']['rows']) / 10:.1f} % of the "
        f"training rows by margin ({reg['coverage']['inside']} of {reg['coverage']['rows']})"
    ]
    assert "coverage 90 %: eta" in res.stderr  # the progress line, before the work
    ver = runner.invoke(
        app,
        [str(a) for a in ["verify", model, out / "compressed.onnx", out / "certificate.json"]],
    )
    assert ver.exit_code == 0, (ver.stdout, ver.stderr)
    js = compress(tmp_path / "json", "--json", "--quiet")
    assert js.exit_code == 0, (js.stdout, js.stderr)
    got = json.loads(js.stdout)
    assert got["coverage_asked"] == 90 and got["eta"] == reg["eta"]


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--coverage", "0.99"], "percentage"),
        (["--coverage", "95", "--eta", "0.1"], "either --coverage or --eta"),
    ],
)
def test_cli_bad_coverage_exit_3_one_line_nothing_written(iris, tmp_path, flags, needle):
    model, data = _files(iris, tmp_path)
    out = tmp_path / "out"
    res = runner.invoke(
        app, [str(a) for a in ["compress", model, "--data", data, "--out", out, *flags]]
    )
    assert res.exit_code == 3, (res.stdout, res.stderr)
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and needle in err, err
    assert not out.exists()
