"""compress -> certificate -> onnxruntime agreement -> verify, on small real models, plus
tampering (SPEC §7: a tampered model, certificate or plausibility file never passes) and
concurrent / repeated runs into the same place (SPEC §2, §5)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from typer.testing import CliRunner

from pace_cert.cert.certificate import Certificate
from pace_cert.cli.main import app
from pace_cert.driver.result import STOP_PROVED_MINIMAL
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.model.runtime import labels, session
from pace_cert.region.margins import region_margin
from pace_cert.region.masks import region_mask
from pace_cert.region.plausibility import load_artifact

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]

CONFIGS = {
    "compas-rf20-prune": ("compas", "rf", 20, 2, "--mode", "prune"),
    "cancer-ada20-prune": ("cancer", "ada", 20, 1, "--mode", "prune"),
    "cancer-rf10-stumps-pace": ("cancer", "rf", 10, 1, "--mode", "pace"),
    "cancer-rf10-stumps-generate": ("cancer", "rf", 10, 1, "--mode", "generate"),
    "compas-rf20-eta-delta": (
        *("compas", "rf", 20, 2, "--mode", "prune"),
        *("--eta", "0.1", "--delta", "0.1"),
    ),
}


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def flag(cfg: tuple, name: str, default: float = 0.0) -> float:
    return float(cfg[cfg.index(name) + 1]) if name in cfg else default


def read_rows(csv: Path) -> np.ndarray:
    return np.loadtxt(csv, delimiter=",", skiprows=1, dtype=np.float64)[:, :-1].astype(np.float32)


def no_internal_error(res) -> None:
    assert res.exit_code != 4, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output and "internal error" not in res.output, res.output


@pytest.fixture(scope="module", params=list(CONFIGS))
def run(request, compress_run):
    cfg = CONFIGS[request.param]
    return SimpleNamespace(**vars(compress_run(*cfg)), cfg=cfg)


def _named(compress_run, name):
    r = compress_run(*CONFIGS[name])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return r


@pytest.fixture(scope="module")
def compas_run(compress_run):
    return _named(compress_run, "compas-rf20-prune")


@pytest.fixture(scope="module")
def eta_delta_run(compress_run):
    return _named(compress_run, "compas-rf20-eta-delta")


def load_cert(path: Path) -> Certificate:
    return Certificate.model_validate_json(Path(path).read_text())


def validate_against_schema(cert_path: Path) -> None:
    try:
        import jsonschema
    except ImportError:
        jsonschema = None
    text = cert_path.read_text()
    if jsonschema is not None:
        schema = json.loads((ROOT / "schemas" / "certificate.schema.json").read_text())
        jsonschema.validate(json.loads(text), schema)
    load_cert(cert_path)  # pydantic, extra="forbid": the schema's source of truth


# ------------------------------------------------------------------- compress, certify


def test_compress_certifies(run):
    cfg = run.cfg
    assert run.exit_code == 0, (run.stdout, run.stderr)
    assert run.stdout.startswith("certified:"), run.stdout
    delta = flag(cfg, "--delta")
    expected = {"certificate.json", "compressed.onnx"} | ({"plausibility.json"} if delta else set())
    assert {p.name for p in run.out.iterdir()} == expected  # no temp files left behind

    cert_path = run.out / "certificate.json"
    validate_against_schema(cert_path)
    cert = load_cert(cert_path)
    s = cert.summary
    assert s.certified is True and s.status == "certified"
    assert s.mode == cfg[cfg.index("--mode") + 1]
    assert 1 <= s.trees_after <= s.trees_before == cfg[2]
    assert s.leaves_after <= s.leaves_before
    assert cert.original.trees == cfg[2]
    assert cert.compressed.trees == s.trees_after == len(cert.learners)
    # one INFEASIBLE proof per ordered pair of labels, under the stated eta/delta
    k = len(cert.original.classes)
    assert len(cert.pairs) == k * (k - 1)
    assert {(p.y0, p.y) for p in cert.pairs} == {
        (a, b) for a in cert.original.classes for b in cert.original.classes if a != b
    }
    for p in cert.pairs:
        assert p.status == "INFEASIBLE"
        assert p.eta == flag(cfg, "--eta") and p.delta == delta
    assert cert.region.eta == flag(cfg, "--eta") and cert.region.delta == delta
    # the hashes are those of the files
    assert cert.original.sha256 == sha(run.model)
    assert cert.compressed.sha256 == sha(run.out / "compressed.onnx")
    if delta:
        assert cert.region.plausibility is not None
        assert cert.region.plausibility.path == "plausibility.json"
        assert cert.region.plausibility.sha256 == sha(run.out / "plausibility.json")
        assert cert.region.delta_abs is not None
    else:
        assert cert.region.plausibility is None
    minimal = STOP_PROVED_MINIMAL
    if "generate" in cfg or ("pace" in cfg and s.generation_stop != minimal):
        assert s.pricing == ("exact" if cfg[3] == 1 else "heuristic")  # stumps: exact
    if s.generation_stop == minimal:  # pace stopped after pruning: the bound says why
        assert "pace" in cfg and s.pricing == "none" and s.size_lower_bound == s.trees_after
    b = s.size_lower_bound
    if "pace" in cfg and s.trees_after > 1:  # the synthesis phase's proved lower bound
        assert b is not None and b >= 2
    if b is not None:  # synthesis proofs and/or boundary witnesses (any mode)
        assert 1 <= b <= s.trees_after and b >= (s.witness_bound or 0)
    if b is not None and b > 1:
        word = "minimal" if b == s.trees_after else "lower bound"
        assert (
            f"{word}: no faithful model of fewer than {b} trees of depth <= {cfg[3]}" in run.stdout
        )
    else:  # always a line, saying that nothing useful was proved
        assert f"lower bound: 1 tree (nothing useful proved for models of depth <= {cfg[3]}" in (
            run.stdout
        )
    if s.witness_bound is not None:
        per_tree = 2**cert.original.max_depth - 1
        assert s.witness_bound == -(-len(s.boundary_witnesses) // per_tree) >= 1
    else:
        assert s.boundary_witnesses == []


def test_compressed_model_agrees_inside_region(run):
    cert = load_cert(run.out / "certificate.json")
    X = read_rows(run.data)
    original, _ = read_ensemble(run.model)
    forest = None
    if cert.region.plausibility is not None:
        forest = load_artifact(run.out / cert.region.plausibility.path)
        assert forest.delta_abs == cert.region.delta_abs
    c_o = cert.region.margin_threshold
    assert c_o == region_margin(original, cert.region.eta)
    inside = region_mask(original, c_o, forest, X)
    assert inside.sum() == cert.region.samples_kept
    assert (~inside).sum() == cert.region.samples_dropped
    if cert.region.eta == 0 and cert.region.delta == 0:
        assert inside.mean() > 0.95  # only exact vote ties may fall outside
    else:
        assert 0 < inside.mean() < 1
    so = session(run.model.read_bytes())
    sc = session((run.out / "compressed.onnx").read_bytes())
    lo, lc = labels(so, X), labels(sc, X)
    assert np.array_equal(lo[inside], lc[inside])
    assert np.array_equal(lo, original.predict(X))  # the IR reproduces onnxruntime
    # the compressed model keeps the original's interface
    assert [i.name for i in sc.get_inputs()] == [i.name for i in so.get_inputs()]
    assert sc.get_outputs()[0].name == so.get_outputs()[0].name
    assert sc.get_outputs()[0].type == so.get_outputs()[0].type


def test_verify(run):
    comp, cert = run.out / "compressed.onnx", run.out / "certificate.json"
    res = invoke("verify", run.model, comp, cert)
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("verified")
    extra = ["--exhaustive"] if run.cfg[0] == "compas" else ["--data", run.data]
    res = invoke("verify", run.model, comp, cert, "--json", *extra)
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert rep["status"] == "verified" and rep["exit_code"] == 0
    assert rep["counterexample"] is None
    assert [p["status"] for p in rep["pairs"]] == ["INFEASIBLE"] * len(rep["pairs"])
    assert len(rep["pairs"]) == len(load_cert(cert).pairs)
    if run.cfg[0] == "compas":  # 12 binary features
        assert rep["exhaustive_cells"] == 4096
    else:
        assert rep["replayed_points"] >= len(read_rows(run.data))


# ------------------------------------------------------------------------- tampering


def copy_run(r, dst: Path) -> tuple[Path, Path, Path]:
    """A private copy of a run's OUT dir: (compressed.onnx, certificate.json, dir)."""
    d = dst / "out"
    shutil.copytree(r.out, d)
    return d / "compressed.onnx", d / "certificate.json", d


