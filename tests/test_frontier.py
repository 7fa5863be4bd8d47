"""``pace-cert frontier``: a ladder of nested regions certified in one run. Every rung
directory is what compress writes and verify checks; frontier.json follows its
schema; an inner rung starts from its enclosing rung's model, so it is never larger;
bad ladders write nothing; the report links every rung's page."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from pace_cert.cli.main import app
from pace_cert.frontier.ladder import (
    DEFAULT_LADDER,
    ETA_LADDER,
    LadderError,
    RowShares,
    Rung,
    ladder,
)
from pace_cert.frontier.record import FrontierRecord, rung_bounds

SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "frontier.schema.json"
RUNGS = ["--eta", "0,0.1", "--delta", "0,0.1"]  # global, delta0.1, eta0.1, eta0.1-delta0.1


@pytest.fixture(scope="module")
def frontier_run(zoo_model, tmp_path_factory):
    """One frontier run (prune mode, a generous limit) on a 6-tree forest."""
    model, data = zoo_model("seeds", "rf", 6, 2)
    out = tmp_path_factory.mktemp("frontier") / "out"
    args = ["frontier", str(model), "--data", str(data), "--test", str(data), "--out", str(out)]
    flags = ["--mode", "prune", "--time-limit", "600", "--no-refine"]  # the ladder as given
    res = CliRunner().invoke(app, [*args, *RUNGS, *flags])
    return SimpleNamespace(model=model, data=data, out=out, res=res)


def _record(run) -> FrontierRecord:
    return FrontierRecord.model_validate_json((run.out / "frontier.json").read_bytes())


# ----------------------------------------------------------------------------- ladder


def test_the_eta_ladder_runs_from_the_largest_region_inwards():
    assert ladder() == DEFAULT_LADDER == RowShares((1.0, 0.99, 0.95, 0.9, 0.8, 0.7))
    names = [r.name for r in ETA_LADDER]
    assert names == [
        "global",
        "eta0.1",
        "eta0.1-delta0.1",
        "eta0.2-delta0.1",
        "eta0.3-delta0.1",
        "eta0.5-delta0.1",
    ]
    for i, r in enumerate(ETA_LADDER[1:], 1):
        assert r.inside(ETA_LADDER[i - 1])


def test_lists_give_every_pair_each_after_the_rungs_around_it():
    rungs = ladder("0.2,0,0.1", "0.1,0")
    assert len(rungs) == 6
    for i, r in enumerate(rungs):
        assert not any(r.inside(later) and r != later for later in rungs[i + 1 :])
    assert ladder(None, "0.1") == (Rung(0.0, 0.1),)
    assert [r.name for r in ladder("0.1")] == ["eta0.1"]


@pytest.mark.parametrize(
    "eta, delta", [("0,x", None), ("0.1,0.1", None), (None, "1.5"), ("-1", None), ("", None)]
)
def test_bad_lists_are_refused(eta, delta):
    with pytest.raises(LadderError):
        ladder(eta, delta)


def test_rung_bounds_reads_a_pruning_bound_when_the_certificate_has_one():
    summary = SimpleNamespace(size_lower_bound=4, witness_bound=3)
    assert rung_bounds(SimpleNamespace(summary=summary)) == {
        "size_lower_bound": 4,
        "witness_bound": 3,
        "pruning_bound": None,
    }
    summary.pruning_bound = SimpleNamespace(value=7)
    assert rung_bounds(SimpleNamespace(summary=summary))["pruning_bound"] == 7


# ------------------------------------------------------------------------ the command


def test_every_rung_directory_verifies_on_its_own(frontier_run):
    assert frontier_run.res.exit_code in (0, 2), frontier_run.res.output
    rec = _record(frontier_run)
    assert [r.name for r in rec.rungs] == ["global", "delta0.1", "eta0.1", "eta0.1-delta0.1"]
    for r in rec.rungs:
        assert r.status != "empty region"
        d = frontier_run.out / r.name
        files = [str(frontier_run.model), str(d / "compressed.onnx"), str(d / "certificate.json")]
        res = CliRunner().invoke(app, ["verify", *files])
        assert res.exit_code == (0 if r.status == "certified" else 2), (r.name, res.output)
        assert (d / "plausibility.json").exists() == (r.delta > 0)
    assert rec.exit_code == frontier_run.res.exit_code


def test_the_rungs_share_one_plausibility_forest(frontier_run):
    docs = [
        json.loads((frontier_run.out / n / "plausibility.json").read_text())
        for n in ("delta0.1", "eta0.1-delta0.1")
    ]
    assert docs[0]["trees"] == docs[1]["trees"]
    assert docs[0]["delta_abs"] == docs[1]["delta_abs"]  # the same delta: the same threshold


def test_frontier_json_follows_its_schema(frontier_run):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    assert schema == FrontierRecord.model_json_schema(), "run `make schema` and commit"
    jsonschema.validate(json.loads((frontier_run.out / "frontier.json").read_text()), schema)


def test_an_inner_rung_starts_from_its_enclosing_rungs_model(frontier_run):
    rec = _record(frontier_run)
    by = {r.name: r for r in rec.rungs}
    for inner in rec.rungs:
        around = [
            o
            for o in rec.rungs
            if o is not inner and Rung(inner.eta, inner.delta).inside(Rung(o.eta, o.delta))
        ]
        certified = [o for o in around if o.status == "certified"]
        if not certified:
            assert inner.started_from is None
            continue
        assert inner.started_from in {o.name for o in certified}
        assert inner.start_certified is True
        assert inner.status == "certified"
        assert inner.trees_after <= min(o.trees_after for o in certified)
        assert by[inner.started_from].trees_after >= inner.trees_after


def test_the_table_lists_every_rung(frontier_run):
    lines = frontier_run.res.stdout.splitlines()
    assert lines[0].split()[:3] == ["rung", "eta", "delta"]
    for r in _record(frontier_run).rungs:
        row = next(line for line in lines if line.split()[0] == r.name)
        assert f"{r.trees_before} -> {r.trees_after}" in row
        assert r.status in row
    rec = _record(frontier_run)
    assert all(r.data is not None and r.test is not None for r in rec.rungs)
    assert all(r.data.inside == r.test.inside for r in rec.rungs)  # --test is the data here


@pytest.mark.parametrize(
    "flags",
    [
        ["--eta", "0,abc"],
        ["--eta", "0.1,0.1"],
        ["--delta", "1"],
        ["--eta", "0.5,1"],  # a vote share of 1 or more: refused for this forest
        ["--mode", "generate"],
        ["--backend", "spark"],
    ],
)
def test_bad_input_exits_3_and_writes_nothing(zoo_model, tmp_path, flags):
    model, data = zoo_model("seeds", "rf", 6, 2)
    out = tmp_path / "out"
    res = CliRunner().invoke(
        app, ["frontier", str(model), "--data", str(data), "--out", str(out), *flags]
    )
    assert res.exit_code == 3, res.output
    assert not out.exists()
    assert len(res.stderr.strip().splitlines()) == 1


def test_report_of_a_frontier_links_every_rung(frontier_run, tmp_path):
    page = tmp_path / "frontier.html"
    res = CliRunner().invoke(
        app, ["report", str(frontier_run.out / "frontier.json"), "--out", str(page)]
    )
    assert res.exit_code == 0, res.output
    text = page.read_text()
    assert "<svg" in text and "<script" not in text
    for r in _record(frontier_run).rungs:
        rung_page = tmp_path / f"frontier-{r.name}.html"
        assert f"href='{rung_page.name}'" in text
        assert "pace-cert" in rung_page.read_text()


@pytest.mark.slow
def test_ray_backend_runs_each_rung_as_a_task(zoo_model, tmp_path):
    """With a local Ray instance (as tests/test_ray_backend.py starts one): the same
    rung directories, each verified on its own; no model passes between rungs."""
    import logging

    import ray

    model, data = zoo_model("seeds", "rf", 6, 2)
    out = tmp_path / "out"
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
    )
    try:
        args = ["frontier", str(model), "--data", str(data), "--out", str(out), "--eta", "0,0.1"]
        res = CliRunner().invoke(
            app, [*args, "--mode", "prune", "--backend", "ray", "--time-limit", "600", "--quiet"]
        )
    finally:
        ray.shutdown()
    assert res.exit_code in (0, 2), res.output
    rec = FrontierRecord.model_validate_json((out / "frontier.json").read_bytes())
    assert rec.backend == "ray" and not rec.reuse
    assert [r.name for r in rec.rungs] == ["global", "eta0.1"]
    for r in rec.rungs:
        assert r.started_from is None
        d = out / r.name
        files = [str(model), str(d / "compressed.onnx"), str(d / "certificate.json")]
        verdict = CliRunner().invoke(app, ["verify", *files])
        assert verdict.exit_code == (0 if r.status == "certified" else 2), verdict.output
