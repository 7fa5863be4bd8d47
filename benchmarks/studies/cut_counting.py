"""How far a "one of these trees must stay" certificate can reach: a counting bound.

Every faithful removal of trees with sum d_t <= c_o (``free_removal``: the original's
weights, rescaled; a score ensemble's midranges in the offsets) is a pruning that meets
every region point, so no cut of the pruning bound (``summary.pruning_bound``) leaves
out fewer than c_min trees, c_min the fewest trees whose largest changes d_t add up to
more than c_o. Proving "every faithful pruning keeps at least B trees" with such cuts
needs every set of n - B + 1 trees to contain a whole cut; a cut of c >= c_min trees
lies in C(n - c, n - B + 1 - c) of the C(n, n - B + 1) such sets, so at least

    C(n, n - B + 1) / C(n - c_min, n - B + 1 - c_min)

cuts are needed, whatever the points. This prints, per model of the realistic suite,
c_min, the free-pattern floor n - r* and the largest B that 10^4 and 10^6 cuts could
prove (B_max): where B_max is far below the floor, a checkable bound near the floor is
out of reach by arithmetic, not by search.

    python -m benchmarks.studies.cut_counting --eta 0.1 \\
        --out benchmarks/results/studies/cut_counting.md
"""

from __future__ import annotations

import argparse
import sys
from math import comb
from pathlib import Path

import numpy as np

from benchmarks.harness.report import git_revision
from benchmarks.realistic.models import MODELS, build
from pace_cert.driver.phases.eliminate import free_removal, largest_changes
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.region.margins import region_margin

ROOT = Path(__file__).resolve().parents[2]


def cuts_needed(n: int, c_min: int, bound: int) -> float:
    """The fewest cuts of at least ``c_min`` trees that can prove ``bound``."""
    m = n - bound + 1  # sets of this size must each contain a cut
    if c_min > m:
        return float("inf")
    return comb(n, m) / comb(n - c_min, m - c_min)


def largest_provable(n: int, c_min: int, cuts: float) -> int:
    """The largest bound at most ``cuts`` cuts of >= c_min trees can prove."""
    return max((b for b in range(1, n + 1) if cuts_needed(n, c_min, b) <= cuts), default=0)


def c_min_of(d: np.ndarray, c_o: float) -> int:
    """The fewest trees whose d_t add up to more than c_o."""
    s = np.cumsum(np.sort(d)[::-1])
    return int(np.searchsorted(s, c_o, side="right") + 1)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv  # the command line, quoted in results
    ap = argparse.ArgumentParser(prog="python -m benchmarks.studies.cut_counting")
    ap.add_argument("--eta", type=float, default=0.1)
    ap.add_argument("--work", type=Path, default=ROOT / ".bench-real")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    head = ("model", "trees n", "c_o", "c_min", "floor n - r*", "B_max (10^4 cuts)",
            "B_max (10^6 cuts)", "cuts to prove the floor")  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in MODELS:
        onnx_path, _train, _test = build(m, args.work / m.key)
        model, _info = read_ensemble(onnx_path)
        c_o = region_margin(model, args.eta)
        d = largest_changes(model)
        n, floor = model.n_trees, model.n_trees - len(free_removal(model, c_o))
        cm = c_min_of(d, c_o)
        need = cuts_needed(n, cm, floor)
        lines.append(
            f"| {m.key} | {n} | {c_o:.4g} | {cm} | {floor} | {largest_provable(n, cm, 1e4)} "
            f"| {largest_provable(n, cm, 1e6)} | {need:.3g} |"
        )
        print(lines[-1], flush=True)
    commit = git_revision(ROOT)
    cmd = "python -m benchmarks.studies.cut_counting " + " ".join(argv or [])
    text = "\n".join([
        "# How far a checkable pruning bound can reach (counting cuts)",
        "",
        f"- command: `{cmd.strip()}`",
        f"- commit: {commit}; eta = {args.eta}",
        "",
        "c_min: the fewest trees whose largest changes exceed c_o (no cut is smaller). "
        "B_max: the largest bound that many cuts can prove. The last column: cuts needed "
        "to prove the free-pattern floor itself.",
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
