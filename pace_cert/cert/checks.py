"""verify's checks of the certificate against the two models, without a solver: the
learners each compressed tree names (splits shared, leaf values scaled), the boundary
witnesses behind the size bound (onnxruntime on the original), and onnxruntime replays
of points inside the region (a disagreement is a counterexample)."""

from __future__ import annotations

import math

import numpy as np

from pace_cert.cert.certificate import Certificate
from pace_cert.cert.claims import float32_exact, is_constant
from pace_cert.model.ensemble import LEAF, structure_key
from pace_cert.model.runtime import labels
from pace_cert.region.leaf_witness import check_leaf_witnesses
from pace_cert.region.masks import region_mask
from pace_cert.region.witness import Witness, check_witnesses
from pace_cert.region.witness import size_bound as witness_size_bound


def checks_learners(cert: Certificate) -> bool:
    """Certificates from schema 1.3 on name each learner's original trees; an older
    version number does not switch the check off when a learner carries the fields
    anyway (the version is a claim like any other: a field that is present is checked)."""
    fields = {"merged", "original_trees"}
    if any(fields & lr.model_fields_set for lr in cert.learners):
        return True
    if any(lr.original_trees or lr.merged != 1 for lr in cert.learners):
        return True
    try:
        major, minor = (int(v) for v in cert.schema_version.split(".")[:2])
    except ValueError:
        return True
    return (major, minor) >= (1, 3)


def learner_problems(cert: Certificate, orig, comp) -> list[str]:
    """Check what ``learners`` states against the two models: one entry per compressed
    tree, in order; each original tree named at most once and sharing every split with
    the compressed tree that names it (merged trees sum learners of one shape); an
    ``original`` tree merges only original trees, a ``new`` one at least one learner
    that is not an original tree. Weights are not checkable from the models alone."""
    if not checks_learners(cert):
        return _unnamed_original_problems(cert, orig, comp)
    lrs = cert.learners
    if not lrs and is_constant(comp):
        return []  # a constant model: the writer's one zero leaf stands for no trees
    if [lr.index for lr in lrs] != list(range(comp.n_trees)):
        return [f"{len(lrs)} entries for {comp.n_trees} compressed trees (or out of order)"]
    problems: list[str] = []
    seen: set[int] = set()
    for lr in lrs:
        named = list(lr.original_trees)
        if any(not 0 <= t < orig.n_trees for t in named) or len(set(named)) != len(named):
            problems.append(f"tree {lr.index} names original trees out of range or twice")
            continue
        if seen & set(named):
            problems.append(f"tree {lr.index} names original trees another tree names")
        seen |= set(named)
        if lr.merged < max(1, len(named)):
            problems.append(f"tree {lr.index} merges {lr.merged} learners but names {len(named)}")
        if lr.origin == "original" and (not named or lr.merged != len(named)):
            problems.append(f"tree {lr.index} is marked original but not all its learners are")
        if lr.origin == "new" and lr.merged == len(named):
            problems.append(f"tree {lr.index} is marked new but names only original trees")
        key = structure_key(comp.trees[lr.index])
        for t in named:
            if structure_key(orig.trees[t]) != key:
                problems.append(f"tree {lr.index} does not share every split of original tree {t}")
                break
        else:
            i = lr.index
            if (
                lr.merged == 1
                and len(named) == 1
                and not scaled_copy(
                    comp.trees[i], float(comp.weights[i]), orig.trees[named[0]], lr.weight
                )
            ):
                problems.append(
                    f"tree {lr.index}'s leaf values are not weight {lr.weight!r} times "
                    f"original tree {named[0]}'s"
                )
    return problems


def _unnamed_original_problems(cert: Certificate, orig, comp) -> list[str]:
    """Learners of an older certificate (no ``original_trees``): each one marked
    original must still be a scaled copy of some original tree, whatever the version."""
    lrs = cert.learners
    if not lrs and is_constant(comp):
        return []
    if [lr.index for lr in lrs] != list(range(comp.n_trees)):
        return [f"{len(lrs)} entries for {comp.n_trees} compressed trees (or out of order)"]
    for lr in lrs:
        if lr.origin == "original" and source_tree(comp, lr.index, orig) is None:
            return [f"tree {lr.index} is marked original but is no scaled copy of an original tree"]
    return []


def source_tree(comp, i: int, orig, keys: list[bytes] | None = None) -> int | None:
    """An original tree of which compressed tree ``i`` is a scaled copy (same splits,
    leaf values one factor >= 0 times the original tree's, every class, up to one
    float32 rounding each); None when there is none. ``keys``: the original trees'
    structure keys, when the caller has them."""
    key = structure_key(comp.trees[i])
    keys = [structure_key(tr) for tr in orig.trees] if keys is None else keys
    for t, tr in enumerate(orig.trees):
        if keys[t] == key and scaled_by_some_factor(comp.trees[i], float(comp.weights[i]), tr):
            return t
    return None


def pruning_sources(orig, comp) -> list[int] | None:
    """Whether the compressed model is a *pruning* of the original, proved from the two
    models alone (never from the certificate's learners): for each compressed tree an
    original tree it is a scaled copy of (:func:`source_tree`); ``[]`` for a constant
    model (no tree); None when some compressed tree is no such copy. Class offsets
    (base values) are free in a pruning and not compared."""
    if is_constant(comp):
        return []
    keys = [structure_key(tr) for tr in orig.trees]
    out = []
    for i in range(comp.n_trees):
        t = source_tree(comp, i, orig, keys)
        if t is None:
            return None
        out.append(t)
    return out


