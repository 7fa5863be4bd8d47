"""Boundary witnesses (``witness.py``): every witness is genuine under onnxruntime and the
exact region, the bound they give never exceeds the true minimum (brute force over
every stump set on small grids), and tampered witnesses are caught."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from pace_cert import zoo
from pace_cert.driver.phases.witness_bound import update_witness_bound
from pace_cert.driver.runner import compress
from pace_cert.driver.state import RunState
from pace_cert.model.onnx_reader import ensemble_from_model
from pace_cert.model.runtime import labels, session
from pace_cert.region import witness
from pace_cert.region.masks import region_mask
from pace_cert.settings import CompressConfig

from .helpers import run_state, small_problem


def _problem(
    seed: int, family: str, depth: int, eta: float, n_classes: int = 2, rows: int | None = None
):
    """(RunState, onnxruntime session of the original, every in-region cell representative);
    ``rows``: give RunState only the first that many training rows (the model sees all)."""
    X, y = small_problem(seed, n_features=3, n_classes=n_classes, n_rows=150)
    model = zoo.make_model(family, 12, depth, seed).fit(X, y)
    onx = zoo.export_onnx(model, 3)
    original = ensemble_from_model(onx)[0]
    p = run_state(original, X[:rows], CompressConfig.of(mode="prune", eta=eta, seed=0))
    reps = [p.domain.reps[i][p.domain.allowed(i)] for i in range(3)]
    grid = np.array(list(itertools.product(*reps)), np.float32)
    inside = region_mask(original, p.region.margin, None, grid, p.domain)
    return p, session(onx.SerializeToString()), grid[inside]


def _in_region(p: RunState):
    return lambda Z: region_mask(p.original, p.region.margin, None, Z, p.domain)


def _all_gaps(p: RunState, cells: np.ndarray, ort_session) -> set[tuple[int, float, float]]:
    """Brute force: every (feature, a, b) with a < b consecutive allowed values such that
    some pair of region cells differing only there gets two onnxruntime labels."""
    lab = labels(ort_session, cells)
    index = {tuple(c): k for k, c in enumerate(cells)}
    gaps = set()
    for i in range(cells.shape[1]):
        vals = np.sort(np.unique(p.domain.reps[i][p.domain.allowed(i)]))
        nxt = {float(a): float(b) for a, b in itertools.pairwise(vals)}
        for k, c in enumerate(cells):
            if float(c[i]) not in nxt:
                continue
            d = c.copy()
            d[i] = nxt[float(c[i])]
            j = index.get(tuple(d))
            if j is not None and lab[j] != lab[k]:
                gaps.add((i, float(c[i]), float(d[i])))
    return gaps


CASES = [
    (seed, family, depth, eta)
    for seed in (0, 1, 2)
    for family, depth in (("rf", 1), ("ada", 1), ("rf", 2))
    for eta in (0.0, 0.1)
]


@pytest.mark.parametrize("seed,family,depth,eta", CASES)
def test_witnesses_are_genuine_gaps(seed, family, depth, eta):
    """Found from the training rows or from every cell: each witness is a brute-force
    gap (both points in the region, onnxruntime labels differ), ``check_witnesses``
    accepts them, and from every cell they find every gap there is."""
    p, so, cells = _problem(seed, family, depth, eta)
    truth = _all_gaps(p, cells, so)

    def ort(Z):
        return labels(so, Z)

    for X in (p.X, cells):
        found = witness.find_witnesses(p.original, p.domain, X, _in_region(p))
        ws = list(found.values())
        got = {(w.feature, float(w.x[w.feature]), float(w.x_next[w.feature])) for w in ws}
        assert got <= truth
        named = [  # onnxruntime's labels, not class indices
            dataclasses.replace(
                w, label=p.original.classes[w.label], label_next=p.original.classes[w.label_next]
            )
            for w in ws
        ]
        assert witness.check_witnesses(named, ort, _in_region(p)) == []
    assert got == truth  # the last X: every cell


def _min_stumps(cells: np.ndarray, y: np.ndarray, limit: int) -> int | None:
    """Brute force: fewest stumps (any thresholds between grid values, any leaf values,
    one bias) whose sum has the sign of y (+-1) on every cell, by LP per stump set;
    None when more than ``limit`` are needed."""
    cand = []
    for i in range(cells.shape[1]):
        vals = np.unique(cells[:, i])
        cand += [(i, (a + b) / 2) for a, b in itertools.pairwise(vals)]
    if len(np.unique(y)) == 1:
        return 0
    for k in range(1, limit + 1):
        for subset in itertools.combinations(cand, k):
            F = np.array([[1.0] + [float(x[i] > t) for i, t in subset] for x in cells])
            # find v with y * (F v) >= 1: min 0 s.t. -(y F) v <= -1
            res = linprog(
                np.zeros(k + 1),
                A_ub=-(y[:, None] * F),
                b_ub=-np.ones(len(y)),
                bounds=[(None, None)] * (k + 1),
                method="highs",
            )
            if res.status == 0:
                return k
    return None


@pytest.mark.parametrize(
    "seed,family,eta", [(s, f, e) for s in (0, 1, 2, 3) for f in ("rf", "ada") for e in (0.0, 0.1)]
)
def test_witness_bound_never_exceeds_the_fewest_faithful_stumps(seed, family, eta):
    """Depth-1 originals, two classes: the witness bound from every region cell is at
    most the fewest stumps that reproduce the original's labels on those cells (a subset
    of the region, so that minimum is itself at most the true one)."""
    p, _so, cells = _problem(seed, family, 1, eta)
    found = witness.find_witnesses(p.original, p.domain, cells, _in_region(p))
    bound = witness.size_bound(len(found), 1)
    y = np.where(p.original.predict_index(cells) == 1, 1.0, -1.0)
    fewest = _min_stumps(cells, y, limit=sum(len(np.unique(cells[:, i])) - 1 for i in range(3)))
    if eta == 0 and len(np.unique(y)) == 2:  # two labels on a whole grid: neighbours differ
        assert bound >= 1
    assert fewest is not None and fewest >= bound  # none of fewer than `bound` stumps fits


def test_check_witnesses_rejects_tampered_evidence():
    """A swapped label, a second changed feature, a point outside the region and two
    witnesses on one gap are each reported."""
    p, so, cells = _problem(0, "rf", 2, 0.1)
    found = list(witness.find_witnesses(p.original, p.domain, cells, _in_region(p)).values())
    assert len(found) >= 2

    def ort(Z):
        return labels(so, Z)

    named = [
        dataclasses.replace(
            w, label=p.original.classes[w.label], label_next=p.original.classes[w.label_next]
        )
        for w in found
    ]
    inside = _in_region(p)
    assert witness.check_witnesses(named, ort, inside) == []
    w0 = named[0]
    swapped = dataclasses.replace(w0, label=w0.label_next, label_next=w0.label)
    assert witness.check_witnesses([swapped], ort, inside)
    other = (w0.feature + 1) % 3
    x2 = w0.x.copy()
    x2[other] += 1
    assert (
        "differ in feature"
        in witness.check_witnesses([dataclasses.replace(w0, x=x2)], ort, inside)[0]
    )
    outside = np.array([c for c in itertools.product(*(range(-3, 7),) * 3)], np.float32)
    outside = outside[~inside(outside)]
    assert len(outside)
    far = dataclasses.replace(w0, x=outside[0], x_next=outside[0] + np.eye(3, dtype=np.float32)[0])
    assert witness.check_witnesses([dataclasses.replace(far, feature=0)], ort, inside)
    assert any("share" in m for m in witness.check_witnesses([w0, w0], ort, inside))


def test_size_bound_arithmetic():
    assert witness.size_bound(0, 2) == 0
    assert witness.size_bound(3, 2) == 1 and witness.size_bound(4, 2) == 2
    assert witness.size_bound(16, 1) == 16
    assert witness.max_internal_nodes(3) == 7
    with pytest.raises(ValueError):
        witness.size_bound(1, 0)


def test_witness_limit_keeps_a_sound_subset():
    """``limit`` stops the search once that many witnesses are held; they are a subset
    of the full search's, so the bound they give can only be lower."""
    p, _, cells = _problem(0, "ada", 1, 0.0)
    full = witness.find_witnesses(p.original, p.domain, cells, _in_region(p))
    assert len(full) > 3
    few = witness.find_witnesses(p.original, p.domain, cells, _in_region(p), limit=3)
    assert len(few) == 3 and set(few) <= set(full)
    again = witness.find_witnesses(p.original, p.domain, cells, _in_region(p), few, limit=3)
    assert again is few and len(few) == 3


