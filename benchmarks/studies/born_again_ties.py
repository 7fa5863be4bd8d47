"""Study: the single-tree fit on the born-again paper's own problem.

The born-again tree (Vidal & Schiffer, ICML 2020) must reproduce a forest's hard
majority vote everywhere, exact vote ties included (broken to the lowest class index).
pace-cert's region leaves ties out, so `--mode tree` solves an easier problem. This
study runs pace-cert's fit (``pace_cert.learners.region_tree.fit_cell_tree``, the same
limits as the product's improving pass) on the paper's published forests (a BA-Trees
checkout, ``--ba-trees DIR``) with every cell of the forest's grid labelled as the paper
labels it (ties to the lowest index), so its leaf counts compare with the paper's exact
figures like for like; and, beside it, with ties as don't-cares (pace-cert's global
region). No solver: the labels are every grid cell's, so the tree is right on all of
them by construction (checked here cell by cell).

    python -m benchmarks.studies.born_again_ties --ba-trees /path/to/BA-Trees \\
        --out benchmarks/results/studies/born_again_ties.md
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.born_again import BA_PUBLISHED, DATASETS, ba_forest
from benchmarks.harness.report import git_revision

ROOT = Path(__file__).resolve().parents[2]


def leaves(model: Path, data: Path, ties: bool, exact_boxes: int) -> tuple[int, float, bool]:
    """(leaves, seconds, exact at the root) of the fit on every cell of the forest's grid;
    ``ties``: exact vote ties labelled with the lowest class index (else don't-cares)."""
    from pace_cert.driver.state import region_domain
    from pace_cert.learners.region_cells import ForestGrid, domain_cells
    from pace_cert.learners.region_tree import fit_cell_tree
    from pace_cert.model.onnx_reader import read_ensemble
    from pace_cert.settings import CompressConfig

    ens, _ = read_ensemble(model)
    X = np.loadtxt(data, delimiter=",", skiprows=1)[:, :-1].astype(np.float32)
    dom = region_domain(ens, X, CompressConfig())
    grid = ForestGrid.of(ens)
    coords, labels = [], []
    for P in domain_cells(dom):
        S = ens.scores(P)
        lab = np.argmax(S, axis=1)
        if not ties:
            top = np.sort(S, axis=1)
            lab = np.where(top[:, -1] > top[:, -2], lab, -1)
        keep = lab >= 0
        coords.append(grid.coords(P[keep]))
        labels.append(lab[keep])
    C, y = np.vstack(coords), np.concatenate(labels)
    t0 = time.perf_counter()
    tree = fit_cell_tree(C, y, ens.n_classes, exact_boxes=exact_boxes, choose_cut=grid.choose_cut)
    seconds = time.perf_counter() - t0
    if not np.array_equal(tree.predict(C), y):
        raise AssertionError(f"{model}: the tree is not right on every cell")
    return tree.n_leaves, seconds, tree.exact


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.studies.born_again_ties",
                                 description=__doc__)  # fmt: skip
    ap.add_argument("--ba-trees", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--exact-boxes", type=int, default=2_000_000)
    args = ap.parse_args(argv)
    command = "python -m benchmarks.studies.born_again_ties " + " ".join(argv or sys.argv[1:])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in DATASETS:
            res = {True: [], False: []}
            for fold in range(args.folds):
                model, data = ba_forest(name, fold, args.ba_trees, Path(tmp) / f"{name}-{fold}")
                for ties in (True, False):
                    res[ties].append(leaves(model, data, ties, args.exact_boxes))
            exact, _, _ = BA_PUBLISHED[name]
            with_ties = statistics.mean(r[0] for r in res[True])
            rows.append(
                f"| {name} | {with_ties:.1f} | {exact} | {with_ties / exact:.3f} | "
                f"{sum(r[2] for r in res[True])}/{args.folds} | "
                f"{max(r[1] for r in res[True]):.1f} | "
                f"{statistics.mean(r[0] for r in res[False]):.1f} | "
                f"{max(r[1] for r in res[False]):.1f} |"
            )
            print(rows[-1], flush=True)
    text = "\n".join(
        [
            "# Study: the single-tree fit on the born-again paper's forests",
            "",
            f"- command: `{command}`",
            f"- commit: {git_revision(ROOT)}",
            "- forests: the paper's published files (10 trees, depth 3, one per fold), hard "
            "voting; every cell of each forest's grid labelled",
            "- with ties: exact vote ties labelled with the lowest class index, the born-again "
            "problem; without: ties are don't-cares (pace-cert's global region, eta = 0)",
            "- exact at root: the born-again program solved the whole grid (the count is the "
            "minimum); else exact below a greedy top",
            "",
            "| dataset | leaves with ties (mean) | born-again exact (paper) | ratio | "
            "exact at root | max s | leaves without ties (mean) | max s |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
