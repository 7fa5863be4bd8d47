"""Re-fitted leaves (``pace_cert/refit.py``): pure partition sets against their
definition, the assembled trees against the indicator weights, partners against brute
force, and PACE on the Table-2 compas configuration, where a pair of partitions with
re-fitted leaves is certified below prune-only's L0 optimum and verifies on every cell."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pace_cert.learners import refit
from pace_cert.model.ensemble import LEAF, Tree

from .test_pace import prune_and_pace


def _pure(ids_rows: list[np.ndarray], y: np.ndarray) -> bool:
    """Definition: every cell of the joint partition holds one label."""
    cells: dict[tuple, set] = {}
    for i in range(len(y)):
        cells.setdefault(tuple(int(r[i]) for r in ids_rows), set()).add(int(y[i]))
    return all(len(v) == 1 for v in cells.values())


@pytest.mark.parametrize("seed", range(4))
def test_pure_sets_match_the_definition(seed):
    rng = np.random.default_rng(seed)
    T, n, k = 7, 12, 3
    ids = rng.integers(0, 4, size=(T, n))
    ids[2] = ids[0]  # some duplicates and fine partitions so that pure sets exist
    ids[3] = np.arange(n) % 4
    y = rng.integers(0, k, size=n)
    y[ids[4] == 0] = 1
    for size in (1, 2):
        got = refit.pure_sets(ids, y, k, size)
        want = [c for c in itertools.combinations(range(T), size) if _pure([ids[t] for t in c], y)]
        assert got == want


def _stump_pair(k: int) -> list[Tree]:
    """Two depth-1 partitions on features 0 and 1 of a 2-feature domain."""
    out = []
    for f in (0, 1):
        out.append(
            Tree(
                np.array([f, LEAF, LEAF]),
                np.array([0.5, 0, 0], np.float32),
                np.array([1, LEAF, LEAF]),
                np.array([2, LEAF, LEAF]),
                np.zeros((3, k)),
            )
        )
    return out


def test_assembled_trees_keep_every_class_difference_and_are_distributions():
    """Each leaf gets a class-independent increment: score differences between classes
    are the indicator weights' own, and every leaf of a tree sums to the same total."""
    k = 3
    parts = _stump_pair(k)
    rng = np.random.default_rng(0)
    w = rng.uniform(0, 2, size=2 * 2 * k)
    w[:k] = 0.0  # one leaf with no weight at all
    built, kept = refit.assemble(parts, w, k)
    assert kept == [0, 1]
    at = 0
    for t in built:
        u = w[at : at + 2 * k].reshape(2, k)
        at += 2 * k
        v = t.value[t.leaves]
        assert np.allclose(v.sum(axis=1), v.sum(axis=1)[0])
        assert np.all(v >= 0)
        assert np.allclose(v - v[:, :1], u - u[:, :1])
    built, kept = refit.assemble(parts, np.r_[np.zeros(2 * k), w[2 * k :]], k)
    assert kept == [1] and len(built) == 1


def _brute_partners(a, y, cells, splits, k):
    """Every depth-<=2 tree over ``splits`` (children: a leaf or a split), pure with a."""
    opts = [None] + [(f, int(j)) for f, js in splits.items() for j in js]
    found = set()
    for f, js in splits.items():
        for j in js:
            go = cells[:, f] <= j
            for lo, ro in itertools.product(opts, opts):
                leaf = np.where(go, 0, 2)
                for side, o in ((go, lo), (~go, ro)):
                    if o is not None:
                        leaf = np.where(side & (cells[:, o[0]] > o[1]), leaf + 1, leaf)
                if _pure([a, leaf], y):
                    found.add((f, int(j), lo, ro))
    return found


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("k", [2, 3])
def test_partners_are_pure_and_found_whenever_one_exists(seed, k):
    rng = np.random.default_rng(seed)
    n = 40
    cells = rng.integers(0, 4, size=(n, 3))
    hi0, hi1 = cells[:, 0] >= 2, cells[:, 1] >= 1 + seed % 2
    y = (hi0 ^ hi1).astype(int) if k == 2 else hi0.astype(int) + hi1.astype(int)
    a = (cells[:, 2] >= 2).astype(int)  # tree A splits on a feature y ignores
    thresholds = tuple(np.array([0.5, 1.5, 2.5], np.float32) for _ in range(3))
    splits = {f: np.array([0, 1, 2]) for f in range(3)}
    got = refit.partners(a, y, cells, splits, thresholds, k, depth=2, limit=10**6, per_side=99)
    X = cells.astype(np.float32)  # thresholds j + 0.5: x <= threshold j <=> cell <= j
    for b in got:
        assert b.depth <= 2
        assert _pure([a, b.apply(X)], y)
    want = _brute_partners(a, y, cells, splits, k)
    roots = {(int(b.feature[0]), int(np.searchsorted(thresholds[0], b.threshold[0]))) for b in got}
    assert roots == {(f, j) for f, j, _, _ in want}  # every root that has a partner
    assert want  # the labels are a depth-2 function: partners exist


