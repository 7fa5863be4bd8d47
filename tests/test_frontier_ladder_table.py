"""Issue #51 items 6 and 9: a ladder in the user's units (shares of the --data rows,
translated per model into eta) and a table a user can ship from (percentages,
agreement inside the region and on all rows, bounds that say something, the estimate,
the stop reason, a one-line recommendation, in the report too)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from pace_cert.cli.main import app
from pace_cert.frontier.ladder import LadderError, RowShares, eta_for_share, ladder, resolve
from pace_cert.frontier.record import FrontierRecord, RowCoverage
from pace_cert.frontier.state import cut_record
from pace_cert.frontier.table import columns, format_table, recommendation, render_text
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.region.margins import region_margin
from pace_cert.region.masks import margin_mask

from .test_frontier_delivery import HEADER, RUNGS, _cert


def test_rows_lists_are_parsed_as_percentages():
    assert ladder(rows="90,100,95") == RowShares((1.0, 0.95, 0.9))
    for bad in ("0", "101", "90,90", "x"):
        with pytest.raises(LadderError, match="--rows"):
            ladder(rows=bad)
    with pytest.raises(LadderError, match="not both"):
        ladder(eta="0.1", rows="90")


@pytest.mark.parametrize("kind", ["rf", "gb"])
def test_each_share_becomes_the_largest_round_eta_holding_it(zoo_model, kind):
    """Item 6: on a booster eta is a raw score; the rung asked for 95 % of the rows
    holds at least 95 % of them, whatever the model's units, and the rungs nest."""
    from pace_cert.data import read_csv

    model, data = zoo_model("seeds", kind, 10, 2)
    ens, _ = read_ensemble(model)
    X = read_csv(data, ens.classes, ens.n_features).X
    rungs, _notes = resolve(RowShares((1.0, 0.99, 0.95, 0.9, 0.8, 0.7)), ens, X)
    assert rungs[0].eta == 0 and rungs[0].name == "rows100"
    etas = [r.eta for r in rungs]
    assert etas == sorted(etas) and len(set(etas)) == len(etas)
    for r in rungs:
        inside = margin_mask(ens, X, region_margin(ens, r.eta)).mean()
        assert inside >= r.share - 1e-12, (r.name, r.eta, inside)
        assert float(f"{r.eta:.2g}") == r.eta  # two significant digits
        if r.eta > 0:  # the largest such: one step up holds less
            up = r.eta + 10 ** (math.floor(math.log10(r.eta)) - 1)
            assert margin_mask(ens, X, region_margin(ens, up)).mean() < r.share
    assert eta_for_share(ens, X, 0.7) == rungs[-1].eta


def test_shares_of_one_region_run_once(zoo_model):
    from pace_cert.data import read_csv

    model, data = zoo_model("seeds", "rf", 6, 2)
    ens, _ = read_ensemble(model)
    X = read_csv(data, ens.classes, ens.n_features).X
    rungs, notes = resolve(RowShares((0.9, 0.8999999)), ens, X)
    assert len(rungs) == 1 and "same region" in notes[0]


def _record(test: bool = True) -> FrontierRecord:
    a = cut_record(RUNGS[0], _cert(60), 10.0, 20.0).model_copy(
        update={"state": "finished", "stop_reason": "l0: proved optimal", "estimate": 40}
    )
    b = cut_record(RUNGS[1], _cert(12), 10.0, 20.0).model_copy(update={"estimate": 9})
    c = cut_record(RUNGS[2], _cert(4), 10.0, 20.0)
    covs = [(100, 1.0), (92, 0.97), (70, 0.9)]
    rungs = []
    for r, (inside, agree) in zip((a, b, c), covs):
        cov = RowCoverage(path="t", rows=100, inside=inside, agreement=agree, agreement_inside=1.0)
        rungs.append(r.model_copy(update={"data": cov, "test": cov if test else None}))
    rungs[0] = rungs[0].model_copy(update={"bounds": {"size_lower_bound": 1, "witness_bound": 1}})
    rungs[1] = rungs[1].model_copy(update={"bounds": {"size_lower_bound": 7}})
    return FrontierRecord(
        **{**HEADER, "test": "t.csv" if test else None}, seconds=1, exit_code=0, rungs=rungs
    )


