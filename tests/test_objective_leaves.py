"""--objective leaves and the collapse step: a split collapsed is a valid tree one leaf
smaller (a stump collapses to nothing), candidates come most alike first, and PACE with
--objective leaves returns fewer leaves than prune on a forest prune proves it cannot
shrink, verified from the two files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pace_cert.driver.phases.collapse import candidates, collapse
from pace_cert.model.ensemble import Tree

from .test_end_to_end import invoke


def depth2() -> Tree:
    f = np.array([0, 1, -1, -1, 2, -1, -1])
    th = np.array([0.5, 1.5, 0, 0, 2.5, 0, 0], np.float32)
    left = np.array([1, 2, -1, -1, 5, -1, -1])
    right = np.array([4, 3, -1, -1, 6, -1, -1])
    v = np.zeros((7, 2))
    v[[2, 3, 5, 6]] = [[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.6, 0.4]]
    return Tree(f, th, left, right, v)


def test_collapsing_a_split_makes_a_valid_tree_one_leaf_smaller():
    t = depth2()
    small = collapse(t, 1)
    assert small is not None and len(small.leaves) == 3 and small.depth == 2
    X = np.array([[0, 0, 0], [0, 2, 0], [1, 0, 0], [1, 0, 3]], np.float32)
    # rows of the collapsed node meet at one leaf; the other side is unchanged
    leaves = small.apply(X)
    assert leaves[0] == leaves[1] and leaves[2] != leaves[3]
    stump = collapse(collapse(small, small.right[0]), 0)  # right side, then the root
    assert stump is None


def test_the_most_alike_children_come_first():
    order = candidates([depth2()])
    assert [(t, n) for _, t, n in order] == [(0, 1), (0, 4)]  # gap 0.1 before 0.6


@pytest.mark.slow  # a size result (the collapse's gain), not soundness: verify pins that
def test_pace_with_objective_leaves_beats_a_prune_proved_minimal(compress_run):
    prune = compress_run("seeds", "rf", 5, 2, "--mode", "prune", "--eta", "0.1")
    pace = compress_run("seeds", "rf", 5, 2, "--mode", "pace", "--objective", "leaves",
                        "--eta", "0.1")  # fmt: skip
    p = json.loads((prune.out / "certificate.json").read_text())["summary"]
    q = json.loads((pace.out / "certificate.json").read_text())["summary"]
    assert pace.exit_code == 0, pace.stdout
    assert q["objective"] == "leaves" and q["certified"]
    prune_leaves = p["leaves_after"] if prune.exit_code == 0 else p["leaves_before"]
    assert q["leaves_after"] < prune_leaves
    res = invoke("verify", pace.model, pace.out / "compressed.onnx", pace.out / "certificate.json")
    assert res.exit_code == 0, res.output


def test_the_learner_depth_is_the_generated_family(compress_run):
    """--learner-depth 1 on a depth-2 forest: generation prices stumps exactly, every new
    tree of the certified model has depth 1, and the certificate says so."""
    run = compress_run("seeds", "rf", 5, 2, "--mode", "generate", "--learner-depth", "1",
                       "--eta", "0.1")  # fmt: skip
    cert = json.loads((run.out / "certificate.json").read_text())
    s = cert["summary"]
    assert s["learner_depth"] == 1 and s["pricing"] == "exact"
    if run.exit_code == 0:
        from pace_cert.model.onnx_reader import read_ensemble

        comp, _ = read_ensemble(run.out / "compressed.onnx")
        assert all(t.depth <= 1 for t, o in zip(comp.trees, comp.origin) if o == "new"), (
            "a generated learner deeper than --learner-depth"
        )


def test_pace_prunes_first_with_the_time_prune_has():
    """Decision 0010 with --objective leaves: the pace plan runs every pruning step
    before the learner-depth tree and the collapse, the pruning steps spend the share
    they have in mode prune, and a model minimal in trees does not end the run."""
    from pace_cert.driver.plans import PLANS
    from pace_cert.settings import CompressConfig

    names = [s.name for s in PLANS["pace"].steps]
    assert names.index("tree") > names.index("l0") and names.index("collapse") > names.index("tree")
    for objective in ("trees", "leaves"):
        cfg = CompressConfig.of(mode="pace", objective=objective)
        assert cfg.tuning.pace.collapse_share == 0.0  # prune_scale() == 1: prune's shares