def edit_cert(path: Path, fn) -> None:
    d = json.loads(path.read_text())
    fn(d)
    path.write_text(json.dumps(d, indent=1))


def tamper_leaves(src: Path, dst: Path, tree: int = 0, factor: float = -1000.0) -> None:
    """Scale one tree's leaf values of a pace-cert TreeEnsembleRegressor by ``factor``."""
    m = onnx.load(src)
    node = next(n for n in m.graph.node if n.op_type == "TreeEnsembleRegressor")
    attrs = {a.name: a for a in node.attribute}
    tids = list(attrs["target_treeids"].ints)
    w = attrs["target_weights"].floats
    hit = [i for i, t in enumerate(tids) if t == tree]
    assert hit
    for i in hit:
        w[i] = float(np.float32(w[i] * factor))
    onnx.save(m, dst)


def test_tampered_model_with_updated_hash_is_refuted(compas_run, tmp_path):
    comp, cert, _ = copy_run(compas_run, tmp_path)
    tamper_leaves(comp, comp)
    edit_cert(cert, lambda d: d["compressed"].__setitem__("sha256", sha(comp)))
    # precondition: the tampered model really disagrees with the original in the region
    X = read_rows(compas_run.data)
    original, _ = read_ensemble(compas_run.model)
    c = load_cert(cert)
    inside = region_mask(original, c.region.margin_threshold, None, X)
    lo = labels(session(compas_run.model.read_bytes()), X)
    lt = labels(session(comp.read_bytes()), X)
    assert (lo[inside] != lt[inside]).any()

    res = invoke("verify", compas_run.model, comp, cert)
    assert res.exit_code == 1, res.output
    assert res.stdout.startswith("refuted")
    assert "counterexample" in res.stdout
    res = invoke("verify", compas_run.model, comp, cert, "--json")
    assert res.exit_code == 1, res.output
    rep = json.loads(res.stdout)
    assert rep["status"] == "refuted"
    ce = rep["counterexample"]
    x = np.asarray([ce["point"]], np.float32)
    assert x.shape == (1, 12)
    assert ce["original_label"] != ce["compressed_label"]
    # the counterexample is genuine: onnxruntime disagrees there and it is in the region
    assert labels(session(compas_run.model.read_bytes()), x)[0] == ce["original_label"]
    assert labels(session(comp.read_bytes()), x)[0] == ce["compressed_label"]
    assert region_mask(original, c.region.margin_threshold, None, x)[0]


