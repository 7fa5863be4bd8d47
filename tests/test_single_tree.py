"""Mode tree end to end: the certified tree agrees with the original, as onnxruntime
computes both, on every cell of the region of small models (brute force over the whole
domain); a tampered tree is refuted by verify; the caps and the leaf bound say what is
true; a domain too large to enumerate is certified counterexample by counterexample."""

from __future__ import annotations

import itertools
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from pace_cert.driver.runner import compress
from pace_cert.driver.state import region_domain
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.region.margins import region_margin
from pace_cert.region.masks import region_mask
from pace_cert.region.plausibility import from_json_dict
from pace_cert.settings import CompressConfig

from .test_end_to_end import copy_run, edit_cert, invoke, no_internal_error, read_rows, sha

CASES = {
    # binary features (4096 cells), the plausibility forest's cuts inside the region
    "compas-rf10-d3-eta0.1-delta0.1": ("compas", "rf", 10, 3, "--eta", "0.1", "--delta", "0.1"),
    # three classes, the global region: the exact program at the root
    "seeds-rf5-d2-global": ("seeds", "rf", 5, 2),
    # ordinal features with a confidence cut
    "diabetes-rf4-d2-eta0.2": ("diabetes", "rf", 4, 2, "--eta", "0.2"),
}


def labels(path, X: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {sess.get_inputs()[0].name: X})[0]).reshape(-1)


def every_domain_cell(run, cert: dict) -> np.ndarray:
    """Every allowed cell of the run's domain (the original's and the plausibility
    forest's thresholds, the inferred binary/integer features), as float32 points."""
    original, _ = read_ensemble(run.model)
    forest = None
    if cert["region"]["plausibility"] is not None:
        forest = from_json_dict(json.loads((run.out / "plausibility.json").read_text()))
    dom = region_domain(original, read_rows(run.data), CompressConfig(), forest)
    values = [dom.reps[f][dom.allowed(f)] for f in range(dom.n_features)]
    assert np.prod([len(v) for v in values]) < 300_000  # a test must stay small
    return np.array(list(itertools.product(*values)), np.float32), original, forest


@pytest.fixture(scope="module", params=list(CASES))
def tree_run(request, compress_run):
    run = compress_run(*CASES[request.param][:4], "--mode", "tree", *CASES[request.param][4:])
    assert run.exit_code == 0, (run.stdout, run.stderr)
    return run


def test_the_tree_agrees_on_every_region_cell(tree_run):
    cert = json.loads((tree_run.out / "certificate.json").read_text())
    assert cert["compressed"]["trees"] == 1 and cert["summary"]["phase"] == "tree"
    X, original, forest = every_domain_cell(tree_run, cert)
    eta = cert["region"]["eta"]
    inside = region_mask(original, region_margin(original, eta), forest, X)
    assert inside.sum() > 0
    want = labels(tree_run.model, X[inside])
    got = labels(tree_run.out / "compressed.onnx", X[inside])
    assert np.array_equal(want, got)


def test_verify_re_proves_the_tree_and_refutes_a_tampered_one(tree_run, tmp_path):
    res = invoke("verify", tree_run.model, tree_run.out / "compressed.onnx",
                 tree_run.out / "certificate.json")  # fmt: skip
    assert res.exit_code == 0, res.output
    comp, cert_path, _ = copy_run(tree_run, tmp_path)
    m = onnx.load(comp)
    node = next(n for n in m.graph.node if n.op_type == "TreeEnsembleClassifier")
    at = {a.name: a for a in node.attribute}
    nodes, w = list(at["class_nodeids"].ints), list(at["class_weights"].floats)
    if len(set(at["class_ids"].ints)) == 1:  # one score column: flip every leaf's vote
        w = [1.0 - v for v in w]
    else:  # K columns per leaf: each leaf votes for the next class
        for leaf in set(nodes):
            idx = [i for i, n in enumerate(nodes) if n == leaf]
            vals = [w[i] for i in idx]
            for i, v in zip(idx, vals[-1:] + vals[:-1]):
                w[i] = v
    del at["class_weights"].floats[:]
    at["class_weights"].floats.extend(w)
    onnx.save(m, comp)
    edit_cert(cert_path, lambda d: d["compressed"].__setitem__("sha256", sha(comp)))
    res = invoke("verify", tree_run.model, comp, cert_path)
    no_internal_error(res)
    assert res.exit_code == 1, res.output


