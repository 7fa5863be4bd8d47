"""The IR's labels equal onnxruntime's on every supported exporter pattern (SPEC §3)."""

from __future__ import annotations

import copy
import dataclasses
import itertools

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from pace_cert import zoo
from pace_cert.errors import InputError
from pace_cert.model.ensemble import FLOAT32_SAFE_SUM, LEAF, Tree, float32_sum_guard
from pace_cert.model.onnx_reader import (
    UnsupportedModel,
    ensemble_from_model,
    read_ensemble,
)
from pace_cert.model.onnx_writer import ensemble_to_onnx
from pace_cert.model.runtime import labels, session
from pace_cert.model.tree_ensemble_op import NODE_ATTRS
from pace_cert.region.domain import build_domain

from .helpers import small_problem, tec_model, trained


def _agreement_points(ens, X, seed=0):
    rng = np.random.default_rng(seed)
    lo, hi = X.min(axis=0) - 2, X.max(axis=0) + 2
    rand = rng.uniform(lo, hi, size=(3000, X.shape[1])).astype(np.float32)
    dom = build_domain(ens.trees, ens.n_features)
    cells = [r for r in dom.reps]
    n_cells = int(np.prod([len(c) for c in cells]))
    pts = [X, rand]
    if n_cells <= 50_000:
        pts.append(np.array(list(itertools.product(*cells)), np.float32))
    else:  # random cell representatives
        idx = [rng.integers(0, len(c), 5000) for c in cells]
        pts.append(np.stack([c[i] for c, i in zip(cells, idx)], axis=1).astype(np.float32))
    return np.vstack(pts)


@pytest.mark.parametrize("kind", ["rf", "et", "ada", "gb"])
@pytest.mark.parametrize("dataset", ["compas", "seeds"])  # binary / 3 classes
@pytest.mark.parametrize("depth", [1, 3])
def test_ir_matches_onnxruntime_on_bundled(kind, dataset, depth):
    _, model, X, _ = trained(kind, dataset, 15, depth)
    ens, _ = ensemble_from_model(model)
    P = _agreement_points(ens, X)
    ort_labels = labels(session(model.SerializeToString()), P)
    assert np.array_equal(ens.predict(P), ort_labels)