def scaled_by_some_factor(tree, tree_weight: float, original) -> bool:
    """Whether ``tree_weight`` times ``tree``'s leaf values is a * ``original``'s for
    one a >= 0 (every leaf, every class), up to one float32 rounding of each value
    (relative 2**-23, the factor read off the largest original leaf value); the two
    share every split, so their leaves are at the same positions."""
    if tree.value.shape != original.value.shape:
        return False
    leaves = tree.left == LEAF
    got = tree_weight * tree.value[leaves].astype(np.float64)
    ref = original.value[leaves].astype(np.float64)
    if not (np.isfinite(got).all() and np.isfinite(ref).all()):
        return False
    j = np.unravel_index(int(np.argmax(np.abs(ref))), ref.shape)
    if ref[j] == 0:
        return not got.any()
    a = got[j] / ref[j]
    if not (math.isfinite(a) and a >= 0):
        return False
    want = a * ref
    return bool(np.all(np.abs(got - want) <= 2.0**-22 * np.abs(want) + 1e-300))


def scaled_copy(tree, tree_weight: float, original, weight: float) -> bool:
    """Whether ``tree`` (weighted by ``tree_weight`` in its model: 1 in pace-cert's
    output, the estimator weight when compress fell back to the original) scores each
    leaf ``weight`` times ``original``'s value, up to one float32 rounding (how ``fold``
    writes an unmerged original learner); the two share every split, so their leaves
    are at the same positions."""
    if not (math.isfinite(weight) and weight > 0):
        return False
    leaves = tree.left == LEAF
    want = weight * original.value[leaves]
    err = np.abs(tree_weight * tree.value[leaves] - want)
    return bool(np.all(err <= 2.0**-23 * np.abs(want) + 1e-300))


def witness_problems(cert: Certificate, orig, c_o, forest, domain, so) -> list[str]:
    """Re-check the boundary witnesses behind ``summary.witness_bound``: onnxruntime on
    the original, the region rebuilt here, and the bound they give."""
    s = cert.summary
    if s.witness_bound is None and not s.boundary_witnesses:
        return []
    n = orig.n_features
    if any(len(w.x) != n or not 0 <= w.feature < n for w in s.boundary_witnesses):
        return [f"a witness does not have {n} features or names another feature"]
    if not all(float32_exact([*w.x, w.value_next]) for w in s.boundary_witnesses):
        return ["a witness value (x or value_next) is not a finite float32"]

    def moved(w) -> np.ndarray:
        x = np.asarray(w.x, np.float32).copy()
        x[w.feature] = np.float32(w.value_next)
        return x

    ws = [
        Witness(
            w.feature,
            np.asarray(w.x, np.float32),
            moved(w),
            str(w.label),
            str(w.label_next),
        )
        for w in s.boundary_witnesses
    ]

    def onnx_labels(Z: np.ndarray) -> np.ndarray:
        return np.array([v.decode() if isinstance(v, bytes) else str(v) for v in labels(so, Z)])

    problems = check_witnesses(ws, onnx_labels, lambda Z: region_mask(orig, c_o, forest, Z, domain))
    want = witness_size_bound(len(ws), orig.max_depth)
    if not problems and s.witness_bound != want:
        problems.append(f"witness_bound {s.witness_bound}, the {len(ws)} witnesses give {want}")
    return problems


def leaf_witness_problems(cert: Certificate, orig, c_o, forest, domain, so) -> list[str]:
    """Re-check ``summary.single_tree.leaf_witnesses``: onnxruntime on the original, the
    region rebuilt here (:func:`~pace_cert.region.leaf_witness.check_leaf_witnesses`),
    the bound they give, and a certified one-tree model with at least that many leaves."""
    t = cert.summary.single_tree
    lw = t.leaf_witnesses if t is not None else None
    if lw is None:
        return []
    n = orig.n_features
    rows = [*lw.points, *lw.separators]
    if any(len(r) != n for r in rows) or any(len(p) != 3 for p in lw.pairs):
        return [f"a leaf witness point does not have {n} features, or a pair is not [i, j, s]"]
    if len(lw.labels) != len(lw.points) or not all(float32_exact(r) for r in rows):
        return ["leaf witnesses: one label per point, every value a finite float32"]
    problems = check_leaf_witnesses(
        np.asarray(lw.points, np.float32).reshape(-1, n),
        [str(v) for v in lw.labels],
        np.asarray(lw.separators, np.float32).reshape(-1, n),
        np.asarray(lw.pairs, np.int64).reshape(-1, 3),
        lambda Z: np.array([str(plain_label(v)) for v in labels(so, Z)]),
        lambda Z: region_mask(orig, c_o, forest, Z, domain),
    )
    if not problems and lw.bound != len(lw.points):
        problems.append(
            f"leaf_witnesses.bound {lw.bound}, its {len(lw.points)} points give that many"
        )
    c = cert.compressed
    if not problems and cert.summary.certified and c.trees == 1 and c.leaves < lw.bound:
        problems.append(
            f"a certified tree of {c.leaves} leaves and a bound of {lw.bound}: one is wrong"
        )
    return problems


def disagreements(orig, c_o, forest, domain, X, so, sc) -> dict | None:
    if len(X) == 0:
        return None
    inside = region_mask(orig, c_o, forest, X, domain)
    if not inside.any():
        return None
    Xi = X[inside]
    lo, lc = labels(so, Xi), labels(sc, Xi)
    diff = np.flatnonzero(lo != lc)
    if len(diff) == 0:
        return None
    i = int(diff[0])
    return counterexample(Xi[i], lo[i], lc[i])


def plain_label(v):
    """An onnxruntime label as the certificate writes labels (int or str)."""
    if isinstance(v, bytes):
        return v.decode()
    return v.item() if hasattr(v, "item") else v


def counterexample(x: np.ndarray, lo, lc) -> dict:
    return {
        "point": [float(v) for v in x],
        "original_label": plain_label(lo),
        "compressed_label": plain_label(lc),
    }