def test_the_summary_says_what_the_tree_is(compress_run):
    run = compress_run("seeds", "rf", 5, 2, "--mode", "tree")
    cert = json.loads((run.out / "certificate.json").read_text())
    tree = cert["summary"]["single_tree"]
    assert tree["complete"] and tree["leaves_lower_bound"] == cert["compressed"]["leaves"]
    out = invoke("compress", run.model, "--data", run.data, "--out", run.out.parent / "again",
                 "--mode", "tree", "--quiet")  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "one tree: " in out.stdout
    assert "minimal: no faithful decision tree has fewer leaves" in out.stdout


def test_a_depth_cap_no_tree_can_meet_is_proved_and_the_original_kept(compress_run):
    run = compress_run("seeds", "rf", 5, 2, "--mode", "tree", "--max-depth", "1")
    assert run.exit_code == 2, run.stdout  # three classes need two levels
    cert = json.loads((run.out / "certificate.json").read_text())
    assert cert["compressed"]["sha256"] == cert["original"]["sha256"]
    why = cert["summary"]["single_tree"]["none_within_caps"]
    assert why.startswith("proved: ")
    assert "no tree within --max-depth 1: proved" in run.stdout


def test_a_leaf_cap_below_the_fewest_leaves_is_proved(compress_run):
    run = compress_run("seeds", "rf", 5, 2, "--mode", "tree", "--max-leaves", "2")
    assert run.exit_code == 2
    cert = json.loads((run.out / "certificate.json").read_text())
    assert cert["summary"]["single_tree"]["none_within_caps"].startswith("proved: ")


def test_a_large_domain_is_certified_counterexample_by_counterexample(zoo_model):
    """With no enumeration, the tree starts from the known region points only; the
    oracle's separating samples add cells until one certifies, faithful on every cell."""
    model, data = zoo_model("seeds", "rf", 5, 2)
    original, _ = read_ensemble(model)
    X = read_rows(data)
    cfg = CompressConfig.of(mode="tree", eta=0.1, enum_cells=1, flood_points=0)
    res = compress(original, X, cfg)
    assert res.certified and res.compressed.n_trees == 1
    assert res.tree is not None and not res.tree.complete
    dom = region_domain(original, X, cfg)
    values = [dom.reps[f][dom.allowed(f)] for f in range(dom.n_features)]
    P = np.array(list(itertools.product(*values)), np.float32)
    inside = region_mask(original, region_margin(original, 0.1), None, P)
    assert np.array_equal(original.predict(P[inside]), res.compressed.predict(P[inside]))


def _rules_predict(rules: list[str], names: list[str], X: np.ndarray) -> list[str]:
    """Read ``tree_rules`` text back: per row, the class of the one leaf whose printed
    conditions all hold (the reader a user is, written down)."""
    leaves, stack = [], []
    for line in rules:
        depth = line.count("|   ")
        body = line.split("|--- ", 1)[1]
        del stack[depth:]
        if body.startswith("class: "):
            leaves.append((list(stack), body[len("class: ") :]))
            continue
        name, op, th = body.split()
        stack.append((names.index(name), op, np.float32(th)))
    out = []
    for x in X:
        hits = [c for conds, c in leaves if all((x[f] <= t) == (op == "<=") for f, op, t in conds)]
        assert len(hits) == 1
        out.append(hits[0])
    return out


def test_the_rules_inspect_prints_are_the_tree(compress_run):
    run = compress_run("diabetes", "rf", 4, 2, "--mode", "tree", "--eta", "0.2")
    comp = run.out / "compressed.onnx"
    res = invoke("inspect", comp, "--data", run.data, "--json")
    assert res.exit_code == 0, res.output
    rules = json.loads(res.stdout)["rules"]
    names = run.data.read_text().splitlines()[0].split(",")[:-1]
    X = read_rows(run.data)
    assert _rules_predict(rules, names, X) == [str(v) for v in labels(comp, X)]
    text = invoke("inspect", comp, "--data", run.data)
    assert text.exit_code == 0 and "|--- class: " in text.stdout
    assert any(n in text.stdout for n in names)


def test_the_report_draws_the_certified_tree(compress_run, tmp_path):
    run = compress_run("seeds", "rf", 5, 2, "--mode", "tree")
    res = invoke("report", run.out / "certificate.json", "--out", tmp_path / "r.html")
    assert res.exit_code == 0, res.output
    page = (tmp_path / "r.html").read_text()
    assert "The certified tree" in page and "<svg" in page and "class: " in page