def test_tampered_model_without_hash_update_is_bad_input(compas_run, tmp_path):
    comp, cert, _ = copy_run(compas_run, tmp_path)
    tamper_leaves(comp, comp, factor=1.5)
    res = invoke("verify", compas_run.model, comp, cert)
    assert res.exit_code == 3, res.output
    assert str(comp) in res.stderr and "sha256" in res.stderr
    assert "Traceback" not in res.output


@pytest.mark.parametrize(
    "eta",
    [
        0.3,
        1e12,
        -0.5,
    ],
)
def test_certificate_with_other_eta(eta, compas_run, tmp_path):
    """A larger (valid) eta is a weaker claim: verify may pass, but must not crash; an
    invalid eta must not pass."""
    comp, cert, _ = copy_run(compas_run, tmp_path)
    edit_cert(cert, lambda d: d["region"].__setitem__("eta", eta))
    res = invoke("verify", compas_run.model, comp, cert)
    no_internal_error(res)
    if 0 <= eta < 1:
        assert res.exit_code in (0, 1, 3), res.output
    else:
        assert res.exit_code in (1, 3), res.output


def test_certificate_with_lower_eta_is_not_verified(eta_delta_run, tmp_path):
    """eta 0.1 -> 0: a larger region in which the 3-tree model may disagree."""
    comp, cert, d = copy_run(eta_delta_run, tmp_path)
    edit_cert(cert, lambda c: c["region"].__setitem__("eta", 0.0))
    X = read_rows(eta_delta_run.data)
    original, _ = read_ensemble(eta_delta_run.model)
    forest = load_artifact(d / "plausibility.json")
    inside = region_mask(original, region_margin(original, 0.0), forest, X)
    lo = labels(session(eta_delta_run.model.read_bytes()), X)
    lc = labels(session(comp.read_bytes()), X)
    disagree_inside = bool((lo[inside] != lc[inside]).any())
    res = invoke("verify", eta_delta_run.model, comp, cert)
    no_internal_error(res)
    if disagree_inside:  # a known counterexample: the claim must be refuted
        assert res.exit_code == 1, res.output
        assert "counterexample" in res.stdout
    else:
        assert res.exit_code in (0, 1), res.output


