"""verify checks what a certificate states, not only the faithfulness proof (SPEC §7: a
tampered certificate never passes; SPEC §6: each pair entry is self-contained).

Each edit below leaves both ONNX files (and their hashes) as compress wrote them, so the
proof itself still goes through: before pace_cert/claims.py, verify answered "verified"
to every one of them. Malformed fields are bad input (exit 3 naming the certificate),
never an internal error.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import onnx
import pytest

from .test_end_to_end import copy_run, edit_cert, invoke, no_internal_error, sha


@pytest.fixture(scope="module")
def run(compress_run):
    r = compress_run("compas", "rf", 20, 2, "--mode", "prune", "--eta", "0.1", "--delta", "0.1")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return r


def _set(*path, value):
    def fn(d):
        for key in path[:-1]:
            d = d[key]
        d[path[-1]] = value

    return fn


def _swap_classes(d):
    d["compressed"]["classes"] = d["compressed"]["classes"][::-1]


def _drop_pair(d):
    d["pairs"] = d["pairs"][:-1]


def _history_of_other_pair(d):
    src = next(p for p in d["pairs"] if p["history"])
    other = next(p for p in d["pairs"] if p is not src)
    other["history"].append(src["history"][0])


def _relabel_history(d):
    p = next(p for p in d["pairs"] if p["history"])
    h = p["history"][0]
    h["original_label"] = next(c for c in d["original"]["classes"] if c != h["original_label"])


def _history_label_not_a_class(d):
    p = next(p for p in d["pairs"] if p["history"])
    p["history"][0]["original_label"] = 7


def _bound_below_witnesses(d):
    s = d["summary"]
    assert s["witness_bound"] is not None and s["witness_bound"] >= 1  # precondition
    s["size_lower_bound"] = s["witness_bound"] - 1


def _downgrade_and_scramble_learners(d):
    d["schema_version"] = "1.2"
    for lr in d["learners"]:
        lr["original_trees"] = [0]


def _double_threshold(d):
    d["region"]["margin_threshold"] *= 2


def _more_trees(d):
    d["original"]["trees"] += 1


def _more_trees_after(d):
    d["summary"]["trees_after"] += 1


@pytest.mark.parametrize(
    "edit, why",
    [
        (_set("summary", "size_lower_bound", value=999), "size_lower_bound"),
        (_set("summary", "certified", value=False), "summary.certified"),
        (_set("pairs", 0, "status", value="FEASIBLE"), "FEASIBLE"),
        (_set("pairs", 0, "eta", value=0.0), "eta, delta or delta_abs"),
        (_set("pairs", 1, "delta_abs", value=-5.0), "eta, delta or delta_abs"),
        (_drop_pair, "pairs: 1 entries"),
        (_history_of_other_pair, "history points of another pair"),
        (_relabel_history, "states original label"),
        (_history_label_not_a_class, "states original label 7"),
        (_bound_below_witnesses, "below its own witness_bound"),
        (_more_trees, "original.trees"),
        (_more_trees_after, "summary.trees_after"),
        (_swap_classes, "compressed.classes"),
        (_double_threshold, "region.margin_threshold"),
        (_set("region", "eta_units", value="raw score"), "eta_units"),
        (_set("scaling", "compressed_margin", value=1e-9), "scaling.compressed_margin"),
        (_downgrade_and_scramble_learners, "learners"),
    ],
)
def test_contradicted_claims_are_refuted(run, tmp_path, edit, why):
    comp, cert, _ = copy_run(run, tmp_path)
    res = invoke("verify", run.model, comp, cert)
    assert res.exit_code == 0, res.output  # precondition: the untouched run verifies
    edit_cert(cert, edit)
    res = invoke("verify", run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code == 1, res.output
    assert res.stdout.startswith("refuted:") and why in res.stdout, res.stdout


def _long_history_point(d):
    p = next(p for p in d["pairs"] if p["history"])
    p["history"][0]["point"].append(0.0)


@pytest.mark.parametrize(
    "edit, why",
    [
        (_set("region", "domain", "binary_features", value=[99]), "binary_features"),
        (_set("region", "domain", "binary_features", value=["a"]), "binary_features"),
        (_set("region", "domain", "integer_features", value=[-1]), "integer_features"),
        (_set("region", "domain", "bounds", value="yes"), "bounds"),
        (_set("region", "domain", "bounds", value={}), "bounds"),
        (_set("region", "domain", "bounds", value={"lower": [0.0], "upper": [1.0]}), "lower"),
        (
            _set("region", "domain", "bounds", value={"lower": [1.0] * 12, "upper": [0.0] * 12}),
            "exceeds its upper bound",
        ),
        (
            _set("region", "domain", "bounds", value={"lower": [0.0] * 12, "upper": [1e39] * 12}),
            "finite float32",
        ),
        (_set("region", "domain", value=[]), "region.domain"),
        (_set("seed", value=2**40), "seed"),
        (_long_history_point, "history point"),
    ],
)
def test_malformed_fields_are_bad_input(run, tmp_path, edit, why):
    comp, cert, _ = copy_run(run, tmp_path)
    edit_cert(cert, edit)
    res = invoke("verify", run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code == 3, res.output
    assert str(cert) in res.stderr and why in res.stderr, res.stderr


def test_an_empty_plausibility_region_is_refuted(run, tmp_path):
    """delta_abs above every score the isolation forest can give: the proof holds
    vacuously, but no delta-quantile of training scores can be there."""
    comp, cert, d = copy_run(run, tmp_path)
    plaus = d / "plausibility.json"
    art = json.loads(plaus.read_text())
    art["delta_abs"] = float.hex(1e9)
    plaus.write_text(json.dumps(art))
    digest = hashlib.sha256(plaus.read_bytes()).hexdigest()

    def fn(c):
        c["region"]["delta_abs"] = 1e9
        c["region"]["plausibility"]["sha256"] = digest
        for p in c["pairs"]:
            p["delta_abs"] = 1e9
        s = c["summary"]  # the witnesses would refute it first (outside the region now)
        s["boundary_witnesses"], s["witness_bound"], s["size_lower_bound"] = [], None, None
        s["pruning_bound"] = None  # its points too

    edit_cert(cert, fn)
    res = invoke("verify", run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code == 1, res.output
    assert "the region is empty" in res.stdout


def _rewrite_model(comp, cert, fn) -> None:
    m = onnx.load(comp)
    fn(m)
    onnx.save(m, comp)
    edit_cert(cert, _set("compressed", "sha256", value=sha(comp)))


def test_a_renamed_input_is_refuted(run, tmp_path):
    """SPEC §3: the compressed model keeps the original's input and output names."""
    comp, cert, _ = copy_run(run, tmp_path)

    def rename(m):
        old = m.graph.input[0].name
        m.graph.input[0].name = "renamed"
        for n in m.graph.node:
            n.input[:] = ["renamed" if i == old else i for i in n.input]

    _rewrite_model(comp, cert, rename)
    res = invoke("verify", run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code == 1, res.output
    assert "input_name" in res.stdout


def test_a_model_onnxruntime_cannot_load_is_bad_input(run, tmp_path):
    """The reader accepts an IR version onnxruntime refuses: compress and verify stop
    with exit 3 naming the file, before any solving, and compress writes nothing."""
    comp, cert, _ = copy_run(run, tmp_path)
    bad = tmp_path / "original.onnx"
    m = onnx.load(run.model)
    m.ir_version = 99
    onnx.save(m, bad)
    edit_cert(cert, _set("original", "sha256", value=sha(bad)))
    res = invoke("verify", bad, comp, cert)
    no_internal_error(res)
    assert res.exit_code == 3, res.output
    assert str(bad) in res.stderr and "onnxruntime cannot load" in res.stderr
    res = invoke("compress", bad, "--data", run.data, "--out", tmp_path / "c")
    no_internal_error(res)
    assert res.exit_code == 3, res.output
    assert str(bad) in res.stderr and "onnxruntime cannot load" in res.stderr
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").iterdir())


def test_verify_states_the_region_and_counts_the_data(run, tmp_path):
    comp, cert, _ = copy_run(run, tmp_path)
    res = invoke("verify", run.model, comp, cert, "--data", run.data)
    assert res.exit_code == 0, res.output
    region = next(line for line in res.stdout.splitlines() if line.startswith("region:"))
    assert "eta 0.1, vote share" in region and "delta 0.1" in region
    n_rows = len(np.loadtxt(run.data, delimiter=",", skiprows=1))
    assert f"data: {n_rows} rows replayed, " in res.stdout
    rep = json.loads(invoke("verify", run.model, comp, cert, "--data", run.data, "--json").stdout)
    c = json.loads(cert.read_text())
    assert rep["region"]["delta_abs"] == c["region"]["delta_abs"]
    assert rep["region"]["margin_threshold"] == c["region"]["margin_threshold"]
    # training rows inside the region: what compress counted (the certificate's claim)
    assert rep["data_rows"] == n_rows
    assert rep["data_inside_region"] == c["region"]["samples_kept"]
    assert rep["data_outside_domain"] == 0
    assert rep["domain"]["cells_per_feature"] == c["region"]["domain"]["cells_per_feature"]


@pytest.mark.parametrize("value", ["-1", "nan", "0"])
def test_bad_time_limits_are_bad_input(run, tmp_path, value):
    comp, cert, _ = copy_run(run, tmp_path)
    res = invoke("verify", run.model, comp, cert, "--time-limit", value)
    assert res.exit_code == 3, res.output
    assert "--time-limit" in res.stderr
    res = invoke(
        "compress", run.model, "--data", run.data, "--out", tmp_path / "c", "--time-limit", value
    )
    assert res.exit_code == 3, res.output
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").iterdir())


def test_an_original_learner_with_other_leaf_values_is_refuted(run, tmp_path):
    """A tree the certificate calls original (one learner, weight w) must score w times
    the original tree it names; a 1 % change keeps the model faithful (the proof
    passes) but makes the claim false."""
    from .test_end_to_end import tamper_leaves

    comp, cert, _ = copy_run(run, tmp_path)
    c = json.loads(cert.read_text())
    lr = next(lr for lr in c["learners"] if lr["merged"] == 1 and lr["origin"] == "original")
    tamper_leaves(comp, comp, tree=lr["index"], factor=1.01)
    edit_cert(cert, _set("compressed", "sha256", value=sha(comp)))
    res = invoke("verify", run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code == 1, res.output
    assert f"tree {lr['index']}'s leaf values are not weight" in res.stdout, res.stdout


def test_exhaustive_on_too_many_cells_is_bad_input_before_solving(run, tmp_path, monkeypatch):
    """--exhaustive on a domain beyond its limit fails at once (exit 3), without first
    running the CP-SAT proof it cannot complete anyway."""
    from pace_cert.cert import verify
    from pace_cert.oracle.cpsat import SeparationOracle

    def no_proof(*args, **kwargs):
        raise AssertionError("the proof ran")

    monkeypatch.setattr(verify, "EXHAUSTIVE_LIMIT", 1)
    monkeypatch.setattr(SeparationOracle, "separate", no_proof)
    comp, cert, _ = copy_run(run, tmp_path)
    res = invoke("verify", run.model, comp, cert, "--exhaustive")
    assert res.exit_code == 3, res.output
    assert "--exhaustive" in res.stderr and "cells exceed" in res.stderr


def test_cell_count_does_not_overflow():
    """7 features of ~1,000 allowed cells each: 1.3e21 cells, beyond int64."""
    from types import SimpleNamespace

    from pace_cert.cert.verify import EXHAUSTIVE_LIMIT
    from pace_cert.cert.verify_proof import cell_count

    sizes = [1065, 1070, 1028, 991, 1025, 1061, 1045]
    dom = SimpleNamespace(n_features=7, allowed=lambda i: np.ones(sizes[i], bool))
    n = cell_count(dom)
    assert n == 1065 * 1070 * 1028 * 991 * 1025 * 1061 * 1045 > 2**63 > EXHAUSTIVE_LIMIT


def test_delta_abs_stated_without_delta_is_refuted(compress_run, tmp_path):
    """With delta 0 there is no plausibility bound; a certificate stating one anyway
    claims a region verify did not prove over."""
    r = compress_run("compas", "rf", 20, 2, "--mode", "prune")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    comp, cert, _ = copy_run(r, tmp_path)
    edit_cert(cert, _set("region", "delta_abs", value=5.0))
    res = invoke("verify", r.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code == 1, res.output
    assert "region.delta_abs" in res.stdout


def test_probe_replays_random_points_near_the_data(run, tmp_path):
    comp, cert, _ = copy_run(run, tmp_path)
    args = ("verify", run.model, comp, cert, "--data", run.data, "--probe", 5000)
    rep = json.loads(invoke(*args, "--json").stdout)
    assert rep["status"] == "verified", rep
    assert rep["probe_points"] == 5000
    assert rep["probe_inside_region"] > 500  # the replay reaches the region, not only rows
    res = invoke(*args)
    assert "probe: 5000 random points near the data replayed, " in res.stdout


@pytest.mark.parametrize("args", [["--probe", "100"], ["--probe", "-1", "--data", "DATA"]])
def test_bad_probes_are_bad_input(run, tmp_path, args):
    comp, cert, _ = copy_run(run, tmp_path)
    res = invoke("verify", run.model, comp, cert, *[run.data if a == "DATA" else a for a in args])
    assert res.exit_code == 3, res.output
    assert "--probe" in res.stderr
    no_internal_error(res)


def test_probe_refutes_a_model_the_proof_let_through(run, tmp_path, monkeypatch):
    """The probe checks the proof without trusting it. Fault injection: an oracle that
    answers INFEASIBLE for every pair (a bug it must not depend on) lets a tampered model
    through the proof, and neither the history (emptied) nor the data rows (only those
    where both models agree) show the disagreement; the probe's onnxruntime replay finds
    it at a point of the region that is no data row."""
    from pace_cert.model.onnx_reader import read_ensemble
    from pace_cert.model.runtime import labels, session
    from pace_cert.oracle.cpsat import SeparationOracle
    from pace_cert.oracle.score_model import PairResult
    from pace_cert.region.masks import region_mask
    from pace_cert.region.plausibility import load_artifact

    from .test_end_to_end import read_rows, tamper_leaves

    comp, cert, out = copy_run(run, tmp_path)
    tamper_leaves(comp, comp, factor=4.0)

    def no_history(d):
        d["compressed"]["sha256"] = sha(comp)
        for p in d["pairs"]:
            p["history"] = []

    edit_cert(cert, no_history)
    X = read_rows(run.data)
    lo = labels(session(run.model.read_bytes()), X)
    lt = labels(session(comp.read_bytes()), X)
    assert (lo != lt).any()  # precondition: the tampered model disagrees somewhere
    agree = tmp_path / "agree.csv"
    header = run.data.read_text().splitlines()[0]
    keep = lo == lt
    rows = np.column_stack([X[keep], lo[keep]])
    np.savetxt(agree, rows, delimiter=",", header=header, comments="", fmt="%.9g")

    def every_pair_proved(self, compressed, e_req, **_kw):
        k = len(self.original.base)  # classes
        return [PairResult(a, b, "INFEASIBLE") for a in range(k) for b in range(k) if a != b]

    monkeypatch.setattr(SeparationOracle, "separate", every_pair_proved)
    base = ["verify", run.model, comp, cert, "--data", agree, "--json"]
    without = json.loads(invoke(*base).stdout)
    assert without["counterexample"] is None, without  # the replays alone miss it
    res = invoke(*base, "--probe", 20000)
    rep = json.loads(res.stdout)
    assert res.exit_code == 1 and rep["status"] == "refuted", rep
    x = np.asarray([rep["counterexample"]["point"]], np.float32)
    assert not (X[keep] == x).all(axis=1).any()  # a probe point, not a data row
    assert labels(session(run.model.read_bytes()), x)[0] != labels(session(comp.read_bytes()), x)[0]
    c = json.loads(cert.read_text())
    orig_ir, _ = read_ensemble(run.model)
    forest = load_artifact(out / c["region"]["plausibility"]["path"])
    assert region_mask(orig_ir, c["region"]["margin_threshold"], forest, x)[0]


# ------------------------------------------------ issue 40: every claim checked or stated


def _claims(rep: dict) -> dict[str, str]:
    return {c["key"]: c["status"] for c in rep["claims"]}


def test_json_has_stable_keys_and_every_claim_is_checked_or_stated(run, tmp_path):
    comp, cert, _ = copy_run(run, tmp_path)
    res = invoke("verify", run.model, comp, cert, "--json", "--data", run.data)
    rep = json.loads(res.stdout)
    assert res.exit_code == 0 and rep["verified"] is True, rep
    assert rep["certificate_status"] == "certified" and rep["identical_models"] is False
    assert {p["status"] for p in rep["pairs"]} == {"INFEASIBLE"}
    assert all(set(c) == {"key", "status", "text"} for c in rep["claims"])
    assert {c["status"] for c in rep["claims"]} == {"checked", "stated"}
    claims = _claims(rep)
    for key in ("faithfulness", "models", "history.points", "learners", "data.coverage"):
        assert claims[key] == "checked", key  # data.coverage: --data is compress's file
    for key in ("history.completeness", "region.parameters", "data.agreement", "run"):
        assert claims[key] == "stated", key
    text = invoke("verify", run.model, comp, cert).stdout
    assert "certificate: certified" in text
    assert "stated: history: that these are all the separating samples" in text


def test_a_raised_size_lower_bound_is_refuted_or_stated(run, tmp_path):
    """The issue's case: size_lower_bound raised to the compressed size, a false
    'minimal'. In mode prune no synthesis proof runs, so it is refuted; claimed as a
    pace-mode synthesis bound, verify cannot re-check it and says so (never 'checked')."""
    comp, cert, _ = copy_run(run, tmp_path)
    c = json.loads(cert.read_text())
    trees = c["summary"]["trees_after"]
    assert c["summary"]["witness_bound"] < trees  # precondition: a bound the witnesses lack
    edit_cert(cert, _set("summary", "size_lower_bound", value=trees))
    res = invoke("verify", run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code == 1 and "synthesis proofs run only in mode pace" in res.stdout
    edit_cert(cert, _set("summary", "mode", value="pace"))
    res = invoke("verify", run.model, comp, cert)
    assert res.exit_code == 0, res.output
    assert f"stated: size lower bound: no faithful model of fewer than {trees} trees" in res.stdout
    assert "which verify does not re-check" in res.stdout
    assert "stated: minimal: " in res.stdout and "checked: minimal: " not in res.stdout
    rep = json.loads(invoke("verify", run.model, comp, cert, "--json").stdout)
    claims = _claims(rep)
    assert claims["size_lower_bound.synthesis"] == "stated" and claims["minimal"] == "stated"
    assert claims["size_lower_bound.witnesses"] == "checked"


def test_a_bound_above_the_original_is_refuted(run, tmp_path):
    comp, cert, _ = copy_run(run, tmp_path)

    def fn(d):
        d["summary"]["mode"] = "pace"
        d["summary"]["size_lower_bound"] = d["original"]["trees"] + 1

    edit_cert(cert, fn)
    res = invoke("verify", run.model, comp, cert)
    assert res.exit_code == 1 and "exceeds the original's" in res.stdout, res.output


def test_a_certified_certificate_flipped_to_inconclusive_is_refuted(run, tmp_path):
    """summary.certified and status flipped together: an inconclusive run writes the
    original unchanged and keeps no proof, so the compressed model and the pairs
    contradict it."""
    comp, cert, _ = copy_run(run, tmp_path)

    def fn(d):
        d["summary"]["certified"], d["summary"]["status"] = False, "inconclusive"

    edit_cert(cert, fn)
    res = invoke("verify", run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code == 1, res.output
    assert "the compressed model is not the original" in res.stdout
    assert "verified" not in res.stdout


def test_history_compressed_labels_are_gone_or_stated(run, tmp_path):
    """Schema 1.4 writes no compressed_label (the label of an intermediate candidate,
    which verify cannot replay): a 1.4 certificate carrying one is invalid; an older one
    has its labels dropped and reported as stated, never as verified."""
    comp, cert, _ = copy_run(run, tmp_path)
    c = json.loads(cert.read_text())
    from pace_cert.cert.certificate import SCHEMA_VERSION

    assert c["schema_version"] == SCHEMA_VERSION
    assert all("compressed_label" not in h for p in c["pairs"] for h in p["history"])

    def add_label(d):
        p = next(p for p in d["pairs"] if p["history"])
        p["history"][0]["compressed_label"] = p["history"][0]["original_label"]

    edit_cert(cert, add_label)
    res = invoke("verify", run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code == 3 and "compressed_label" in res.stderr, res.output
    edit_cert(cert, _set("schema_version", value="1.3"))
    res = invoke("verify", run.model, comp, cert)
    assert res.exit_code == 0, res.output
    assert "stated: history: 1 history compressed labels (schema 1.3)" in res.stdout
    rep = json.loads(invoke("verify", run.model, comp, cert, "--json").stdout)
    assert _claims(rep)["history.compressed_labels"] == "stated"


def test_emptied_histories_are_reported_as_stated(run, tmp_path):
    """Which samples the run added is a record verify cannot replay: with the histories
    emptied, it replays none and says that completeness is stated."""
    comp, cert, _ = copy_run(run, tmp_path)

    def empty(d):
        for p in d["pairs"]:
            p["history"] = []

    edit_cert(cert, empty)
    res = invoke("verify", run.model, comp, cert)
    assert res.exit_code == 0, res.output
    assert "checked: history: 0 separating samples replayed" in res.stdout
    assert "stated: history: that these are all the separating samples" in res.stdout
    rep = json.loads(invoke("verify", run.model, comp, cert, "--json").stdout)
    assert _claims(rep)["history.completeness"] == "stated"


def test_coverage_is_recounted_from_the_same_data_file(run, tmp_path):
    comp, cert, _ = copy_run(run, tmp_path)
    res = invoke("verify", run.model, comp, cert, "--data", run.data)
    assert "checked: data coverage: where the" in res.stdout, res.stdout
    other = tmp_path / "other.csv"
    other.write_text("\n".join(run.data.read_text().splitlines()[:-1]) + "\n")
    res = invoke("verify", run.model, comp, cert, "--data", other)
    assert res.exit_code == 0 and "stated: data coverage: --data is not the file" in res.stdout
    edit_cert(cert, lambda d: d["region"]["coverage"].__setitem__("tie_band", 5))
    res = invoke("verify", run.model, comp, cert, "--data", run.data)
    assert res.exit_code == 1 and "region.coverage tie_band 5" in res.stdout, res.output


@pytest.fixture(scope="module")
def fallback(zoo_model, tmp_path_factory):
    """A run stopped at once (eta = delta = 0.1): the original written unchanged."""
    from pace_cert.app import run_compress
    from pace_cert.settings import CompressConfig

    model, data = zoo_model("compas", "rf", 20, 2)
    out = tmp_path_factory.mktemp("fallback") / "out"
    cfg = CompressConfig.of(mode="prune", eta=0.1, delta=0.1, time_limit=0.001)
    res = run_compress(model, data, out, cfg)
    assert res.exit_code == 2 and res.status == "inconclusive"
    return model, out


def _no_solver(monkeypatch):
    from pace_cert.oracle.cpsat import SeparationOracle

    def no_proof(*args, **kwargs):
        raise AssertionError("CP-SAT ran on identical models")

    monkeypatch.setattr(SeparationOracle, "separate", no_proof)


def test_a_fallback_certificate_verifies_in_seconds_and_is_not_verified(fallback, monkeypatch):
    """Compressed = original: nothing to prove, no solver runs; the certificate claims
    no compression, so verify says inconclusive, never 'verified' (the issue: over 300 s
    of CP-SAT, then 'verified' with eta/delta)."""
    import time

    _no_solver(monkeypatch)
    model, out = fallback
    comp, cert = out / "compressed.onnx", out / "certificate.json"
    t0 = time.perf_counter()
    res = invoke("verify", model, comp, cert)
    assert time.perf_counter() - t0 < 120  # far below the 300 s, whatever the load
    no_internal_error(res)
    assert res.exit_code == 2, res.output
    assert res.stdout.startswith("inconclusive: the certificate claims no compression")
    assert "certificate: inconclusive" in res.stdout and "verified" not in res.stdout
    rep = json.loads(invoke("verify", model, comp, cert, "--json").stdout)
    assert rep["verified"] is False and rep["certificate_status"] == "inconclusive"
    assert rep["identical_models"] is True
    assert {p["status"] for p in rep["pairs"]} == {"IDENTICAL"}
    assert "faithfulness" not in _claims(rep)  # not claimed, so not reported as checked


def test_a_certified_claim_on_identical_models_needs_no_proof(fallback, tmp_path, monkeypatch):
    """The same files under a certified certificate (pairs INFEASIBLE, E_req stated): the
    claim holds without a solver, and verify says why."""
    import shutil

    from pace_cert.cert.claims import _required_margin
    from pace_cert.model.onnx_reader import read_ensemble

    model, out = fallback
    d = tmp_path / "out"
    shutil.copytree(out, d)
    e_req = _required_margin(read_ensemble(model)[0])

    def certify(c):
        c["summary"]["certified"], c["summary"]["status"] = True, "certified"
        c["scaling"]["compressed_margin"] = e_req
        for p in c["pairs"]:
            p["status"], p["compressed_margin"] = "INFEASIBLE", e_req

    edit_cert(d / "certificate.json", certify)
    _no_solver(monkeypatch)
    res = invoke("verify", model, d / "compressed.onnx", d / "certificate.json")
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("verified: the compressed model is the original, byte for")
    assert "checked: faithfulness: the two files are identical" in res.stdout


# ------------------------------------------------------- summary.deployment (schema 1.7)


def _dep(side, key, value=None, plus=None):
    """An edit of summary.deployment.<side>.<key>: set to ``value`` or add ``plus``."""

    def fn(d):
        s = d["summary"]["deployment"][side]
        s[key] = value if plus is None else s[key] + plus

    return fn


def _deployment_inputs(run, edit=None):
    from pace_cert.cert.certificate import Certificate
    from pace_cert.model.onnx_reader import read_ensemble

    d = json.loads((run.out / "certificate.json").read_text())
    if edit is not None:
        edit(d)
    comp = run.out / "compressed.onnx"
    sizes = (run.model.stat().st_size, comp.stat().st_size)
    return Certificate.model_validate(d), read_ensemble(run.model)[0], read_ensemble(comp)[0], sizes


@pytest.mark.parametrize(
    "edit, why",
    [
        (_dep("after", "internal_nodes", plus=1), "after.internal_nodes"),
        (_dep("before", "leaves", plus=-1), "before.leaves"),
        (_dep("after", "trees", plus=1), "after.trees"),
        (_dep("after", "max_depth", plus=1), "after.max_depth"),
        (_dep("before", "onnx_bytes", plus=-100), "before.onnx_bytes"),
        (_dep("after", "mean_comparisons", value=1e6), "after.mean_comparisons"),
        (_dep("before", "mean_comparisons", value=-1.0), "before.mean_comparisons"),
        (_dep("after", "latency_us_batch1", value=-3.0), "positive and finite"),
        (_dep("after", "latency_us_per_row_batch", value=None), "latency_setup is stated"),
    ],
)
def test_a_contradicted_deployment_size_is_a_problem(run, edit, why):
    """summary.deployment against the two files, without a solver: structure and bytes
    recounted, comparisons within [0, sum of depths], latencies positive or null."""
    from pace_cert.cert.claims import deployment_problems

    assert deployment_problems(*_deployment_inputs(run)) == []
    problems = deployment_problems(*_deployment_inputs(run, edit))
    assert any(why in p for p in problems), problems


def test_comparisons_are_recounted_on_the_rows(run):
    from pace_cert.cert.claims import comparison_problems
    from pace_cert.data import read_csv

    cert, orig, comp, _ = _deployment_inputs(run)
    X = read_csv(run.data, orig.classes, orig.n_features).X
    assert comparison_problems(cert, orig, comp, X) == []
    assert any("rows is" in p for p in comparison_problems(cert, orig, comp, X[1:]))
    cert, *_ = _deployment_inputs(run, _dep("after", "mean_comparisons", plus=0.25))
    assert any("after.mean_comparisons" in p for p in comparison_problems(cert, orig, comp, X))


def test_verify_refutes_a_tampered_internal_node_count(run, tmp_path):
    comp, cert, _ = copy_run(run, tmp_path)
    edit_cert(cert, _dep("after", "internal_nodes", plus=-1))
    res = invoke("verify", run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code == 1, res.output
    assert res.stdout.startswith("refuted:") and "after.internal_nodes" in res.stdout


def test_verify_data_rechecks_comparisons_and_states_latency(run, tmp_path):
    """With the same --data file the mean comparisons are checked (a tampered mean is
    refuted), the latency is always stated; without --data the comparisons are stated."""
    comp, cert, _ = copy_run(run, tmp_path)
    res = invoke("verify", run.model, comp, cert, "--data", run.data)
    assert res.exit_code == 0, res.output
    assert "checked: deployment size: " in res.stdout
    assert "checked: comparisons per prediction: " in res.stdout
    assert "stated: latency: " in res.stdout and "not re-checked" in res.stdout
    edit_cert(cert, _dep("before", "mean_comparisons", plus=0.5))
    res = invoke("verify", run.model, comp, cert, "--data", run.data)
    no_internal_error(res)
    assert res.exit_code == 1 and "before.mean_comparisons" in res.stdout, res.output
