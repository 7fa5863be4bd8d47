"""Table (a) configurations (RF and AdaBoost, n = 50, depth 1, eta = delta = 0, seed 0 or
the seeds given as the first argument, e.g. ``0,1,2,3,4``), prune and PACE, run with
the pace_cert of the tree this script is run from: one line per run with the size, the
certificate's size lower bound and the wall time of ``compress``.

Used for side-by-side timings of two revisions in one session, each run from the root
of its own tree (so that tree's ``benchmarks`` and ``pace_cert`` are imported):

    git worktree add /tmp/before <rev>
    (cd /tmp/before && python -m benchmarks.studies.table_a_runs) > before.txt
    python -m benchmarks.studies.table_a_runs > after.txt

(A revision older than the ``benchmarks`` package has ``benchmarks/table_a_runs.py``,
which took the tree's root as its first argument.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import benchmarks
import pace_cert
from benchmarks.harness import Config, run_config


def same_tree() -> Path:
    """The root of the tree both ``benchmarks`` and ``pace_cert`` come from (else exit:
    a timing of one revision's pace_cert under another's name)."""
    root = Path(benchmarks.__file__).resolve().parents[1]
    if not Path(pace_cert.__file__).resolve().is_relative_to(root):
        raise SystemExit(f"pace_cert comes from {pace_cert.__file__}, not {root}")
    return root


def main(seeds: str = "0", time_limit: str = "300") -> None:
    same_tree()
    print("key status S size_bound T(s)")
    for fam in ("rf", "ada"):
        for ds in ("cancer", "compas", "diabetes", "fico", "seeds", "spambase"):
            for mode in ("prune", "pace"):
                for seed in (int(s) for s in seeds.split(",")):
                    cfg = Config(ds, fam, 50, 1, mode, 0.0, 0.0, seed)
                    r = run_config(cfg, float(time_limit), 2)
                    T = "" if r.T is None else f"{r.T:.2f}"
                    print(cfg.key, r.status, r.S, r.size_bound, T, flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