@pytest.mark.parametrize("kind", ["rf", "ada", "gb"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_ir_matches_onnxruntime_every_cell_small(kind, n_classes):
    """Every cell representative of small models (exhaustive)."""
    for seed in range(3):
        X, y = small_problem(seed, n_features=3, n_classes=n_classes)
        from pace_cert import zoo

        m = zoo.make_model(kind, 7, 2, seed).fit(X, y)
        model = zoo.export_onnx(m, 3)
        ens, _ = ensemble_from_model(model)
        dom = build_domain(ens.trees, 3)
        grid = np.array(list(itertools.product(*dom.reps)), np.float32)
        assert np.array_equal(ens.predict(grid), labels(session(model.SerializeToString()), grid))


def test_string_labels_rf_and_adaboost():
    for kind in ("rf", "ada"):
        _, model, X, _ = trained(kind, "seeds", 10, 2, labels=np.array(["kama", "rosa", "cana"]))
        ens, info = ensemble_from_model(model)
        assert info.label_is_string
        P = _agreement_points(ens, X)
        assert list(ens.predict(P)) == list(labels(session(model.SerializeToString()), P))


@pytest.mark.parametrize("kind", ["rf", "et", "ada", "gb", "dt"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("string_labels", [False, True])
def test_zipmap_exports_read_like_onnxruntime(kind, n_classes, string_labels):
    """skl2onnx with zipmap on (its default) ends the label path with Identity (string
    labels) or Cast-to-int64 nodes (int64 labels; AdaBoost two of them): read, and
    labelled as onnxruntime labels them on every cell. Before, every int64 export and
    string AdaBoost were rejected."""
    from skl2onnx import to_onnx
    from sklearn.tree import DecisionTreeClassifier

    from pace_cert import zoo

    X, y = small_problem(1, n_features=3, n_classes=n_classes)
    if string_labels:
        y = np.array(["ash", "birch", "cedar"])[y]
    m = DecisionTreeClassifier(max_depth=2, random_state=0) if kind == "dt" else None
    m = (m or zoo.make_model(kind, 4, 2, 0)).fit(X, y)
    model = to_onnx(m, X[:1].astype(np.float32), options={id(m): {"zipmap": True}})
    assert any(n.op_type == "ZipMap" for n in model.graph.node)
    ens, info = ensemble_from_model(model)
    assert info.label_is_string == string_labels
    grid = np.array(list(itertools.product(*build_domain(ens.trees, 3).reps)), np.float32)
    assert list(ens.predict(grid)) == list(labels(session(model.SerializeToString()), grid))


def test_a_label_cast_to_another_type_is_rejected():
    """Only int64 -> int64 Casts are identities; a Cast that changes the label type
    (here int64 -> float) is not read."""
    from pace_cert import zoo

    X, y = small_problem(1, n_features=3, n_classes=2)
    model = zoo.export_onnx(zoo.make_model("rf", 3, 2, 0).fit(X, y), 3)
    g = model.graph
    old = g.output[0].name
    g.node.append(helper.make_node("Cast", [old], ["relabelled"], to=TensorProto.FLOAT))
    g.output[0].name = "relabelled"
    with pytest.raises(UnsupportedModel):
        ensemble_from_model(model)


# --- onnxruntime's binary quirks, measured on 1.32 and pinned here ---------------------

GRID = np.array([[-1.0], [0.0], [1.0]], np.float32)


@pytest.mark.parametrize(
    "class_ids,weights,base,expected_rule",
    [
        ([0, 0], [0.4, 0.6], None, "binary_threshold_0.5"),  # all weights >= 0: s > 0.5
        ([0, 0], [0.5, 0.50000006], None, "binary_threshold_0.5"),  # tie at 0.5 -> class 0
        ([0, 0], [-0.1, 0.1], None, "binary_threshold_0"),  # a negative weight: s > 0
        ([0, 0], [0.3, 0.6], [0.3], "binary_threshold_0.5"),  # base added before the test
        ([0, 0], [0.3, -0.6], [0.2], "binary_threshold_0"),
        ([0, 1, 0, 1], [0.9, 0.1, 0.1, 0.9], None, "binary_class1_positive"),  # both named
        ([0, 1, 0, 1], [0.9, -5.0, 0.1, 0.2], None, "binary_class1_positive"),
    ],
)
def test_binary_quirks(class_ids, weights, base, expected_rule):
    model = tec_model(class_ids, weights, base=base)
    ens, _ = ensemble_from_model(model)
    assert ens.pattern.endswith(expected_rule)
    assert np.array_equal(ens.predict(GRID), labels(session(model.SerializeToString()), GRID))


@pytest.mark.parametrize("mode", ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GT", "BRANCH_GTE"])
def test_split_modes_at_the_threshold(mode):
    th = np.float32(0.3)  # not exactly representable: the float32 value decides
    model = tec_model([0, 0], [0.2, 0.9], modes=(mode,), threshold=float(th))
    ens, _ = ensemble_from_model(model)
    pts = np.array(
        [[np.nextafter(th, -np.inf)], [th], [np.nextafter(th, np.inf)], [-5], [5]], np.float32
    )
    assert np.array_equal(ens.predict(pts), labels(session(model.SerializeToString()), pts))


def test_rejects_what_it_cannot_model():
    with pytest.raises(UnsupportedModel):
        ensemble_from_model(tec_model([0, 0], [0.4, 0.6], modes=("BRANCH_EQ",)))
    with pytest.raises(UnsupportedModel):  # two base values on a single score column
        ensemble_from_model(tec_model([0, 0], [0.4, 0.6], base=[0.1, 0.2]))


# --- graphs the reader would read differently from onnxruntime are rejected ----------

GRID3 = np.array(list(itertools.product(np.arange(-1.0, 4.5, 0.25), repeat=3)), np.float32)


def _small_export(kind: str, seed: int = 1):
    """A skl2onnx export of a 3-class ``kind`` forest of 3 (AdaBoost: 4) depth-2 trees
    on 3 features."""
    X, y = small_problem(seed, n_features=3, n_classes=3)
    return zoo.export_onnx(zoo.make_model(kind, 4 if kind == "ada" else 3, 2, seed).fit(X, y), 3)


def _ort(model) -> np.ndarray:
    return labels(session(model.SerializeToString()), GRID3)


def _ensemble_node(model):
    return next(n for n in model.graph.node if n.op_type.startswith("TreeEnsemble"))


def _reorder_nodes(model, perm):
    """A copy of ``model`` whose tree-ensemble node lists its nodes in order ``perm``
    (every node keeps its tree id, node id, split and children)."""
    m = copy.deepcopy(model)
    for a in _ensemble_node(m).attribute:
        if a.name in NODE_ATTRS:
            arr = a.ints or a.floats or a.strings
            vals = list(arr)
            del arr[:]
            arr.extend(vals[i] for i in perm)
    return m


def _ints(node, name):
    return next(a for a in node.attribute if a.name == name).ints


def _n_nodes(model) -> int:
    return len(_ints(_ensemble_node(model), "nodes_treeids"))


def _renumber_tree(model, tree, shift):
    """A copy of ``model`` whose tree ``tree`` has node ids 0, shift+1, shift+2, ...
    (children and class weights renumbered alike: the same tree, non-canonical ids)."""
    m = copy.deepcopy(model)
    node = _ensemble_node(m)

    def new(i):
        return i if i == 0 else i + shift

    tids = list(_ints(node, "nodes_treeids"))
    for name in ("nodes_nodeids", "nodes_truenodeids", "nodes_falsenodeids"):
        arr = _ints(node, name)  # a leaf's children are 0, which stays 0
        for i, t in enumerate(tids):
            if t == tree:
                arr[i] = new(arr[i])
    ctree, cnode = _ints(node, "class_treeids"), _ints(node, "class_nodeids")
    for i, t in enumerate(ctree):
        if t == tree:
            cnode[i] = new(cnode[i])
    return m


def _move_node_last(model, pos):
    """The node at attribute position ``pos`` listed last: its tree's ids run A, B, A."""
    n = _n_nodes(model)
    return _reorder_nodes(model, [i for i in range(n) if i != pos] + [pos])


def test_tree_not_rooted_at_the_first_node_listed_is_rejected():
    """onnxruntime roots a tree at the first node listed for it, the IR at node id 0:
    listing node 1 before node 0 keeps the IR but changes onnxruntime's labels."""
    model = _small_export("rf")
    ens, _ = ensemble_from_model(model)
    swapped = _reorder_nodes(model, [1, 0, *range(2, _n_nodes(model))])
    assert np.array_equal(ens.predict(GRID3), _ort(model))
    assert not np.array_equal(ens.predict(GRID3), _ort(swapped))  # what the old IR said
    with pytest.raises(UnsupportedModel, match="first node listed"):
        ensemble_from_model(swapped)


def test_tree_listed_in_two_runs_is_rejected():
    """onnxruntime starts a tree wherever the tree id changes: tree 0's last leaf
    listed after the other trees is a fourth tree (scoring every row) for onnxruntime,
    part of tree 0 for the old reader."""
    model = _small_export("rf")
    ens, _ = ensemble_from_model(model)
    last_of_tree0 = list(_ints(_ensemble_node(model), "nodes_treeids")).count(0) - 1
    split = _move_node_last(model, last_of_tree0)
    assert not np.array_equal(ens.predict(GRID3), _ort(split))
    with pytest.raises(UnsupportedModel, match="contiguously"):
        ensemble_from_model(split)


def test_node_ids_other_than_0_to_m_minus_1_are_rejected():
    """The ONNX spec: node ids start at 0 and increment by 1 (onnxruntime happens to
    run this one as the same tree, but the IR only models the canonical layout)."""
    with pytest.raises(UnsupportedModel, match="node ids are not"):
        ensemble_from_model(_renumber_tree(_small_export("rf"), tree=1, shift=10))


def test_class_weight_on_a_missing_node_is_rejected():
    model = copy.deepcopy(_small_export("rf"))
    _ints(_ensemble_node(model), "class_nodeids")[0] = 99
    with pytest.raises(UnsupportedModel, match="not in the tree"):
        ensemble_from_model(model)


def test_canonical_exports_and_writer_output_load():
    """skl2onnx exports and pace-cert's own output (with and without the scores copy)
    are canonical: they load, and the IR's labels are onnxruntime's."""
    for kind in ("rf", "gb", "ada"):
        model = _small_export(kind)
        ens, info = ensemble_from_model(model)
        assert np.array_equal(ens.predict(GRID3), _ort(model))
    model = _small_export("rf")
    ens, info = ensemble_from_model(model)
    for inf in (info, dataclasses.replace(info, scores_name=None)):
        written = ensemble_to_onnx(ens, inf)
        back, back_info = ensemble_from_model(written)
        assert back.pattern == "pace-cert-argmax" and back_info == inf
        assert np.array_equal(back.predict(GRID3), _ort(written))
        assert np.array_equal(back.predict(GRID3), ens.predict(GRID3))


def _shadow_classes(model, how: str):
    """A copy of ``model`` with a second definition of its ``classes`` initializer holding
    the labels rotated: a later duplicate initializer or a Constant node."""
    m = copy.deepcopy(model)
    ini = next(i for i in m.graph.initializer if i.name == "classes")
    fake = numpy_helper.from_array(np.roll(numpy_helper.to_array(ini), 1), ini.name)
    if how == "initializer":
        m.graph.initializer.append(fake)
    else:
        m.graph.node.insert(0, helper.make_node("Constant", [], [ini.name], value=fake))
    return m


@pytest.mark.parametrize("how", ["initializer", "constant"])
def test_shadowed_class_list_is_rejected(how):
    """onnxruntime reads the later definition of a doubly defined name, the old reader
    the first initializer: the labels differ, so such graphs are rejected."""
    model = _small_export("ada")
    ens, _ = ensemble_from_model(model)
    shadowed = _shadow_classes(model, how)
    assert not np.array_equal(ens.predict(GRID3), _ort(shadowed))
    with pytest.raises(UnsupportedModel, match="defined more than once"):
        ensemble_from_model(shadowed)


@pytest.mark.parametrize("target", ["graph input", "node output"])
def test_node_output_redefining_a_name_is_rejected(target):
    model = copy.deepcopy(_small_export("ada"))
    name = "X" if target == "graph input" else model.graph.node[0].output[0]
    model.graph.node.append(helper.make_node("Identity", ["classes"], [name]))
    with pytest.raises(UnsupportedModel, match="defined more than once"):
        ensemble_from_model(model)


def test_initializer_that_is_also_a_graph_input_is_accepted():
    """The legacy default-value form (an initializer listed as a graph input too) is one
    definition, not two."""
    model = _small_export("ada")
    legacy = copy.deepcopy(model)
    legacy.graph.input.append(helper.make_tensor_value_info("weight", TensorProto.FLOAT, []))
    ens, _ = ensemble_from_model(legacy)
    assert np.array_equal(ens.predict(GRID3), _ort(legacy))
    assert np.array_equal(ens.predict(GRID3), ensemble_from_model(model)[0].predict(GRID3))


BIG = float(np.float32(3e38))


def _with_overflow_trees(ens):
    """``ens`` after four stumps adding +BIG, +BIG, -BIG, -BIG to class 0 when x0 > 3.5:
    the exact sum (the IR's, in float64) is 0, onnxruntime's float32 sum is inf."""
    k = ens.n_classes
    extra = []
    for v in (BIG, BIG, -BIG, -BIG):
        value = np.zeros((3, k))
        value[2, 0] = v
        feature, threshold = np.array([0, LEAF, LEAF]), np.array([3.5, 0, 0], np.float32)
        left, right = np.array([1, LEAF, LEAF]), np.array([2, LEAF, LEAF])
        extra.append(Tree(feature, threshold, left, right, value))
    trees = (*extra, *ens.trees)
    return dataclasses.replace(
        ens, trees=trees, weights=np.ones(len(trees)), origin=("original",) * len(trees)
    )


def test_scores_that_can_overflow_float32_are_rejected():
    model = _small_export("rf")
    ens, info = ensemble_from_model(model)
    big = _with_overflow_trees(ens)
    written = ensemble_to_onnx(big, info)
    assert np.array_equal(big.predict(GRID3), ens.predict(GRID3))  # the IR: unchanged
    assert not np.array_equal(big.predict(GRID3), _ort(written))  # onnxruntime: inf
    with pytest.raises(ValueError, match="overflow"):
        float32_sum_guard(big.trees, big.base)
    with pytest.raises(UnsupportedModel, match="overflow"):
        ensemble_from_model(written)
    assert float32_sum_guard(ens.trees, np.full(3, FLOAT32_SAFE_SUM / 2)) > 0


def _set_initializer(model, name, value):
    """A copy of ``model`` with initializer ``name`` replaced by float32 ``value``."""
    m = copy.deepcopy(model)
    ini = next(i for i in m.graph.initializer if i.name == name)
    ini.CopyFrom(numpy_helper.from_array(np.asarray(value, np.float32), name))
    return m


def _per_class_divisor(model, bias):
    """A copy of ``model`` whose final Div divides class k by normaliser + bias[k]."""
    m = copy.deepcopy(model)
    add = next(n for n in m.graph.node if n.op_type == "Add")
    add.input[1] = "class_bias"
    m.graph.initializer.append(numpy_helper.from_array(np.asarray(bias, np.float32), "class_bias"))
    return m


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: _set_initializer(m, "mul_operand", 400.0),  # Exp overflows in float32
        lambda m: _set_initializer(m, "mul_operand", [0.5, 0.5, 8.0]),  # per-class scale
        lambda m: _per_class_divisor(m, [0.0, 0.0, 1e6]),  # per-class normaliser
    ],
    ids=["exp-overflow", "per-class-scale", "per-class-normaliser"],
)
def test_adaboost_vote_graph_edits_are_rejected(edit):
    """Edits of the SAMME vote graph that the old reader ignored (it read one number
    per constant and never looked at the normaliser's addend) change onnxruntime's
    labels; they are rejected."""
    model = _small_export("ada")
    ens, _ = ensemble_from_model(model)
    edited = edit(model)
    assert not np.array_equal(ens.predict(GRID3), _ort(edited))
    with pytest.raises(UnsupportedModel):
        ensemble_from_model(edited)


def _leak_input(m):
    m.graph.node.append(helper.make_node("Identity", ["X"], ["leak"]))
    m.graph.output.append(helper.make_tensor_value_info("leak", TensorProto.FLOAT, None))


def _unknown_op(m):
    m.graph.node.append(helper.make_node("NoSuchOp", ["X"], ["junk"], domain="com.nowhere"))
    m.opset_import.append(helper.make_opsetid("com.nowhere", 1))


def _classes_from_constant(m):
    ini = m.graph.initializer.pop()
    m.graph.node.insert(0, helper.make_node("Constant", [], [ini.name], value=ini))


def _second_scores_copy(m):
    m.graph.node.append(helper.make_node("Identity", ["pace_scores"], ["scores2"]))
    m.graph.output.append(helper.make_tensor_value_info("scores2", TensorProto.FLOAT, None))


def _opset_1(m):
    next(o for o in m.opset_import if o.domain == "").version = 1


def _symbolic_width(m):
    m.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "F"


@pytest.mark.parametrize(
    "edit",
    [
        _leak_input,
        _unknown_op,
        _classes_from_constant,
        _second_scores_copy,
        _opset_1,
        _symbolic_width,
    ],
)
@pytest.mark.parametrize("labels", [None, [10, 20, 30]])
def test_pace_cert_format_accepts_only_what_the_writer_writes(edit, labels):
    """The compressed model is certified as written: any node, output, initializer,
    opset or interface the writer does not produce is rejected (labels 0..K-1: ArgMax
    writes the label; other labels: a Gather from the class list)."""
    ens, info = ensemble_from_model(_small_export("rf"))
    if labels is not None:
        ens = dataclasses.replace(ens, classes=np.array(labels, np.int64))
    elif edit is _classes_from_constant:
        return  # no class list to move: there is no Gather
    model = ensemble_to_onnx(ens, info)
    edit(model)
    with pytest.raises(UnsupportedModel, match="recognise_pace_cert_argmax"):
        ensemble_from_model(model)


@pytest.mark.parametrize("labels", [None, [10, 20, 30], ["a", "b", "c"]])
@pytest.mark.parametrize("scores", [True, False])
def test_pace_cert_format_reads_back_what_it_wrote(labels, scores):
    """Every layout the writer produces (with or without the scores output; labels that
    are the class indices, other integers or strings) reads back as the same ensemble,
    whose labels are onnxruntime's on the grid."""
    ens, info = ensemble_from_model(_small_export("rf"))
    if labels is not None:
        ens = dataclasses.replace(ens, classes=np.array(labels, object if labels[0] == "a"
                                                                else np.int64))  # fmt: skip
        info = dataclasses.replace(info, label_is_string=labels[0] == "a")
    if not scores:
        info = dataclasses.replace(info, scores_name=None)
    model = ensemble_to_onnx(ens, info)
    back, _ = ensemble_from_model(model)
    assert list(back.classes) == list(ens.classes)
    assert len(model.graph.output) == (2 if scores else 1)
    ops = [n.op_type for n in model.graph.node]
    assert ops == ["TreeEnsembleRegressor", "ArgMax", *([] if labels is None else ["Gather"])]
    assert np.array_equal(back.predict(GRID3).astype(str), _ort(model).astype(str))


def test_the_old_layout_with_an_identity_still_reads():
    """Models written before the scores output came straight from the regressor (an
    Identity copied it) are read as they were."""
    ens, info = ensemble_from_model(_small_export("rf"))
    ens = dataclasses.replace(ens, classes=np.array([10, 20, 30], np.int64))
    model = ensemble_to_onnx(ens, info)
    reg = next(n for n in model.graph.node if n.op_type == "TreeEnsembleRegressor")
    am = next(n for n in model.graph.node if n.op_type == "ArgMax")
    reg.output[0] = am.input[0] = "pace_scores"
    model.graph.node.append(helper.make_node("Identity", ["pace_scores"], [info.scores_name]))
    back, _ = ensemble_from_model(model)
    assert np.array_equal(back.predict(GRID3), _ort(model))


def test_read_ensemble_names_the_file(tmp_path):
    """The CLI's path: an unsupported layout is an InputError naming the file (exit 3)."""
    path = tmp_path / "split.onnx"
    path.write_bytes(_move_node_last(_small_export("rf"), 0).SerializeToString())
    with pytest.raises(InputError, match=r"split\.onnx"):
        read_ensemble(path)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("strings", [False, True])
def test_a_one_tree_classifier_reads_back_as_it_labels(n_classes, strings):
    """Mode tree's file: one TreeEnsembleClassifier whose leaves score 1 for their class.
    It reads back (pattern pace-cert-tree) with onnxruntime's labels on the grid, the
    same leaf classes as the one-hot tree it came from, and writes the same bytes again
    (what compress certifies is what it writes)."""
    from pace_cert.learners.pool import fold
    from pace_cert.model.onnx_writer import tree_classifier_to_onnx

    X, y = small_problem(3, n_features=3, n_classes=n_classes)
    dt = zoo.make_model("rf", 1, 4, 0).fit(X, y)
    ens, info = ensemble_from_model(zoo.export_onnx(dt, 3))
    tree = ens.trees[0]
    value = np.zeros_like(tree.value)
    value[tree.leaves, np.argmax(tree.value[tree.leaves], axis=1)] = 1.0
    classes = np.array([f"c{k}" for k in range(n_classes)], object) if strings else ens.classes
    one_hot, _ = fold([Tree(tree.feature, tree.threshold, tree.left, tree.right, value)],
                      np.ones(1), np.zeros(n_classes), classes, ["new"], 3, 0.0)  # fmt: skip
    info = dataclasses.replace(info, label_is_string=strings)
    model = tree_classifier_to_onnx(one_hot, info)
    assert [n.op_type for n in model.graph.node] == ["TreeEnsembleClassifier"]
    back, _ = ensemble_from_model(model)
    assert back.pattern.startswith("pace-cert-tree/") and back.origin == ("new",)
    assert np.array_equal(back.predict(GRID3).astype(str), labels(session(
        model.SerializeToString()), GRID3).astype(str))  # fmt: skip
    assert np.array_equal(back.predict(GRID3), one_hot.predict(GRID3))
    again = ensemble_to_onnx(back, info)
    assert again.SerializeToString() == model.SerializeToString()


def test_a_one_tree_classifier_with_more_than_the_writer_writes_is_refused():
    from pace_cert.model.onnx_writer import tree_classifier_to_onnx
    from pace_cert.model.readers.pace_cert_tree import recognise_pace_cert_tree

    X, y = small_problem(3, n_features=3, n_classes=2)
    ens, info = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 1, 3, 0).fit(X, y), 3))
    t = ens.trees[0]
    value = np.zeros_like(t.value)
    value[t.leaves, np.argmax(t.value[t.leaves], axis=1)] = 1.0
    from pace_cert.learners.pool import fold

    one_hot, _ = fold([Tree(t.feature, t.threshold, t.left, t.right, value)], np.ones(1),
                      np.zeros(2), ens.classes, ["new"], 3, 0.0)  # fmt: skip
    model = tree_classifier_to_onnx(one_hot, info)
    _leak_input(model)
    with pytest.raises(UnsupportedModel, match=r"outputs other than|nodes other than"):
        recognise_pace_cert_tree(model)
