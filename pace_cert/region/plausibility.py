"""Plausibility region: a seeded isolation forest reduced to the IR (SPEC §4, appendix C).

The score of a float32 point x is

    A(x) = sum over isolation trees t of b_t(x),    b_t(x) = d_t(x) + c(s_t(x))

where d_t(x) is the depth (edges from the root) of the leaf x reaches in tree t,
s_t(x) the number of training rows that reached that leaf while the tree was grown,
and c the average path length correction of appendix C (scikit-learn's
``_average_path_length``). A is in path-length units (number of edges, summed over
trees); a large A means a plausible (hard to isolate) point. The region is
``{x : A(x) >= delta_abs}``.

scikit-learn relation (checked by the tests):
``IsolationForest.score_samples(x) == -2 ** (-A(x) / (n_trees * c(max_samples_)))``.

Each isolation tree becomes an IR :class:`~pace_cert.model.ensemble.Tree` with original
feature indices, float32 thresholds (``float32_floor`` of sklearn's float64
thresholds, which leaves every float32 comparison ``x <= thr`` unchanged) and one
value column holding b at the leaves (0 at internal nodes). After fitting, the
forest alone (e.g. loaded from its JSON artifact) defines the region: no pickles
and no scikit-learn objects are needed to evaluate it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from pace_cert.model.ensemble import LEAF, FlatForest, Tree, float32_floor

FORMAT_TAG = "pace-cert-plausibility/1"

_TREE_KEYS = ("feature", "threshold", "left", "right", "value")
_TOP_KEYS = (
    "format",
    "n_features",
    "delta",
    "delta_abs",
    "max_samples_used",
    "params",
    "trees",
)


@dataclass(frozen=True)
class PlausibilityForest:
    """An isolation forest in IR form together with its region threshold.

    Invariants: every tree has a single value column whose leaf entries are finite
    and >= 0 (corrected path lengths b); feature indices are original indices in
    ``[0, n_features)``; ``0 <= delta <= 1``; ``delta_abs`` is finite and is the
    threshold on A(x) (path-length units): x is in the region iff A(x) >= delta_abs.
    ``max_samples_used`` is scikit-learn's ``max_samples_`` (rows per tree) and
    ``params`` records how the forest was fitted (n_estimators, max_samples, seed).
    """

    trees: tuple[Tree, ...]
    n_features: int
    delta: float
    delta_abs: float
    max_samples_used: int
    params: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def flat(self) -> FlatForest:
        """The trees stacked for evaluation (built once per forest)."""
        return FlatForest.of(self.trees)

    def __post_init__(self) -> None:
        if not self.trees:
            raise ValueError("a plausibility forest needs at least one tree")
        if self.n_features < 1:
            raise ValueError("n_features must be >= 1")
        if not (0.0 <= self.delta <= 1.0):
            raise ValueError(f"delta must be in [0, 1], got {self.delta!r}")
        if not math.isfinite(self.delta_abs):
            raise ValueError("delta_abs must be finite")
        if self.max_samples_used < 1:
            raise ValueError("max_samples_used must be >= 1")
        for i, t in enumerate(self.trees):
            if t.value.shape[1] != 1:
                raise ValueError(f"tree {i}: value must have exactly one column")
            leaf_b = t.value[t.leaves, 0]
            if not np.isfinite(t.value).all() or (leaf_b < 0).any():
                raise ValueError(f"tree {i}: leaf path lengths must be finite and >= 0")
            used = t.feature[t.feature != LEAF]
            if used.size and (used.min() < 0 or used.max() >= self.n_features):
                raise ValueError(f"tree {i}: feature index out of range")

    @property
    def n_trees(self) -> int:
        return len(self.trees)


def average_path_length(n_samples: int) -> float:
    """Correction c(s) of appendix C (path-length units), as in scikit-learn.

    c(s) = 0 for s <= 1, 1 for s = 2, 2 (ln(s - 1) + gamma) - 2 (s - 1) / s otherwise.
    Evaluated with the same float64 operations as sklearn's ``_average_path_length``.
    """
    s = float(n_samples)
    if s <= 1:
        return 0.0
    if s == 2:
        return 1.0
    return float(2.0 * (np.log(s - 1.0) + np.euler_gamma) - 2.0 * (s - 1.0) / s)


def convert_isolation_tree(estimator: Any, features: np.ndarray) -> Tree:
    """Convert one fitted sklearn isolation tree to an IR :class:`Tree`.

    ``features`` maps the tree's (possibly subsampled) feature indices to original
    indices (``IsolationForest.estimators_features_[i]``). Leaf values are
    b = depth + c(n_node_samples); thresholds are ``float32_floor`` of sklearn's.
    """
    t = estimator.tree_
    n = int(t.node_count)
    left = np.asarray(t.children_left, np.int64).copy()
    right = np.asarray(t.children_right, np.int64).copy()
    is_leaf = left == -1
    features = np.asarray(features, np.int64)
    feature = np.full(n, LEAF, np.int64)
    feature[~is_leaf] = features[np.asarray(t.feature, np.int64)[~is_leaf]]
    threshold = np.zeros(n, np.float32)
    for i in np.flatnonzero(~is_leaf):
        threshold[i] = float32_floor(float(t.threshold[i]))
    left[is_leaf] = LEAF
    right[is_leaf] = LEAF
    depth = np.zeros(n, np.int64)
    order = [0]
    for i in order:
        if not is_leaf[i]:
            for c in (int(left[i]), int(right[i])):
                depth[c] = depth[i] + 1
                order.append(c)
    counts = np.asarray(t.n_node_samples, np.int64)
    value = np.zeros((n, 1), np.float64)
    for i in np.flatnonzero(is_leaf):
        value[i, 0] = float(depth[i]) + average_path_length(int(counts[i]))
    return Tree(feature=feature, threshold=threshold, left=left, right=right, value=value)


def _scores_from_trees(
    trees: tuple[Tree, ...], X: np.ndarray, flat: FlatForest | None = None
) -> np.ndarray:
    """A(x) in float64, summing the trees' leaf values in tree order (``flat``: the
    trees stacked, if already built)."""
    flat = flat or FlatForest.of(trees)
    return flat.sums([t.value[:, :1] for t in trees], np.zeros(1), _as_float32_rows(X))[:, 0]


def _as_float32_rows(X: np.ndarray, n_features: int | None = None) -> np.ndarray:
    X = np.asarray(X, dtype=np.float32)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D [n_rows, n_features], got shape {X.shape}")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, the forest expects {n_features}")
    if np.isnan(X).any():
        raise ValueError("X contains NaN (outside every region)")
    return X


def threshold_for_delta(scores: np.ndarray, delta: float) -> float:
    """delta_abs = the lower delta-quantile of the training scores A.

    ``np.quantile(A, delta, method="lower")``: the sorted score at index
    floor(delta * (n - 1)). Hence the region {A >= delta_abs} keeps every training
    row for delta = 0 (delta_abs = min A), and at most floor(delta * (n - 1)) <=
    delta * n training rows (exactly that many without ties at the threshold) fall
    outside it. delta = 1 keeps only the rows with maximal A (never an empty region).
    """
    a = np.asarray(scores, np.float64)
    if a.ndim != 1 or a.size == 0 or not np.isfinite(a).all():
        raise ValueError("scores must be a non-empty finite 1-D array")
    return float(np.quantile(a, delta, method="lower"))


def from_sklearn(
    iso: Any, X_train: np.ndarray, delta: float, params: dict[str, Any] | None = None
) -> PlausibilityForest:
    """Build a :class:`PlausibilityForest` from a fitted ``sklearn`` IsolationForest.

    ``delta_abs`` is set from the scores of ``X_train`` (see
    :func:`threshold_for_delta`), computed from the converted IR trees.
    """
    _check_delta(delta)
    n_features = int(iso.n_features_in_)
    trees = tuple(
        convert_isolation_tree(est, feats)
        for est, feats in zip(iso.estimators_, iso.estimators_features_)
    )
    X = _as_float32_rows(X_train, n_features)
    delta_abs = threshold_for_delta(_scores_from_trees(trees, X), delta)
    return PlausibilityForest(
        trees=trees,
        n_features=n_features,
        delta=float(delta),
        delta_abs=delta_abs,
        max_samples_used=int(iso.max_samples_),
        params=dict(params or {}),
    )


def _check_delta(delta: float) -> None:
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating)):
        raise ValueError(f"delta must be a number in [0, 1], got {delta!r}")
    if not (0.0 <= float(delta) <= 1.0):
        raise ValueError(f"delta must be in [0, 1], got {delta!r}")


def fit_plausibility(
    X: np.ndarray,
    delta: float,
    n_estimators: int = 100,
    max_samples: int | float | str = "auto",
    seed: int = 0,
) -> PlausibilityForest:
    """Fit a seeded IsolationForest on float32 ``X`` and derive the region threshold.

    ``delta`` in [0, 1] is the share of training rows flagged as outliers (see
    :func:`threshold_for_delta` for the exact quantile convention). Raises
    ``ValueError`` for delta outside [0, 1], fewer than 2 rows, or non-finite X
    (after the float32 cast).
    """
    from sklearn.ensemble import IsolationForest

    _check_delta(delta)
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] < 1:
        raise ValueError(f"X must be 2-D [n_rows, n_features], got shape {X.shape}")
    if X.shape[0] < 2:
        raise ValueError(
            f"need at least 2 training rows for the plausibility forest, got {X.shape[0]}"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        X32 = X.astype(np.float32)
    if not np.isfinite(X32).all():
        raise ValueError("training data contains NaN or values non-finite in float32")
    if isinstance(n_estimators, bool) or int(n_estimators) != n_estimators or n_estimators < 1:
        raise ValueError(f"n_estimators must be a positive integer, got {n_estimators!r}")
    iso = IsolationForest(
        n_estimators=int(n_estimators),
        max_samples=max_samples,
        contamination="auto",
        random_state=seed,
    ).fit(X32)
    params = {"n_estimators": int(n_estimators), "max_samples": max_samples, "seed": seed}
    return from_sklearn(iso, X32, delta, params)


def with_delta(forest: PlausibilityForest, X: np.ndarray, delta: float) -> PlausibilityForest:
    """The same forest (same trees, same artifact apart from the threshold) with the
    threshold of ``delta`` on the training rows ``X`` (:func:`threshold_for_delta`): one
    forest fitted once serves every delta of a frontier. Regions of a larger delta lie
    inside those of a smaller one (a higher quantile of the same scores)."""
    _check_delta(delta)
    scores = _scores_from_trees(forest.trees, _as_float32_rows(X, forest.n_features), forest.flat)
    return replace(forest, delta=float(delta), delta_abs=threshold_for_delta(scores, delta))


def plausibility_scores(forest: PlausibilityForest, X: np.ndarray) -> np.ndarray:
    """A(x) (float64, path-length units) for each float32 row of ``X``.

    Computed from the IR trees only; trees are summed in their stored order, so the
    result is deterministic. NaN inputs raise ``ValueError``.
    """
    return _scores_from_trees(forest.trees, _as_float32_rows(X, forest.n_features), forest.flat)


def in_region(forest: PlausibilityForest, X: np.ndarray) -> np.ndarray:
    """Boolean mask: A(x) >= delta_abs for each float32 row of ``X``."""
    return plausibility_scores(forest, X) >= forest.delta_abs


# ---------------------------------------------------------------------------
# Artifact: JSON, every float stored as float.hex (bit-exact in any language
# with a hex-float parser); integers as JSON integers.


def to_json_dict(forest: PlausibilityForest) -> dict[str, Any]:
    """Serialise ``forest`` to a JSON-compatible dict (tag ``pace-cert-plausibility/1``).

    Thresholds are the float32 values widened to float64 and written with
    ``float.hex`` (exact); leaf values and ``delta_abs`` likewise.
    """
    trees = [
        {
            "feature": [int(v) for v in t.feature],
            "threshold": [float(v).hex() for v in t.threshold],
            "left": [int(v) for v in t.left],
            "right": [int(v) for v in t.right],
            "value": [float(v).hex() for v in t.value[:, 0]],
        }
        for t in forest.trees
    ]
    return {
        "format": FORMAT_TAG,
        "n_features": int(forest.n_features),
        "delta": float(forest.delta),
        "delta_abs": float(forest.delta_abs).hex(),
        "max_samples_used": int(forest.max_samples_used),
        "params": dict(forest.params),
        "trees": trees,
    }


def _int_list(v: Any, name: str, n: int | None) -> np.ndarray:
    if not isinstance(v, list) or any(type(x) is not int for x in v):
        raise ValueError(f"{name} must be a list of integers")
    if n is not None and len(v) != n:
        raise ValueError(f"{name} has length {len(v)}, expected {n}")
    return np.asarray(v, np.int64)


def _hex_float(v: Any, name: str) -> float:
    if not isinstance(v, str):
        raise ValueError(f"{name} must be a float.hex string")
    try:
        return float.fromhex(v)
    except (ValueError, OverflowError) as e:
        raise ValueError(f"{name}: malformed hex float {v!r}") from e


def _hex_list(v: Any, name: str, n: int) -> np.ndarray:
    if not isinstance(v, list):
        raise ValueError(f"{name} must be a list of float.hex strings")
    if len(v) != n:
        raise ValueError(f"{name} has length {len(v)}, expected {n}")
    return np.asarray([_hex_float(x, name) for x in v], np.float64)


def _tree_from_dict(d: Any, i: int) -> Tree:
    where = f"trees[{i}]"
    if not isinstance(d, dict):
        raise ValueError(f"{where} must be an object")
    missing = [k for k in _TREE_KEYS if k not in d]
    if missing:
        raise ValueError(f"{where} is missing keys {missing}")
    feature = _int_list(d["feature"], f"{where}.feature", None)
    n = len(feature)
    left = _int_list(d["left"], f"{where}.left", n)
    right = _int_list(d["right"], f"{where}.right", n)
    thr64 = _hex_list(d["threshold"], f"{where}.threshold", n)
    with np.errstate(over="ignore", invalid="ignore"):
        threshold = thr64.astype(np.float32)
    if not np.array_equal(threshold.astype(np.float64), thr64, equal_nan=True):
        raise ValueError(f"{where}.threshold holds values that are not float32")
    if not np.isfinite(threshold).all():
        raise ValueError(f"{where}.threshold holds non-finite values")
    value = _hex_list(d["value"], f"{where}.value", n).reshape(n, 1)
    try:
        return Tree(feature=feature, threshold=threshold, left=left, right=right, value=value)
    except ValueError as e:
        raise ValueError(f"{where} is malformed: {e}") from e


def from_json_dict(d: Any) -> PlausibilityForest:
    """Rebuild and validate a forest from :func:`to_json_dict` output.

    Raises ``ValueError`` naming the problem (wrong format tag, missing keys, arrays
    of the wrong length, malformed trees, out-of-range numbers).
    """
    if not isinstance(d, dict):
        raise ValueError("plausibility artifact must be a JSON object")
    if d.get("format") != FORMAT_TAG:
        raise ValueError(
            f"plausibility artifact has format {d.get('format')!r}, expected {FORMAT_TAG!r}"
        )
    missing = [k for k in _TOP_KEYS if k not in d]
    if missing:
        raise ValueError(f"plausibility artifact is missing keys {missing}")
    for k in ("n_features", "max_samples_used"):
        if type(d[k]) is not int:
            raise ValueError(f"{k} must be an integer")
    delta = d["delta"]
    if type(delta) not in (int, float):
        raise ValueError("delta must be a number")
    if not isinstance(d["params"], dict):
        raise ValueError("params must be an object")
    if not isinstance(d["trees"], list):
        raise ValueError("trees must be a list")
    trees = tuple(_tree_from_dict(t, i) for i, t in enumerate(d["trees"]))
    try:
        return PlausibilityForest(
            trees=trees,
            n_features=d["n_features"],
            delta=float(delta),
            delta_abs=_hex_float(d["delta_abs"], "delta_abs"),
            max_samples_used=d["max_samples_used"],
            params=dict(d["params"]),
        )
    except ValueError as e:
        raise ValueError(f"invalid plausibility artifact: {e}") from e


def save_artifact(forest: PlausibilityForest, path: str | os.PathLike[str]) -> None:
    """Write the forest as JSON atomically (unique temp file in the target dir + replace)."""
    path = Path(path)
    text = json.dumps(to_json_dict(forest), allow_nan=False, separators=(",", ":"))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def load_artifact(path: str | os.PathLike[str]) -> PlausibilityForest:
    """Read and validate a forest written by :func:`save_artifact`.

    Malformed content raises ``ValueError`` (the CLI maps it to exit code 3); an
    unreadable file raises ``OSError``.
    """
    raw = Path(path).read_bytes()
    try:
        d = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"plausibility artifact {path} is not valid JSON: {e}") from e
    return from_json_dict(d)