def test_certificate_with_other_original_hash_is_bad_input(compas_run, tmp_path):
    comp, cert, _ = copy_run(compas_run, tmp_path)
    edit_cert(cert, lambda d: d["original"].__setitem__("sha256", "0" * 64))
    res = invoke("verify", compas_run.model, comp, cert)
    assert res.exit_code == 3, res.output
    assert str(compas_run.model) in res.stderr and "sha256" in res.stderr


def _edit_artifact(path: Path, fn) -> None:
    d = json.loads(path.read_text())
    fn(d)
    path.write_text(json.dumps(d))


def _bump_leaf(d: dict) -> None:
    v = d["trees"][0]["value"]
    v[-1] = (float.fromhex(v[-1]) + 3.0).hex()


def test_tampered_plausibility_without_hash_update_is_bad_input(eta_delta_run, tmp_path):
    comp, cert, d = copy_run(eta_delta_run, tmp_path)
    _edit_artifact(d / "plausibility.json", _bump_leaf)
    res = invoke("verify", eta_delta_run.model, comp, cert)
    assert res.exit_code == 3, res.output
    assert "plausibility.json" in res.stderr and "sha256" in res.stderr
    assert "Traceback" not in res.output


def _set_plausibility_hash(cert: Path, artifact: Path) -> None:
    edit_cert(cert, lambda d: d["region"]["plausibility"].__setitem__("sha256", sha(artifact)))