def test_a_bound_above_a_certified_size_is_an_internal_error(monkeypatch):
    """Two proofs that contradict each other (a certified model smaller than a proved
    lower bound) must not both reach a certificate: compress raises instead."""
    p, _, _ = _problem(0, "ada", 1, 0.0)
    X, _ = small_problem(0, n_features=3, n_classes=2, n_rows=150)
    monkeypatch.setattr(witness, "size_bound", lambda n_gaps, depth: 10**6)
    with pytest.raises(RuntimeError, match="internal error"):
        compress(p.original, X, CompressConfig.of(mode="prune", seed=0))


def test_first_witness_search_covers_every_gap_of_a_small_domain():
    """On an enumerable domain the first witness search also starts from
    ``oracle.label_change_points()`` (one point per gap where the original's label
    changes between clearly-inside grid points), so the run's witnesses are every gap
    there is (brute force with onnxruntime), not only those next to a training row; at
    least one case here has a gap no training row reaches."""
    missed_by_rows = 0
    for (seed, family, depth, eta), rows in itertools.product(CASES, (None, 6)):
        p, so, cells = _problem(seed, family, depth, eta, rows=rows)
        assert p.screen.can_enumerate()
        truth = _all_gaps(p, cells, so)
        pts = p.screen.label_change_points()
        assert len(pts) <= len(truth)  # one point per gap it opens
        from_rows = witness.find_witnesses(p.original, p.domain, p.X, _in_region(p))
        missed_by_rows += len(from_rows) < len(truth)
        update_witness_bound(p)
        got = {
            (w.feature, float(w.x[w.feature]), float(w.x_next[w.feature]))
            for w in p.witnesses.values()
        }
        assert got == truth, (seed, family, depth, eta, rows)
        assert p.witness_bound == witness.size_bound(len(truth), depth) or not truth
    assert missed_by_rows >= 1