def test_the_table_speaks_in_percentages_and_hides_what_says_nothing():
    """Item 9: coverage and agreement as percentages, inside and on all rows; a bound
    of 1 tree is not shown; the estimate and the stop reason are columns."""
    rec = _record()
    cols = dict(columns(rec))
    assert cols["data in"] == ["100.0 %", "92.0 %", "70.0 %"]
    assert cols["test agree in"] == ["100.0 %"] * 3
    assert cols["test agree all"] == ["100.0 %", "97.0 %", "90.0 %"]
    assert cols["bound"] == ["-", ">= 7", "-"]  # 1 tree says nothing
    assert cols["estimate"] == ["40", "9", "-"]
    assert cols["stopped because"][0] == "l0: proved optimal"
    assert cols["status"][1] == "certified, cut"
    assert "delta" not in cols and "rows asked" not in cols
    assert "test in" not in dict(columns(_record(test=False)))
    assert format_table(rec).splitlines()[0].split()[:2] == ["rung", "eta"]


def _deployment(nodes: int, latency: bool):
    from pace_cert.cert.build import deployment_block
    from pace_cert.deploy_size import Latency, Structure

    before = Structure(60, 120, 60, 3, 150.0, 100)
    after = Structure(nodes // 2, nodes + nodes // 2, nodes, 4, nodes / 3, 100)
    lat = Latency((9.0, 4.5), (2.0, 0.25), 300, 100, 5, 0.1, "1.0") if latency else None
    return deployment_block((before, after), (20_000, 800 * nodes), lat, "not measured: cut")


def test_the_table_states_what_deployment_pays_for():
    """The written model's internal nodes, depth, comparisons, bytes and (a column only
    where some rung measured it) latency; the original's values in the legend."""
    rec = _record()
    assert "nodes" not in dict(columns(rec))  # a record without deployment sizes
    deps = [_deployment(30, True), _deployment(12, False), None]
    rungs = [r.model_copy(update={"deployment": d}) for r, d in zip(rec.rungs, deps)]
    rec = rec.model_copy(update={"rungs": rungs})
    cols = dict(columns(rec))
    assert cols["nodes"] == ["30", "12", "-"] and cols["depth"] == ["4", "4", "-"]
    assert cols["cmp/row"] == ["10.0", "4.0", "-"] and cols["ONNX"] == ["24.0 kB", "9.6 kB", "-"]
    assert cols["us/row"] == ["0.25", "-", "-"]
    text = render_text(rec)
    assert "the original: 60 internal nodes, depth 3, 150.0 comparisons per prediction" in text
    assert "20.0 kB ONNX, 2 us/row" in text
    unmeasured = [r.model_copy(update={"deployment": _deployment(12, False)}) for r in rungs]
    assert "us/row" not in dict(columns(rec.model_copy(update={"rungs": unmeasured})))


def test_the_recommendation_is_the_smallest_model_covering_90_percent():
    """Item 9: eta0.1 (12 trees, 92 %) not eta0.2 (4 trees, 70 %)."""
    line = recommendation(_record())
    assert line.startswith("recommendation: eta0.1/compressed.onnx: 12 trees")
    assert "92.0 % of the test rows" in line
    assert "bound:" in render_text(_record())  # the bound column explained
    bare = _record().model_copy(update={"rungs": _record().rungs[2:]})
    assert recommendation(bare).startswith("recommendation: none")


def test_a_rows_ladder_end_to_end_with_the_report(zoo_model, tmp_path):
    """Items 6 and 9: --rows rungs are named by the share asked, hold it on the data
    rows, agree 100 % inside their region; the report carries the recommendation."""
    model, data = zoo_model("seeds", "rf", 6, 2)
    out = tmp_path / "out"
    args = ["frontier", str(model), "--data", str(data), "--out", str(out), "--rows", "100,90"]
    res = CliRunner().invoke(app, [*args, "--mode", "prune", "--time-limit", "120", "--quiet"])
    assert res.exit_code in (0, 2), res.output
    rec = json.loads((out / "frontier.json").read_text())
    assert [r["name"] for r in rec["rungs"]] == ["rows100", "rows90"]
    for r in rec["rungs"]:
        assert r["data"]["inside"] / r["data"]["rows"] >= r["share_asked"] - 1e-12
        assert r["data"]["agreement_inside"] == 1.0
    assert "recommendation:" in res.stdout and "rows asked" in res.stdout
    for r in rec["rungs"]:  # each rung's deployment sizes, from its certificate
        cert = json.loads((out / r["name"] / "certificate.json").read_text())
        assert r["deployment"] == cert["summary"]["deployment"]
        assert r["deployment"]["after"]["internal_nodes"] >= 0
    assert "cmp/row" in res.stdout and "the original: " in res.stdout
    page = tmp_path / "f.html"
    assert (
        CliRunner()
        .invoke(app, ["report", str(out / "frontier.json"), "--out", str(page)])
        .exit_code
        == 0
    )
    assert "recommendation:" in page.read_text()
    assert np.isfinite(rec["rungs"][1]["eta"])
