"""What deploying a model costs: its size in trees, leaves, internal nodes and depth,
the comparisons onnxruntime makes per prediction on given rows, and its onnxruntime
latency per row.

:func:`structure` is a pure function of the IR and the rows (exact counts, re-checked by
verify from the ONNX files). :func:`measure_latency` is a measurement on this machine:
both models run side by side in this process with one fixed setting
(:data:`THREADS` thread, sequential execution, the label output only), their calls
interleaved, within a stated wall-time cap; its numbers are stated, never re-checked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from pace_cert.model.ensemble import LEAF, Ensemble, Tree

#: rows per chunk when counting comparisons ([rows, trees] leaf indices held at once)
CHUNK_ROWS = 4096

#: onnxruntime threads (intra-op and inter-op) of every latency session
THREADS = 1
#: single-row calls per model at most (spread evenly over the rows); when fewer than
#: MIN_CALLS fit in the time, nothing is measured (a median of a few calls says little)
MAX_CALLS = 300
MIN_CALLS = 10
#: whole-batch runs per model: at most this many (a median), at least one; a batch
#: is cut to its first rows when fewer than MIN_REPEATS of the whole data would fit
MAX_REPEATS = 5
MIN_REPEATS = 3
#: rows of the warm-up batch that estimates the time per row
WARMUP_ROWS = 1024
#: share of the measurement's time spent on single-row calls (the rest: whole batches)
BATCH1_SHARE = 0.4
#: default wall-time cap of one measurement (both models), seconds
LATENCY_SECONDS = 2.0
#: below this many seconds no latency is measured (the run's time is spent)
MIN_LATENCY_SECONDS = 0.05


@dataclass(frozen=True)
class Structure:
    """One model's size as deployment pays for it.

    ``trees``, ``leaves``, ``internal_nodes`` (split nodes) and ``max_depth`` (splits on
    the longest root-to-leaf path) count the IR's trees; ``mean_comparisons`` is the
    number of split comparisons one prediction makes, summed over the trees (the
    internal nodes on each tree's path to the row's leaf, as onnxruntime walks it),
    averaged over ``rows`` rows (0.0 without rows)."""

    trees: int
    leaves: int
    internal_nodes: int
    max_depth: int
    mean_comparisons: float
    rows: int


def node_depths(tree: Tree) -> np.ndarray:
    """Splits on the path from the root to each node (the root: 0), int64 [n_nodes]:
    at a leaf, the comparisons a prediction that ends there makes in this tree."""
    depth = np.zeros(len(tree.feature), np.int64)
    order = [0]
    for i in order:
        if tree.left[i] != LEAF:
            for c in (int(tree.left[i]), int(tree.right[i])):
                depth[c] = depth[i] + 1
                order.append(c)
    return depth


def comparisons(ens: Ensemble, X: np.ndarray) -> np.ndarray:
    """Split comparisons per row of float32 ``X`` (summed over the trees), int64 [n]."""
    X = np.asarray(X, np.float32)
    out = np.zeros(len(X), np.int64)
    if not ens.trees:
        return out
    depths = [node_depths(t) for t in ens.trees]
    for lo in range(0, len(X), CHUNK_ROWS):
        leaves = ens.apply(X[lo : lo + CHUNK_ROWS])  # [rows, trees], node index per tree
        for t, d in enumerate(depths):
            out[lo : lo + CHUNK_ROWS] += d[leaves[:, t]]
    return out


def structure(ens: Ensemble, X: np.ndarray) -> Structure:
    """The size of ``ens`` and its mean comparisons per prediction over the rows of
    ``X`` (float32, no NaN: the IR has no missing-value semantics)."""
    per_row = comparisons(ens, X)
    return Structure(
        trees=ens.n_trees,
        leaves=ens.n_leaves,
        internal_nodes=int(sum(int((t.left != LEAF).sum()) for t in ens.trees)),
        max_depth=ens.max_depth,
        mean_comparisons=float(per_row.mean()) if len(per_row) else 0.0,
        rows=len(per_row),
    )


@dataclass(frozen=True)
class Latency:
    """onnxruntime latency of two models measured side by side in one process, in µs.

    ``batch1_us``: (before, after) median wall time of one call on a single row, µs;
    ``per_row_us``: (before, after) median wall time of one call on ``batch_rows`` rows
    at once, divided by ``batch_rows``, µs per row. ``calls`` single-row calls and
    ``repeats`` whole-batch calls per model, both models alternating; ``seconds``: the
    measurement's wall time (sessions included); ``same_model``: the two byte strings
    were equal, so one model was measured and its numbers stand for both."""

    batch1_us: tuple[float, float]
    per_row_us: tuple[float, float]
    calls: int
    batch_rows: int
    repeats: int
    seconds: float
    onnxruntime: str
    threads: int = THREADS
    same_model: bool = False


def latency_session(model: bytes):
    """The measurement's onnxruntime session: CPU, :data:`THREADS` intra-op and inter-op
    thread, sequential execution, default graph optimisations."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = THREADS
    so.inter_op_num_threads = THREADS
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def measure_latency(
    before: bytes, after: bytes, X: np.ndarray, seconds: float = LATENCY_SECONDS
) -> Latency | None:
    """Measure both ONNX models (``before``, ``after``: their bytes) on the rows of
    float32 ``X`` within about ``seconds`` of wall time (sessions and warm-up
    included; a single batch that would not fit is cut to its first rows, stated in
    ``batch_rows``). Only the first output (the label) is fetched. None when
    ``seconds`` is below :data:`MIN_LATENCY_SECONDS`, there are no rows, or after the
    sessions and a warm-up fewer than :data:`MIN_CALLS` single-row calls would fit."""
    import onnxruntime as ort

    X = np.ascontiguousarray(X, np.float32)
    if len(X) == 0 or not seconds >= MIN_LATENCY_SECONDS:
        return None
    t0 = time.perf_counter()
    same = before == after
    runs = [_Runner(latency_session(before))]
    runs.append(runs[0] if same else _Runner(latency_session(after)))
    models = runs[:1] if same else runs
    n = len(X)

    def left() -> float:
        return seconds - (time.perf_counter() - t0)

    # single rows: warm up, then alternate the two models over rows spread evenly
    single = max(max(r.warm(X[:1], 3) for r in models), 1e-7)
    calls = int(min(MAX_CALLS, BATCH1_SHARE * left() / (len(models) * single)))
    if calls < MIN_CALLS:
        return None
    idx = np.arange(calls) * n // calls
    for k, i in enumerate(idx):
        for r in models if k % 2 == 0 else models[::-1]:
            r.single.append(r.time(X[i : i + 1]))
        if left() < (1 - BATCH1_SHARE) * seconds and k:
            break
    calls = len(models[0].single)
    # whole batches: the time per row from a warm-up batch bounds the rows and repeats
    warm = X[: min(n, WARMUP_ROWS)]
    per_row = max(max(r.warm(warm, 1) for r in models) / len(warm), 1e-9)
    spend = max(left(), 0.0) / len(models)
    rows = int(min(n, max(1, spend / (MIN_REPEATS * per_row))))
    repeats = int(min(MAX_REPEATS, max(1, spend / (rows * per_row))))
    Xb = X[:rows]
    for k in range(repeats):
        for r in models if k % 2 == 0 else models[::-1]:
            r.batch.append(r.time(Xb))
        if left() <= 0:
            break
    b1 = tuple(float(np.median(r.single)) * 1e6 for r in runs)
    pr = tuple(float(np.median(r.batch)) * 1e6 / rows for r in runs)
    return Latency(
        batch1_us=b1,  # type: ignore[arg-type]
        per_row_us=pr,  # type: ignore[arg-type]
        calls=calls,
        batch_rows=rows,
        repeats=len(models[0].batch),
        seconds=time.perf_counter() - t0,
        onnxruntime=ort.__version__,
        same_model=same,
    )


class _Runner:
    """One session's calls (the label output only) and their wall times, seconds."""

    def __init__(self, sess) -> None:
        self.sess = sess
        self.feed = sess.get_inputs()[0].name
        self.fetch = [sess.get_outputs()[0].name]
        self.single: list[float] = []
        self.batch: list[float] = []

    def time(self, X: np.ndarray) -> float:
        t = time.perf_counter()
        self.sess.run(self.fetch, {self.feed: X})
        return time.perf_counter() - t

    def warm(self, X: np.ndarray, times: int) -> float:
        """Run ``times`` times (not recorded); the last call's wall time."""
        return [self.time(X) for _ in range(times)][-1]