def test_child_options_do_not_depend_on_the_chunking():
    """The histogram over roots is built a chunk of roots at a time; one root per chunk
    gives the same options as all at once."""
    rng = np.random.default_rng(5)
    n, k, n_a = 60, 3, 4
    buckets = rng.integers(0, 4, size=(n, 3))
    a = rng.integers(0, n_a, size=n)
    y = (buckets[:, 0] >= 2).astype(int) + (buckets[:, 1] >= 1)  # a depth-2 function
    roots = [(c, i) for c in range(3) for i in range(3)]
    n_cuts = np.array([3, 3, 3])
    whole = refit._child_options(a, y, buckets, roots, n_cuts, k, n_a)
    one = refit._child_options(a, y, buckets, roots, n_cuts, k, n_a, chunk=1)
    assert all(np.array_equal(u, v) for u, v in zip(whole, one, strict=True))
    assert whole[1].shape == (2 * len(roots), 3, 3)
    assert whole[1].any() and not whole[1].all()


def test_a_stopped_partner_search_offers_only_the_roots_it_scanned():
    """``stop()`` ends the scan between chunks of roots (a refit step's budget: on raw
    features one scan took 13 s and the step ran past its share, leaving the pruning
    bound no time); what was scanned is exact, the rest is not offered."""
    rng = np.random.default_rng(5)
    n, k, n_a = 60, 3, 4
    buckets = rng.integers(0, 4, size=(n, 3))
    a = rng.integers(0, n_a, size=n)
    y = (buckets[:, 0] >= 2).astype(int) + (buckets[:, 1] >= 1)
    roots = [(c, i) for c in range(3) for i in range(3)]
    n_cuts = np.array([3, 3, 3])
    whole = refit._child_options(a, y, buckets, roots, n_cuts, k, n_a, chunk=1)
    calls = []
    stop = lambda: calls.append(1) or len(calls) > 2  # noqa: E731
    cut = refit._child_options(a, y, buckets, roots, n_cuts, k, n_a, chunk=1, stop=stop)
    assert len(cut[0]) == 2 * 3  # three roots scanned: the first chunk, then two more
    assert np.array_equal(cut[0], whole[0][:6]) and np.array_equal(cut[1], whole[1][:6])
    # partners stopped at once still scans its first chunk (here: every root)
    thresholds = tuple(np.array([0.5, 1.5, 2.5], np.float32) for _ in range(3))
    splits = {f: np.array([0, 1, 2]) for f in range(3)}
    full = refit.partners(a, y, buckets, splits, thresholds, k, 2)
    stopped = refit.partners(a, y, buckets, splits, thresholds, k, 2, stop=lambda: True)
    assert full and len(stopped) == len(full)
    assert all(np.array_equal(u.threshold, v.threshold) for u, v in zip(stopped, full))


def _refit_beats_prune(tmp_path, dataset: str, n: int) -> None:
    """RF n x depth 2 (harness seed 0, 80 % split), eta = delta = 0.1: PACE's kept
    model comes from the refit phase, is smaller than prune-only's, has only new trees,
    and both verify on every cell with onnxruntime."""
    certs = prune_and_pace(tmp_path, dataset, n, eta=0.1, delta=0.1)
    assert certs["pace"].summary.trees_after < certs["prune"].summary.trees_after
    assert certs["pace"].summary.phase == "refit"
    assert all(lr.origin == "new" for lr in certs["pace"].learners)


@pytest.mark.slow  # a Table 2 forest: seconds of real search
def test_refit_pair_beats_prune_on_compas_table2(tmp_path):
    """compas RF25: prune proves 3 original trees L0-optimal; PACE certifies 2 trees
    with re-fitted leaves (a pool partition and a partner)."""
    _refit_beats_prune(tmp_path, "compas", 25)


@pytest.mark.slow
def test_refit_triple_beats_prune_on_fico_table2(tmp_path):
    """fico RF25 (about 2 minutes): prune certifies 4; PACE 3 trees with re-fitted
    leaves (a pair of the best model's partitions and a partner)."""
    _refit_beats_prune(tmp_path, "fico", 25)


@pytest.mark.slow  # a Table 2 search, seconds
def test_refit_search_reports_progress():
    """The refit phase's partner search says how far it is (bases searched, sets
    tried) every ``master.progress_seconds``; compas RF25 needs several bases."""
    from pace_cert.driver.runner import compress
    from pace_cert.model.onnx_reader import ensemble_from_model
    from pace_cert.settings import CompressConfig

    from .test_pace import table2_forest

    onnx_model, X_train, _, _ = table2_forest("compas", 25)
    original, _ = ensemble_from_model(onnx_model)
    lines: list[str] = []
    cfg = CompressConfig.of(  # progress_seconds 0: a report after every base
        mode="pace", eta=0.1, delta=0.1, time_limit=300, seed=0, progress_seconds=0.0
    )
    res = compress(original, X_train, cfg, lines.append)
    assert res.certified and res.compressed.n_trees == 2
    reports = [m for m in lines if m.startswith("[refit] 2 partitions: partners searched")]
    assert len(reports) >= 2
    assert [int(m.split(" for ")[1].split()[0]) for m in reports] == list(
        range(1, len(reports) + 1)
    )
