"""Issue #51 items 7-9: rung names never collide; a test CSV is matched to the
training CSV's columns by header name (or refused, naming the column); errors name the
option; the help survives a closed pipe."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from pace_cert.cli.main import app
from pace_cert.data import read_csv
from pace_cert.errors import InputError
from pace_cert.frontier.ladder import Rung, ladder, number


def test_rungs_of_different_values_never_share_a_name():
    """Item 7: ``{eta:g}`` named both eta0.1; one certificate was lost."""
    assert [r.name for r in ladder("0.1,0.1000001")] == ["eta0.1", "eta0.1000001"]
    assert [r.name for r in ladder(None, "0.1,0.10000001")] == ["delta0.1", "delta0.10000001"]
    assert Rung(0.3, 0.1).name == "eta0.3-delta0.1"  # the usual names are unchanged
    for x in (0.1, 1 / 3, 1e-7, 2.5, 0.30000000000000004):
        assert float(number(x)) == x


def _rewrite(src: Path, dst: Path, order=None, drop=None) -> list[str]:
    rows = list(csv.reader(src.open()))
    idx = list(range(len(rows[0])))
    if order is not None:
        idx = order(idx)
    if drop is not None:
        idx = [i for i in idx if rows[0][i] != drop]
    with dst.open("w", newline="") as f:
        csv.writer(f).writerows([[r[i] for i in idx] for r in rows])
    return rows[0]


def test_a_test_csv_with_its_columns_in_another_order_is_matched_by_name(zoo_model, tmp_path):
    """Item 8: the same columns in another order were read by position (0 rows
    inside, agreement on shuffled features)."""
    from pace_cert.frontier.run import check_inputs

    model, data = zoo_model("seeds", "rf", 6, 2)
    shuffled = tmp_path / "test.csv"
    _rewrite(data, shuffled, order=lambda idx: idx[::-1])
    checked = check_inputs(model, data, shuffled, [Rung(0, 0)], {"mode": "prune"})
    ds, ts = checked.data, checked.test
    np.testing.assert_array_equal(ts.X, ds.X)
    assert ts.feature_names == ds.feature_names


def test_a_missing_or_unknown_test_column_is_named(zoo_model, tmp_path):
    """Item 9: the error named counts, not the column."""
    model, data = zoo_model("seeds", "rf", 6, 2)
    header = _rewrite(data, tmp_path / "t.csv")
    feature = next(h for h in header if h != "target")
    _rewrite(data, tmp_path / "missing.csv", drop=feature)
    n, classes = len(header) - 1, np.arange(3)
    names = read_csv(data, classes, n).feature_names
    with pytest.raises(InputError, match=f"no column '{feature}'"):
        read_csv(tmp_path / "missing.csv", classes, n, "target", names)
    rows = [line.split(",") for line in (tmp_path / "t.csv").read_text().splitlines()]
    rows = [[*r[:-1], "surprise" if i == 0 else "0", r[-1]] for i, r in enumerate(rows)]
    (tmp_path / "extra.csv").write_text("\n".join(",".join(r) for r in rows) + "\n")
    with pytest.raises(InputError, match="'surprise' not among the features"):
        read_csv(tmp_path / "extra.csv", classes, n + 1, "target", names)
    out = tmp_path / "out"
    res = CliRunner().invoke(
        app,
        ["frontier", str(model), "--data", str(data), "--test", str(tmp_path / "missing.csv"),
         "--out", str(out)],
    )  # fmt: skip
    assert res.exit_code == 3 and f"'{feature}'" in res.stderr and not out.exists()


def test_time_limit_0_names_the_option_not_a_rung(zoo_model, tmp_path):
    model, data = zoo_model("seeds", "rf", 6, 2)
    res = CliRunner().invoke(
        app,
        ["frontier", str(model), "--data", str(data), "--out", str(tmp_path / "o"),
         "--time-limit", "0"],
    )  # fmt: skip
    assert res.exit_code == 3
    assert "--time-limit" in res.stderr and "rung" not in res.stderr


def test_help_into_a_closed_pipe_exits_0():
    """Item 9: ``pace-cert frontier --help | head -2`` exited 1."""
    cmd = f"{sys.executable} -m pace_cert.cli.main frontier --help | head -2; "
    cmd += "exit ${PIPESTATUS[0]}"
    res = subprocess.run(cmd, shell=True, executable="/bin/bash", capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "Usage" in res.stdout


def test_mode_help_says_prune_first_as_the_readme_does():
    res = CliRunner().invoke(app, ["frontier", "--help"], env={"COLUMNS": "200"})
    assert "prune, then" in " ".join(res.stdout.split())