def test_tampered_plausibility_with_hash_update_does_not_crash(eta_delta_run, tmp_path):
    comp, cert, d = copy_run(eta_delta_run, tmp_path)
    art = d / "plausibility.json"
    _edit_artifact(art, _bump_leaf)
    _set_plausibility_hash(cert, art)
    res = invoke("verify", eta_delta_run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code in (0, 1, 3), res.output


def test_plausibility_delta_abs_lowered_alone_fails(eta_delta_run, tmp_path):
    """Artifact says region = everything, certificate still states the old delta_abs."""
    comp, cert, d = copy_run(eta_delta_run, tmp_path)
    art = d / "plausibility.json"
    _edit_artifact(art, lambda a: a.__setitem__("delta_abs", (-1e9).hex()))
    _set_plausibility_hash(cert, art)
    res = invoke("verify", eta_delta_run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code in (1, 3), res.output


def _min_score(artifact: dict) -> float:
    """The smallest anomaly score A(x) any point can get (sum of the smallest leaves)."""
    return sum(
        min(float.fromhex(v) for v, left in zip(t["value"], t["left"]) if left == -1)
        for t in artifact["trees"]
    )


@pytest.mark.parametrize(
    "new_delta_abs",
    [
        pytest.param("below-min", id="below-min-score"),
        pytest.param(-1e9, id="minus-1e9"),
    ],
)
def test_plausibility_delta_abs_lowered_is_reproved(new_delta_abs, eta_delta_run, tmp_path):
    """Artifact and certificate both lower delta_abs below every attainable score (the
    plausibility constraint vanishes): verify must re-prove over the larger region."""
    comp, cert, d = copy_run(eta_delta_run, tmp_path)
    art = d / "plausibility.json"
    a = json.loads(art.read_text())
    value = float(np.floor(_min_score(a)) - 1.0) if new_delta_abs == "below-min" else new_delta_abs
    a["delta_abs"] = value.hex()
    art.write_text(json.dumps(a))
    _set_plausibility_hash(cert, art)

    def lower(c):
        c["region"]["delta_abs"] = value
        for p in c["pairs"]:
            p["delta_abs"] = value

    edit_cert(cert, lower)
    X = read_rows(eta_delta_run.data)
    original, _ = read_ensemble(eta_delta_run.model)
    c_o = load_cert(cert).region.margin_threshold
    inside = region_mask(original, c_o, load_artifact(art), X)
    assert np.array_equal(inside, region_mask(original, c_o, None, X))  # no plausibility cut
    assert inside.sum() > load_cert(eta_delta_run.out / "certificate.json").region.samples_kept
    lo = labels(session(eta_delta_run.model.read_bytes()), X)
    lc = labels(session(comp.read_bytes()), X)
    disagree_inside = bool((lo[inside] != lc[inside]).any())

    res = invoke("verify", eta_delta_run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code in (0, 1), res.output
    if res.exit_code == 1:
        assert "counterexample" in res.stdout
    if disagree_inside:
        assert res.exit_code == 1, "a training row inside the larger region disagrees"


# ------------------------------------------------------------ concurrency, stale files


def _cli(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "pace_cert.cli.main", *map(str, args)]


def _assert_consistent(out: Path, model: Path) -> None:
    assert {p.name for p in out.iterdir()} == {"certificate.json", "compressed.onnx"}
    cert = load_cert(out / "certificate.json")
    assert cert.summary.certified
    assert cert.compressed.sha256 == sha(out / "compressed.onnx")
    assert cert.original.sha256 == sha(model)


@pytest.mark.slow  # delivery, not soundness: each run's own tests pin its certificate
def test_concurrent_compress_runs(zoo_model, tmp_path):
    model, data = zoo_model("seeds", "rf", 10, 2)
    parent = tmp_path / "runs"
    outs = [parent / "a", parent / "b", parent / "same", parent / "same"]
    procs = [
        subprocess.Popen(
            _cli(
                *("compress", model, "--data", data, "--out", out),
                *("--mode", "prune", "--eta", "0.1", "--quiet"),
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for out in outs
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, (out, err)
        assert out.startswith("certified"), out
    assert sorted(p.name for p in parent.iterdir()) == ["a", "b", "same"]
    for out in set(outs):
        _assert_consistent(out, model)
    assert sha(parent / "a" / "compressed.onnx") == sha(parent / "b" / "compressed.onnx")


def test_compress_overwrites_stale_files_atomically(zoo_model, tmp_path):
    model, data = zoo_model("seeds", "rf", 10, 2)
    out = tmp_path / "out"
    out.mkdir()
    (out / "compressed.onnx").write_bytes(b"stale model")
    (out / "certificate.json").write_text('{"stale": true}\n')
    # open handles keep the stale files' inodes: rewritten in place, they would change
    before = {n: open(out / n, "rb") for n in ("compressed.onnx", "certificate.json")}  # noqa: SIM115
    res = invoke(
        *("compress", model, "--data", data, "--out", out),
        *("--mode", "prune", "--eta", "0.1", "--quiet"),
    )
    assert res.exit_code == 0, res.output
    _assert_consistent(out, model)
    assert not list(out.glob(".*.tmp")) and not list(out.glob(".*"))
    for n, f in before.items():  # replaced by rename, not rewritten in place
        with f:
            assert f.read() in (b"stale model", b'{"stale": true}\n'), n
    res = invoke("verify", model, out / "compressed.onnx", out / "certificate.json")
    assert res.exit_code == 0, res.output


def test_tampered_boundary_witness_is_refuted(compas_run, tmp_path):
    """verify re-checks the size lower bound's witnesses with onnxruntime: the run's
    pass; a swapped label, a moved point, a gap counted twice and an inflated
    witness_bound are refuted."""
    c = load_cert(compas_run.out / "certificate.json")
    assert c.summary.boundary_witnesses and c.summary.witness_bound is not None
    res = invoke(
        "verify",
        compas_run.model,
        compas_run.out / "compressed.onnx",
        compas_run.out / "certificate.json",
    )
    assert res.exit_code == 0, res.output
    n = len(c.summary.boundary_witnesses)
    assert f"size lower bound: {n} boundary witnesses re-checked" in res.stdout

    def swap(d):
        w = d["summary"]["boundary_witnesses"][0]
        w["label"], w["label_next"] = w["label_next"], w["label"]

    def duplicate(d):  # one gap counted twice
        ws = d["summary"]["boundary_witnesses"]
        ws.append(dict(ws[0]))
        d["summary"]["witness_bound"] = -(-len(ws) // 3)

    def move(d):  # x_next no longer above x
        w = d["summary"]["boundary_witnesses"][0]
        w["value_next"] = w["x"][w["feature"]]

    def inflate(d):
        d["summary"]["witness_bound"] += 1

    for k, fn in enumerate((swap, move, duplicate, inflate)):
        comp, cert, _ = copy_run(compas_run, tmp_path / str(k))
        edit_cert(cert, fn)
        res = invoke("verify", compas_run.model, comp, cert)
        assert res.exit_code == 1, (fn.__name__, res.output)
        assert res.stdout.startswith("refuted") and "size lower bound" in res.stdout