def test_a_frontier_of_trees_verifies_rung_by_rung(zoo_model, tmp_path):
    """Mode tree on a ladder: each rung's directory holds one certified tree that verify
    re-proves alone, and an inner rung is never larger than the rung it started from."""
    model, data = zoo_model("seeds", "rf", 5, 2)
    out = tmp_path / "out"
    res = invoke("frontier", model, "--data", data, "--out", out, "--eta", "0,0.2",
                 "--mode", "tree", "--time-limit", "600")  # fmt: skip
    assert res.exit_code == 0, res.output
    rec = json.loads((out / "frontier.json").read_text())
    names = [r["name"] for r in rec["rungs"]]  # refined between where the size falls
    assert names[0] == "global" and names[-1] == "eta0.2"
    for r in rec["rungs"]:
        d = out / r["name"]
        assert r["status"] == "certified" and r["trees_after"] == 1
        v = invoke("verify", model, d / "compressed.onnx", d / "certificate.json")
        assert v.exit_code == 0, v.output
    leaves = [r["leaves_after"] for r in rec["rungs"]]
    assert leaves == sorted(leaves, reverse=True)  # an inner rung never larger


def test_verify_labels_the_leaf_bound_as_stated(compress_run):
    run = compress_run("seeds", "rf", 5, 2, "--mode", "tree")
    res = invoke("verify", run.model, run.out / "compressed.onnx", run.out / "certificate.json",
                 "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    claims = {c["key"]: c for c in json.loads(res.stdout)["claims"]}
    c = claims["single_tree.leaves_lower_bound"]
    assert c["status"] == "stated" and "fewer than" in c["text"]


def test_the_leaf_witness_bound_is_checked_and_never_above_the_tree(tree_run):
    """The leaf witnesses bound every faithful tree: never above the certified tree's
    leaves (nor the exact program's fewest, where it states them); verify checks them."""
    cert = json.loads((tree_run.out / "certificate.json").read_text())
    t = cert["summary"]["single_tree"]
    lw = t["leaf_witnesses"]
    assert lw is not None and 2 <= lw["bound"] == len(lw["points"])
    assert lw["bound"] <= cert["compressed"]["leaves"]
    if t["leaves_lower_bound"] is not None:
        assert lw["bound"] <= t["leaves_lower_bound"]
    res = invoke("verify", tree_run.model, tree_run.out / "compressed.onnx",
                 tree_run.out / "certificate.json", "--json")  # fmt: skip
    claims = {c["key"]: c for c in json.loads(res.stdout)["claims"]}
    assert claims["single_tree.leaf_witnesses"]["status"] == "checked"


def _forge_bound(d: dict) -> None:
    d["summary"]["single_tree"]["leaf_witnesses"]["bound"] += 1


def _forge_point(d: dict) -> None:  # a copy of a point: same label, no separator
    lw = d["summary"]["single_tree"]["leaf_witnesses"]
    lw["points"].append(list(lw["points"][0]))
    lw["labels"].append(lw["labels"][0])
    lw["bound"] += 1


def _forge_separator(d: dict) -> None:  # a separator moved out of its pair's box
    lw = d["summary"]["single_tree"]["leaf_witnesses"]
    i, j, s = lw["pairs"][0]
    lw["separators"][s] = [max(a, b) + 1.0 for a, b in zip(lw["points"][i], lw["points"][j])]


def _forge_label(d: dict) -> None:
    lw = d["summary"]["single_tree"]["leaf_witnesses"]
    labels = sorted({str(v) for v in lw["labels"]})
    other = next(v for v in lw["labels"] if str(v) != str(lw["labels"][0]))
    lw["labels"][0] = other if len(labels) > 1 else lw["labels"][0]


@pytest.mark.parametrize("forge", [_forge_bound, _forge_point, _forge_separator, _forge_label])
def test_a_forged_leaf_bound_is_refuted(compress_run, tmp_path, forge):
    run = compress_run("seeds", "rf", 5, 2, "--mode", "tree")
    comp, cert_path, _ = copy_run(run, tmp_path)
    lw = json.loads(cert_path.read_text())["summary"]["single_tree"]["leaf_witnesses"]
    assert lw["pairs"], "the case needs a same-label pair"
    edit_cert(cert_path, forge)
    res = invoke("verify", run.model, comp, cert_path)
    no_internal_error(res)
    assert res.exit_code == 1 and "leaf" in res.output, res.output
