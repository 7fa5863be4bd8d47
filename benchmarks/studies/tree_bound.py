"""Lower bounds on PACE sizes in our region where the domain can be listed.

PACE may use any depth-d trees, not only the original ones, so the prune-only bound of
``l0_bound.py`` does not apply. On a small domain it can be settled by exhaustion: every
faithful model of k trees predicts one label per cell of the k trees' joint partition,
so that joint partition must hold a single original label on every cell inside the
region (label-pure), whatever the leaf values, weights and offsets. A tree threshold
between two cell boundaries of the domain sorts those cells like the boundary next to
it would, and moving it there keeps a pure partition pure (both sides already held
the split cell's label), so thresholds at the midpoints between the distinct values of
the listed cells are all there is to try.

k = 1: every depth-<=2 tree over those splits. k = 2: a pair uses at most 6 splits; a
6-subset whose finest partition (2^6 groups) is already impure can host no pure pair,
so only the other subsets' pairs are listed, and each pure pair is then tested for leaf
values that realise the labels additively (a small LP). The cells are the screen's
grid of cells clearly inside the region (``Screen.grid()``, a subset of the region), so
"none" is a lower bound for the whole region.

    python -m benchmarks.studies.tree_bound --out benchmarks/results/studies/tree_bound.md

A benchmark statement from an exhaustive numpy search and a floating-point LP, not a
certificate.
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import highspy
import numpy as np

from benchmarks import harness
from benchmarks.harness import paper_values as pv
from pace_cert.budget import Budget
from pace_cert.driver.state import RunState
from pace_cert.master.highs import INF, load_highs, new_highs
from pace_cert.settings import CompressConfig

CASES = [(ds, n) for ds in ("compas", "fico") for n in (25, 50, 100)]
Tree2 = tuple[int, int | None, int | None]  # (root split, left split, right split); None: leaf


def splits_of(X: np.ndarray) -> list[tuple[int, float]]:
    """(feature, threshold) midway between consecutive distinct values of each column."""
    out = []
    for f in range(X.shape[1]):
        v = np.unique(X[:, f]).astype(np.float64)
        out += [(f, float(t)) for t in (v[:-1] + v[1:]) / 2]
    return out


def _leaves(S: np.ndarray, tree: Tree2) -> np.ndarray:
    """Leaf (0-3) of every cell in ``tree``; S[s] = cells going left at split s."""
    r, a, b = tree
    left = np.zeros(S.shape[1], np.int64) if a is None else (~S[a]).astype(np.int64)
    right = np.zeros(S.shape[1], np.int64) if b is None else (~S[b]).astype(np.int64)
    return np.where(S[r], left, 2 + right)


def _pure(part: np.ndarray, y: np.ndarray, n_parts: int, k: int) -> bool:
    seen = np.zeros(n_parts * k, bool)
    seen[part * k + y] = True
    return not (seen.reshape(n_parts, k).sum(axis=1) > 1).any()


def _trees(subset: tuple[int, ...]) -> list[Tree2]:
    return [(r, a, b) for r in subset for a in (None, *subset) for b in (None, *subset)]


def _additive(joint_labels: dict[tuple[int, int], int], k: int) -> bool:
    """Leaf scores v1[a, c], v2[b, c] with v1[a, y] + v2[b, y] >= 1 + v1[a, c] + v2[b, c]
    for every occupied joint cell (a, b) of label y and every other class c (columns:
    v1 at a * k + c, then v2 at 4 * k + b * k + c)."""
    n = 2 * 4 * k
    rows = []
    for (a, b), lab in joint_labels.items():
        for c in range(k):
            if c == lab:
                continue
            row = np.zeros(n)
            row[a * k + c] += 1
            row[4 * k + b * k + c] += 1
            row[a * k + lab] -= 1
            row[4 * k + b * k + lab] -= 1
            rows.append(row)
    h = new_highs()
    M = np.array(rows)
    load_highs(h, M, np.zeros(n), np.full(n, -INF), np.full(n, INF),
               np.full(len(M), -INF), np.full(len(M), -1.0))  # fmt: skip
    h.run()
    return h.getModelStatus() == highspy.HighsModelStatus.kOptimal


def one_tree(X: np.ndarray, y: np.ndarray) -> Tree2 | None:
    """A depth-<=2 tree whose partition is label-pure on the cells, or None."""
    k = int(y.max()) + 1
    S = np.array([X[:, f] <= t for f, t in splits_of(X)]).reshape(-1, len(X))
    for tree in _trees(tuple(range(len(S)))):
        if _pure(_leaves(S, tree), y, 4, k):
            return tree
    return None


def two_trees(X: np.ndarray, y: np.ndarray) -> tuple[tuple[Tree2, Tree2] | None, int, int]:
    """(a pair of depth-<=2 trees whose joint partition is label-pure and whose labels
    leaf values can realise additively, or None; 6-subsets with a pure finest
    partition; pure pairs listed)."""
    k = int(y.max()) + 1
    S = np.array([X[:, f] <= t for f, t in splits_of(X)]).reshape(-1, len(X))
    m = len(S)
    w = (1 << np.arange(min(6, m)))[:, None]
    hosts = []
    for sub in itertools.combinations(range(m), min(6, m)):
        if _pure((S[list(sub)] * w).sum(axis=0), y, 2 ** len(sub), k):
            hosts.append(sub)
    tried: set[tuple[Tree2, Tree2]] = set()
    n_pure = 0
    for sub in hosts:
        trees = _trees(sub)
        leaves = {t: _leaves(S, t) for t in trees}
        for i, t1 in enumerate(trees):
            for t2 in trees[i:]:
                if (t1, t2) in tried:
                    continue
                tried.add((t1, t2))
                joint = leaves[t1] * 4 + leaves[t2]
                if not _pure(joint, y, 16, k):
                    continue
                n_pure += 1
                labels = {(int(c) // 4, int(c) % 4): int(y[np.argmax(joint == c)])
                          for c in np.unique(joint)}  # fmt: skip
                if _additive(labels, k):
                    return (t1, t2), len(hosts), n_pure
    return None, len(hosts), n_pure


@dataclass
class TreeBound:
    dataset: str
    n: int
    cells: int
    splits: int
    one: bool  # some single tree is label-pure
    two: bool | None  # some pair is pure and additive (None: not searched, one is True)
    hosts: int
    pure_pairs: int
    seconds: float

    @property
    def bound(self) -> int:
        return 1 if self.one else (2 if self.two else 3)


def run_case(dataset: str, n: int) -> TreeBound | None:
    prep = harness.prepare(harness.Config(dataset, "rf", n, 2, "pace", 0.1, 0.1, 0))
    state = RunState.create(
        prep.original,
        np.asarray(prep.X_train, np.float32),
        CompressConfig.of(mode="pace", eta=0.1, delta=0.1),
        Budget.unlimited(),
        lambda _m: None,
    )
    grid = state.screen.grid()
    if grid is None:
        return None
    X, y = grid
    t0 = time.perf_counter()
    one = one_tree(X, y) is not None
    two, hosts, n_pure = (None, 0, 0) if one else two_trees(X, y)
    return TreeBound(
        dataset, n, len(X), len(splits_of(X)), one, None if one else two is not None,
        hosts, n_pure, time.perf_counter() - t0,
    )  # fmt: skip


def render(rows: list[TreeBound], command: str) -> str:
    lines = [
        "# Lower bounds on PACE sizes in our region (`tree_bound.py`)",
        "",
        f"- command: `{command}`",
        f"- date (UTC): {harness.now()}",
        "- random forests, depth 2, eta = delta = 0.1, seed 0, harness preprocessing; the "
        "cells are the screen's grid of cells clearly inside the region",
        "",
        "`fewest trees`: the smallest k for which some k depth-2 trees (any thresholds, "
        "leaf values, weights, offsets) can give the original's label on every listed "
        "cell; `>= 3` when no single tree and no pair can. No faithful depth-2 model in "
        "this region is smaller.",
        "",
    ]
    header = ["dataset", "n", "cells", "splits", "one tree pure?",
              "6-subsets hosting a pure pair", "pure pairs (to the first additive one)",
              "fewest trees", "search (s)", "paper PACE S",
              "paper PACE reachable here?"]  # fmt: skip
    body = []
    for b in rows:
        pa = pv.pruning_table("rf", b.dataset, b.n, "pace")
        verdict = harness.paper_verdict(b.bound, pa)
        body.append([
            b.dataset, str(b.n), str(b.cells), str(b.splits), "yes" if b.one else "no",
            "--" if b.one else str(b.hosts), "--" if b.one else str(b.pure_pairs),
            ">= 3" if b.bound == 3 else str(b.bound), f"{b.seconds:.1f}",
            harness.paper_cell(pa, "S") or "--", verdict,
        ])  # fmt: skip
    lines.append(harness.md_table(header, body))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="regex on 'dataset-nN'")
    ap.add_argument("--out", type=Path, default=None, help="Markdown file to write")
    args = ap.parse_args(argv)
    rows = []
    for ds, n in harness.select_cases(CASES, args.only):
        b = run_case(ds, n)
        if b is None:
            print(f"{ds} n{n}: domain too large to list", flush=True)
            continue
        print(f"{ds} n{n}: {b.cells} cells, fewest trees {b.bound}", flush=True)
        rows.append(b)
    text = render(rows, harness.command_line("benchmarks.studies.tree_bound", argv))
    harness.emit_report(text, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
