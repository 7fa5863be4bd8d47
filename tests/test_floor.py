"""The floor table said before the work (issue 75): what each coverage rung can buy at
best (free-pattern estimates, labelled as such), and a warning with a rung that leaves
room when the asked region leaves little. Recorded in the certificate (stated by
verify), in --json, on the result object and in the report."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import pace_cert
from pace_cert.cli.main import app
from pace_cert.estimate import FloorRow, floor_table, room_line


@pytest.fixture(scope="module")
def raw_forest():
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :6].astype(np.float32)
    return RandomForestClassifier(10, max_depth=2, random_state=0).fit(X, y), X, y


def test_the_table_runs_from_the_asked_region_down_the_coverage_rungs(raw_forest):
    from pace_cert.export import estimator_to_onnx
    from pace_cert.model.onnx_reader import ensemble_from_model

    est, X, _y = raw_forest
    ens, _ = ensemble_from_model(estimator_to_onnx(est))
    rows = floor_table(ens, X, 0.1)
    assert rows[0].coverage is None and rows[0].eta == 0.1
    rungs = rows[1:]
    assert [r.coverage for r in rungs] == [100.0, 99.0, 95.0, 90.0, 80.0]
    assert rungs[0].eta == 0.0
    etas, floors = [r.eta for r in rungs], [r.floor for r in rungs]
    assert etas == sorted(etas) and floors == sorted(floors, reverse=True)
    assert all(1 <= r.floor <= r.trees == 10 for r in rows)


def test_little_room_names_the_largest_rung_that_leaves_room():
    rows = [
        FloorRow(None, 0.1, 95, 100),
        FloorRow(99.0, 0.2, 93, 100),
        FloorRow(95.0, 0.5, 60, 100),
        FloorRow(90.0, 0.7, 30, 100),
    ]
    line = room_line(rows)
    assert line is not None and "95 of the 100" in line and "--coverage 95" in line
    assert room_line([FloorRow(None, 0.5, 60, 100), *rows[1:]]) is None  # room already
    none = room_line([FloorRow(None, 0.1, 99, 100), FloorRow(80.0, 0.3, 95, 100)])
    assert none is not None and "--mode tree" in none


def test_compress_records_and_says_the_floor(raw_forest, tmp_path):
    est, X, y = raw_forest
    res = pace_cert.compress(est, X, y, mode="prune", eta=0.05, time_limit=20, threads=1,
                             quiet=True)  # fmt: skip
    floor = res.certificate.summary.floor
    assert floor is not None and floor[0].coverage is None and len(floor) == 6
    text = str(res)
    assert ("little room" in text) == (floor[0].trees_at_least >= 9)
    rep = pace_cert.verify(res)
    assert rep.exit_code in (0, 2)  # nothing smaller certified is inconclusive
    assert any(c["key"] == "floor" and c["status"] == "stated" for c in rep.claims)
    model = tmp_path / "m.onnx"
    model.write_bytes(res.original)
    import pandas as pd

    pd.DataFrame(X).assign(target=y).to_csv(tmp_path / "t.csv", index=False)
    r = CliRunner().invoke(app, ["compress", str(model), "--data", str(tmp_path / "t.csv"),
                                 "--out", str(tmp_path / "o"), "--eta", "0.05", "--mode",
                                 "prune", "--time-limit", "20", "--json"])  # fmt: skip
    assert r.exit_code in (0, 2), r.output
    got = json.loads(r.stdout)
    assert "room" in got and got["summary"]["floor"][1]["coverage"] == 100.0
    assert "floor (free-pattern estimates, not bounds" in r.stderr


def test_mode_tree_has_no_floor(raw_forest):
    est, X, y = raw_forest
    res = pace_cert.compress(est, X, y, mode="tree", eta=0.8, time_limit=20, threads=1,
                             quiet=True)  # fmt: skip
    assert res.certificate.summary.floor is None
