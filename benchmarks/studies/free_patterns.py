"""How many trees a removal may take if every vote pattern can occur: the suite's models.

For each model of the realistic suite (``benchmarks/realistic/models.py``) and a
confidence margin eta, this computes without a solver the *free-pattern removal count*
r*: the largest number of trees whose removal cannot change a label inside the region
whatever values the trees take, when each tree may independently take any of its leaves.

Removing a set R of trees, with the original's own weights (a voting ensemble's kept
trees rescaled to keep the vote share, a score ensemble's removed trees leaving the
midrange of their leaf values in the class offsets, as ``eliminate`` does), changes the
score difference S_a - S_b of two classes by at most sum over t in R of d_t, where d_t is
the largest change tree t can make to a class-pair difference (over its leaves and every
ordered pair). A point of the region has S_y0 - S_k > c_o, so a removal with
sum d_t <= c_o keeps every label. Conversely, when the trees' values can be combined
freely, a point with S_y0 - S_k just above c_o and every removed tree at its extreme
leaf exists, and a removal with sum d_t > c_o changes its label. r* counts the trees of
smallest d_t that fit under c_o (``pace_cert.driver.phases.eliminate.free_removal``,
which keeps 1 % and the runtime guard as slack; the ``free-removal`` step certifies
exactly this removal); n - r* is the *free-pattern floor* of eliminate.

The floor is not a proof about the region (the trees' leaves are not independent: they
share features and thresholds, and plausibility cuts combinations out), so a certified
size below it shows how much the dependence helps; a size at it shows that the search
found exactly what free patterns permit. ``--results`` adds the suite's certified sizes
beside it (a ``benchmarks.realistic`` CSV).

    python -m benchmarks.studies.free_patterns --eta 0.1 \\
        --results benchmarks/results/profiles/real-all.csv \\
        --out benchmarks/results/studies/free_patterns.md
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

from benchmarks.harness.report import git_revision
from benchmarks.realistic.models import MODELS, build
from pace_cert.driver.phases.eliminate import free_removal, largest_changes
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.region.margins import region_margin

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv  # the command line, quoted in results
    ap = argparse.ArgumentParser(prog="python -m benchmarks.studies.free_patterns")
    ap.add_argument("--eta", type=float, default=0.1)
    ap.add_argument("--work", type=Path, default=ROOT / ".bench-real")
    ap.add_argument("--results", type=Path, default=None, help="a benchmarks.realistic CSV")
    ap.add_argument("--region", default="eta-delta", help="the results' region to show")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    sizes: dict[str, tuple[str, str]] = {}
    if args.results is not None and args.results.exists():
        with open(args.results) as f:
            for r in csv.DictReader(f):
                if r["region"] == args.region:
                    sizes[r["key"]] = (r["trees_after"], r["phase"] or "-")
    head = ("model", "kind", "trees", "c_o", "median d_t", "r*", "floor n - r*",
            "certified", "phase")  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in MODELS:
        onnx_path, _train, _test = build(m, args.work / m.key)
        model, _info = read_ensemble(onnx_path)
        c_o = region_margin(model, args.eta)
        d = largest_changes(model)
        r = len(free_removal(model, c_o))
        after, phase = sizes.get(m.key, ("-", "-"))
        lines.append(
            f"| {m.key} | {model.kind} | {model.n_trees} | {c_o:.4g} | {np.median(d):.4g} "
            f"| {r} | {model.n_trees - r} | {after} | {phase} |"
        )
    commit = git_revision(ROOT)
    cmd = "python -m benchmarks.studies.free_patterns " + " ".join(argv or [])
    text = "\n".join([
        "# Free-pattern removal counts of the realistic suite",
        "",
        f"- command: `{cmd.strip()}`",
        f"- commit: {commit}; eta = {args.eta}; certified sizes: region {args.region} of "
        f"{args.results or '(none)'}",
        "",
        *lines,
        "",
    ])  # fmt: skip
    if args.out is not None:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
