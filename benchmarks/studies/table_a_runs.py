"""Table (a) configurations (RF and AdaBoost, n = 50, depth 1, eta = delta = 0, seed 0 or
the seeds given as a second argument, e.g. ``0,1,2,3,4``),
prune and PACE, run with the pace_cert found under ROOT: one line per run with the
size, the certificate's size lower bound and the wall time of ``compress``.

Used for side-by-side timings of two revisions in one session:

    git worktree add /tmp/before <rev>
    PYTHONPATH=/tmp/before python benchmarks/table_a_runs.py /tmp/before > before.txt
    PYTHONPATH=. python benchmarks/table_a_runs.py . > after.txt
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(root: str, seeds: str = "0", time_limit: float = 300.0) -> None:
    base = Path(root).resolve()
    sys.path[:0] = [str(base / "benchmarks"), str(base)]
    import harness as h  # from ROOT, on purpose

    import pace_cert

    if not Path(pace_cert.__file__).resolve().is_relative_to(base):
        raise SystemExit(f"pace_cert comes from {pace_cert.__file__}, not {base}")
    print("key status S size_bound T(s)")
    for fam in ("rf", "ada"):
        for ds in ("cancer", "compas", "diabetes", "fico", "seeds", "spambase"):
            for mode in ("prune", "pace"):
                for seed in (int(s) for s in seeds.split(",")):
                    cfg = h.Config(ds, fam, 50, 1, mode, 0.0, 0.0, seed)
                    r = h.run_config(cfg, time_limit, 2)
                    T = "" if r.T is None else f"{r.T:.2f}"
                    print(cfg.key, r.status, r.S, r.size_bound, T, flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
