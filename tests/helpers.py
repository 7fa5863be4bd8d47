"""Shared builders for the tests: small trained ensembles and hand-made ONNX models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from pace_cert import zoo
from pace_cert.model.ensemble import LEAF, Tree


def binned(name: str) -> tuple[np.ndarray, np.ndarray]:
    X, y, _ = zoo.load_dataset(name)
    return zoo.bin_features(X).astype(np.float32), y


def trained(kind: str, name: str, n: int, depth: int, seed: int = 0, labels=None):
    """(sklearn model, onnx model, X float32, y) for a bundled dataset."""
    X, y = binned(name)
    if labels is not None:
        y = np.asarray(labels)[y]
    m = zoo.make_model(kind, n, depth, seed).fit(X, y)
    return m, zoo.export_onnx(m, X.shape[1]), X, y


def candidates(original, rng) -> list:
    """Random sub-ensembles of ``original`` with random weights and offsets, folded to
    float32 as the driver does, plus the original itself in our format (a faithful one)."""
    from pace_cert.learners.pool import fold

    out = []
    for _ in range(4):
        w = rng.uniform(0, 1, original.n_trees) * (rng.uniform(size=original.n_trees) < 0.6)
        if not w.any():
            w[0] = 1.0
        offsets = np.r_[0.0, rng.normal(scale=0.2, size=original.n_classes - 1)]
        model, _ = fold(
            list(original.trees),
            w,
            offsets,
            original.classes,
            ["original"] * original.n_trees,
            original.n_features,
            1e-9,
        )
        out.append(model)
    model, _ = fold(
        list(original.trees),
        original.weights,
        original.base,
        original.classes,
        ["original"] * original.n_trees,
        original.n_features,
        0,
    )
    out.append(model)
    return out


def oracle_region(original, extra_trees, eta: float, forest, binary=None):
    """(domain, RegionSpec, c_o) for separating candidates of ``original`` in the region
    (confidence eta, plausibility ``forest`` or None); the domain also covers
    ``extra_trees`` (e.g. a candidate's)."""
    from pace_cert.oracle.score_model import RegionSpec, ScoreModel
    from pace_cert.region.domain import build_domain
    from pace_cert.region.margins import region_margin

    pl = None if forest is None else ScoreModel.sum_of(forest.trees)
    trees = [*original.trees, *extra_trees, *(forest.trees if forest else [])]
    dom = build_domain(trees, original.n_features, binary)
    c_o = region_margin(original, eta)
    region = RegionSpec(c_o, pl, None if forest is None else forest.delta_abs)
    return dom, region, c_o


def small_problem(seed: int, n_features: int = 3, n_classes: int = 2, n_rows: int = 120):
    """A random small dataset on a coarse grid: few distinct thresholds per feature."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n_rows, n_features)).astype(np.float32)
    w = rng.normal(size=(n_features, n_classes))
    y = np.argmax(X @ w + rng.normal(scale=1.0, size=(n_rows, n_classes)), axis=1)
    if len(np.unique(y)) < n_classes:
        y[:n_classes] = np.arange(n_classes)
    return X, y


def write_small_problem(
    root: Path,
    family: str,
    n: int,
    depth: int,
    seed: int,
    *,
    n_features: int = 3,
    n_classes: int = 2,
    n_rows: int = 150,
    model_seed: int | None = None,
) -> tuple[Path, Path]:
    """``small_problem(seed, n_features, n_classes, n_rows)`` fitted by a zoo model
    (seeded ``model_seed``, default ``seed``), written as ``root/model.onnx`` and
    ``root/train.csv`` (the inputs of ``pace-cert compress``); returns both paths."""
    X, y = small_problem(seed, n_features=n_features, n_classes=n_classes, n_rows=n_rows)
    model = zoo.make_model(family, n, depth, seed if model_seed is None else model_seed)
    model.fit(X, y)
    onnx_path, csv_path = root / "model.onnx", root / "train.csv"
    onnx_path.write_bytes(zoo.export_onnx(model, n_features).SerializeToString())
    zoo.write_csv(csv_path, X, y, [f"f{i}" for i in range(n_features)])
    return onnx_path, csv_path


def tec_model(
    class_ids, weights, modes=("BRANCH_LEQ",), threshold=0.0, base=None, labels=(0, 1), n_features=1
) -> onnx.ModelProto:
    """One stump TreeEnsembleClassifier: x0 <mode> threshold -> leaf 1 else leaf 2.

    ``class_ids``/``weights`` list the (leaf-1 entries..., leaf-2 entries...) in order;
    half of them belong to each leaf.
    """
    half = len(class_ids) // 2
    kw = dict(
        nodes_treeids=[0, 0, 0],
        nodes_nodeids=[0, 1, 2],
        nodes_featureids=[0, 0, 0],
        nodes_values=[float(threshold), 0.0, 0.0],
        nodes_modes=[modes[0], "LEAF", "LEAF"],
        nodes_truenodeids=[1, 0, 0],
        nodes_falsenodeids=[2, 0, 0],
        class_treeids=[0] * len(class_ids),
        class_nodeids=[1] * half + [2] * half,
        class_ids=list(class_ids),
        class_weights=[float(w) for w in weights],
        classlabels_int64s=list(labels),
        post_transform="NONE",
    )
    if base is not None:
        kw["base_values"] = list(base)
    node = helper.make_node(
        "TreeEnsembleClassifier", ["X"], ["label", "probabilities"], domain="ai.onnx.ml", **kw
    )
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, n_features])],
        [
            helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
            helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, len(labels)]),
        ],
    )
    return helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
    )


def stump(f: int, th: float) -> Tree:
    """A depth-1 tree "x[f] <= th" with zero leaf values (two classes): a threshold
    for building domains."""
    return Tree(
        np.array([f, LEAF, LEAF]),
        np.array([th, 0, 0], np.float32),
        np.array([1, LEAF, LEAF]),
        np.array([2, LEAF, LEAF]),
        np.zeros((3, 2)),
    )


def run_state(original, X, cfg, progress=None):
    """The driver's run state for ``original`` on rows ``X`` (region, oracle, samples),
    with ``cfg.time_limit`` from now as its budget: for tests that drive one step."""
    from pace_cert.driver.state import RunState
    from pace_cert.plumbing.budget import Budget

    return RunState.create(
        original, X, cfg, Budget.seconds(cfg.time_limit), progress or (lambda _m: None)
    )


def region_grid(p, original, forest=None) -> np.ndarray:
    """Every allowed cell of run state ``p``'s 3-feature domain (float32
    representatives) inside ``original``'s confidence region, and inside ``forest``'s
    plausibility region when given."""
    import itertools

    from pace_cert.region.masks import region_mask

    dom = p.domain
    grid = np.array(
        list(itertools.product(*[dom.reps[i][dom.allowed(i)] for i in range(3)])), np.float32
    )
    return grid[region_mask(original, p.region.margin, forest, grid, dom)]


def assert_faithful_on_every_cell(p, original, path, info, models) -> None:
    """Every model gives onnxruntime's label of the ONNX file at ``path`` on every cell
    of the 3-feature domain inside the region (brute force, both through onnxruntime);
    ``p``: the run state whose domain and region are checked, ``info``: the original's
    ONNX details the models are written with."""
    from pace_cert.model import runtime
    from pace_cert.model.onnx_writer import ensemble_to_onnx

    grid = region_grid(p, original)
    want = runtime.labels(runtime.session(path.read_bytes()), grid)
    for model in models:
        comp = runtime.session(ensemble_to_onnx(model, info).SerializeToString())
        assert np.array_equal(runtime.labels(comp, grid), want)
