"""The opset-5 TreeEnsemble operator (ai.onnx.ml opset 5) followed by an ArgMax: the IR's
labels equal onnxruntime 1.32's on every cell of small models and on bundled ones,
binary and multi-class, every accepted split mode; onnxruntime's layout rules (tree
roots, copied shared subtrees, single-leaf trees) are pinned; what cannot be modelled
exactly is rejected with the mode or attribute named (issue 39)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx import helper

from pace_cert import zoo
from pace_cert.model.ensemble import family_of, structure_key
from pace_cert.model.onnx_reader import UnsupportedModel, ensemble_from_model
from pace_cert.model.onnx_writer import ensemble_to_onnx
from pace_cert.model.runtime import labels, session
from pace_cert.region.domain import build_domain

from . import booster_models as bm
from .helpers import small_problem

MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT")
GRID2 = np.array(list(itertools.product(np.arange(-1.0, 4.5, 0.25), repeat=2)), np.float32)


def _ort(model, P):
    return labels(session(model.SerializeToString()), np.asarray(P, np.float32))


def _every_cell(ens, model):
    grid = np.array(list(itertools.product(*build_domain(ens.trees, ens.n_features).reps)))
    grid = grid.astype(np.float32)
    assert list(ens.predict(grid)) == list(_ort(model, grid))
    return len(grid)


def _stump(mode=0, split=0.5, post=0, aggregate=1, **kw):
    """One stump on x0 (``mode`` true -> leaf 0: target 0 += 1; else leaf 1: target 1 += 1)."""
    node = bm.v5_node(
        [mode],
        [split],
        [0],
        [0],
        [1],
        [1],
        [1],
        [0],
        [0, 1],
        [1.0, 1.0],
        2,
        post=post,
        aggregate=aggregate,
        **kw,
    )
    return bm.v5_model(node, 2)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("modes", [("BRANCH_LEQ",), MODES])
def test_v5_every_cell_small(n_classes, modes):
    """TreeEnsemble graphs computing small GradientBoosting models (one tree per class
    and round, base scores inside the first trees), written in every split mode: every
    cell."""
    from sklearn.ensemble import GradientBoostingClassifier

    for seed in range(3):
        X, y = small_problem(seed, n_features=3, n_classes=n_classes)
        gb = GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=seed)
        src, _ = ensemble_from_model(zoo.export_onnx(gb.fit(X, y), 3))
        model = bm.v5_from_ensemble(src, modes=modes)
        ens, _ = ensemble_from_model(model)
        assert ens.pattern == "onnx-tree-ensemble-v5-argmax"
        assert _every_cell(ens, model) > 1
        assert np.mean(ens.predict(X) == src.predict(X)) > 0.95  # the same model, rounded
        # trees read the same whatever modes wrote them (same splits, same numbering)
        leq, _ = ensemble_from_model(bm.v5_from_ensemble(src))
        assert [structure_key(t) for t in ens.trees] == [structure_key(t) for t in leq.trees]


@pytest.mark.parametrize("dataset", ["compas", "seeds", "diabetes"])
def test_v5_matches_onnxruntime_on_bundled(dataset):
    from sklearn.ensemble import GradientBoostingClassifier

    X, y, _ = zoo.load_dataset(dataset)
    X = X.astype(np.float32)
    gb = GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0)
    src, _ = ensemble_from_model(zoo.export_onnx(gb.fit(X, y), X.shape[1]))
    for classes in (True, False):
        model = bm.v5_from_ensemble(src, modes=MODES, classes=classes)
        ens, _ = ensemble_from_model(model)
        rng = np.random.default_rng(0)
        reps = build_domain(ens.trees, ens.n_features).reps
        idx = [rng.integers(0, len(c), 20_000) for c in reps]
        P = np.vstack(
            [
                X,
                rng.uniform(X.min(0) - 1, X.max(0) + 1, (3000, X.shape[1])).astype(np.float32),
                np.stack([c[i] for c, i in zip(reps, idx)], axis=1).astype(np.float32),
            ]
        )
        assert list(ens.predict(P)) == list(_ort(model, P))
        k = len(np.unique(y))
        assert family_of(ens) == "ONNX TreeEnsemble (ai.onnx.ml opset 5)"
        assert ens.n_estimators == 20 and ens.n_trees == 20 * (k if k > 2 else 1)


def test_v5_string_labels_and_index_labels():
    X, y = small_problem(0, n_features=2, n_classes=3)
    src, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 3, 2, 0).fit(X, y), 2))
    gb_like = bm.v5_from_ensemble(src)  # RF leaves score every class: one tree per class
    model = bm.v5_model(
        next(n for n in gb_like.graph.node if n.op_type == "TreeEnsemble"),
        2,
        ["ash", "birch", "cedar"],
    )
    ens, info = ensemble_from_model(model)
    assert info.label_is_string
    assert list(ens.predict(GRID2)) == list(_ort(model, GRID2))
    model = bm.v5_from_ensemble(src, classes=False)  # the ArgMax index is the label
    ens, _ = ensemble_from_model(model)
    assert list(ens.classes) == [0, 1, 2]
    assert list(ens.predict(GRID2)) == list(_ort(model, GRID2))


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_v5_split_modes_at_the_threshold(mode):
    th = np.float32(0.3)
    model = _stump(mode, float(th))
    ens, _ = ensemble_from_model(model)
    pts = [[np.nextafter(th, np.float32(-1)), 0], [th, 0], [np.nextafter(th, np.float32(1)), 0]]
    assert list(ens.predict(np.asarray(pts, np.float32))) == list(_ort(model, pts))


def test_v5_shared_subtrees_are_copied_as_onnxruntime_does():
    """Two trees whose roots share one subtree (node 1) and a leaf reached from two
    branches: onnxruntime copies every node it reaches, and so does the IR."""
    # node 0 (tree 0): x0 <= 1 ? node 1 : leaf 2;  node 2 (tree 1): x1 <= 2 ? leaf 3 : node 1
    # node 1 (shared): x1 <= 0.5 ? leaf 0 : leaf 1
    node = bm.v5_node(
        modes=[0, 0, 0],
        splits=[1.0, 0.5, 2.0],
        feats=[0, 1, 1],
        true_ids=[1, 0, 3],
        true_leafs=[0, 1, 1],
        false_ids=[2, 1, 1],
        false_leafs=[1, 1, 0],
        roots=[0, 2],
        leaf_targets=[0, 1, 1, 0],
        leaf_weights=[1.0, 2.0, 0.5, 1.25],
        n_targets=2,
    )
    model = bm.v5_model(node, 2)
    ens, _ = ensemble_from_model(model)
    assert ens.n_trees == 2 and [len(t.feature) for t in ens.trees] == [5, 5]
    assert list(ens.predict(GRID2)) == list(_ort(model, GRID2))


def test_v5_single_leaf_trees():
    """A root whose branches name the same leaf is a single-leaf tree. onnxruntime 1.32
    scores the branches' leaf; earlier versions the leaf at the root's own index: the
    IR accepts the tree only where both readings agree."""
    # tree 0: stump; tree 1: root node 1, both branches leaf 1 (= its own index)
    node = bm.v5_node(
        [0, 0], [0.5, 0.0], [0, 0], [0, 1], [1, 1], [1, 1], [1, 1], [0, 1], [0, 1], [1.0, 0.75], 2
    )
    model = bm.v5_model(node, 2)
    ens, _ = ensemble_from_model(model)
    assert [len(t.feature) for t in ens.trees] == [3, 1]
    assert list(ens.predict(GRID2)) == list(_ort(model, GRID2))
    # the same tree pointing at leaf 0: onnxruntime 1.32 reads leaf 0; rejected
    node = bm.v5_node(
        [0, 0], [0.5, 0.0], [0, 0], [0, 0], [1, 1], [1, 0], [1, 1], [0, 1], [0, 1], [1.0, 0.75], 2
    )
    with pytest.raises(UnsupportedModel, match="single-leaf tree"):
        ensemble_from_model(bm.v5_model(node, 2))


@pytest.mark.parametrize(
    "kw,needle",
    [
        ({"mode": 4}, "BRANCH_EQ"),
        ({"mode": 5}, "BRANCH_NEQ"),
        ({"aggregate": 0}, "aggregate_function AVERAGE"),
        ({"aggregate": 2}, "aggregate_function MIN"),
        ({"aggregate": 3}, "aggregate_function MAX"),
        ({"post": 1}, "post_transform SOFTMAX"),
        ({"post": 2}, "post_transform LOGISTIC"),
        ({"post": 3}, "post_transform SOFTMAX_ZERO"),
        ({"post": 4}, "post_transform PROBIT"),
        ({"dtype": np.float64}, "nodes_splits of type float64"),
    ],
)
def test_v5_what_cannot_be_modelled_is_rejected(kw, needle):
    with pytest.raises(UnsupportedModel, match=needle):
        ensemble_from_model(_stump(**kw))


def test_v5_membership_is_rejected():
    model = _stump(6, membership_values=helper.make_tensor("mv", 1, [3], [2.0, 5.0, np.nan]))
    with pytest.raises(UnsupportedModel, match="BRANCH_MEMBER"):
        ensemble_from_model(model)


@pytest.mark.parametrize("post", [1, 2, 3, 4])
def test_v5_post_transforms_tie_or_break_the_argmax(post):
    """Why only NONE is accepted, measured on onnxruntime 1.32 (whose codes 1 and 2 are
    LOGISTIC and SOFTMAX, the ONNX spec's SOFTMAX and LOGISTIC): for raw scores [20, 30]
    code 1 gives [1, 1] and the ArgMax returns the first index, where the raw argmax is
    the second; PROBIT (4) of scores above 1 is NaN. Every code is rejected."""
    # tree 0: x0 <= 0.5 ? target 0 += 20 : += 0;  tree 1: x0 <= 0.5 ? target 1 += 30 : += 0
    node = bm.v5_node(
        modes=[0, 0],
        splits=[0.5, 0.5],
        feats=[0, 0],
        true_ids=[0, 2],
        true_leafs=[1, 1],
        false_ids=[1, 3],
        false_leafs=[1, 1],
        roots=[0, 1],
        leaf_targets=[0, 0, 1, 1],
        leaf_weights=[20.0, 0.0, 30.0, 0.0],
        n_targets=2,
        post=post,
    )
    model = bm.v5_model(node, 2)
    got = list(_ort(model, [[0.0, 0.0]]))
    assert got == ([0] if post in (1, 4) else [1])  # the raw scores' argmax is 1
    with pytest.raises(UnsupportedModel, match="post_transform"):
        ensemble_from_model(model)


@pytest.mark.parametrize(
    "edit,needle",
    [
        (lambda m: _set_argmax(m, keepdims=1), "keepdims=0"),
        (lambda m: _set_argmax(m, axis=0), "axis 1"),
        (lambda m: _set_argmax(m, select_last_index=1), "first index"),
        (lambda m: _add_node(m, helper.make_node("Neg", ["scores"], ["neg"])), "Neg"),
    ],
)
def test_v5_graph_other_than_argmax_is_rejected(edit, needle):
    model = _stump()
    edit(model)
    with pytest.raises(UnsupportedModel, match=needle):
        ensemble_from_model(model)


def _set_argmax(m, **kw):
    am = next(n for n in m.graph.node if n.op_type == "ArgMax")
    for key, value in kw.items():
        for a in list(am.attribute):
            if a.name == key:
                am.attribute.remove(a)
        am.attribute.append(helper.make_attribute(key, value))


def _add_node(m, node):
    m.graph.node.append(node)


def test_v5_cycle_is_rejected():
    # node 0: true -> node 1, false -> leaf 0; node 1: true -> node 0 (a cycle), false -> leaf 1
    node = bm.v5_node(
        [0, 0], [0.5, 0.7], [0, 0], [1, 0], [0, 0], [0, 1], [1, 1], [0], [0, 1], [1.0, 1.0], 2
    )
    with pytest.raises(UnsupportedModel, match="cycle"):
        ensemble_from_model(bm.v5_model(node, 2))


def test_v5_compressed_model_is_written_as_pace_cert_output():
    """The IR of a TreeEnsemble model writes as pace-cert's own graph, which reads back
    with the same labels (the compressed model of a v5 original)."""
    X, y = small_problem(1, n_features=2, n_classes=3)
    src, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 3, 2, 0).fit(X, y), 2))
    model = bm.v5_from_ensemble(src)
    ens, info = ensemble_from_model(model)
    written = ensemble_to_onnx(ens, info)
    back, _ = ensemble_from_model(written)
    assert back.pattern == "pace-cert-argmax"
    assert list(back.predict(GRID2)) == list(_ort(model, GRID2)) == list(_ort(written, GRID2))
