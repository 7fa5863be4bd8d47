"""Racing attempts on depth-1 forests: CP-SAT's LP first or second, side by side.

Table (a) configurations (RF and AdaBoost, n = 50, depth 1, eta = delta = 0), prune and
PACE, each run with ``OracleSettings.race_linearization_stumps`` = (0, 1) (the LP in a
pair's second attempt, as for deeper trees) and (1, 0) (shipped: the LP first), back to
back on the same prepared forest. One line per run pair; totals at the end.

    python -m benchmarks.studies.stump_lp --seeds 0,1,2,3,4 [--repeat 1] [--only REGEX]
"""

from __future__ import annotations

import argparse
import re
import time

from benchmarks.harness import Config, prepare
from pace_cert.driver.runner import compress
from pace_cert.oracle.settings import OracleSettings
from pace_cert.settings import CompressConfig

VARIANTS = ((0, 1), (1, 0))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", default=None, help="regex on configuration keys")
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    total = dict.fromkeys(VARIANTS, 0.0)
    print("key", *(f"T{v}(s)/S" for v in VARIANTS))
    for fam in ("rf", "ada"):
        for ds in ("cancer", "compas", "diabetes", "fico", "seeds", "spambase"):
            for mode in ("prune", "pace"):
                for seed in seeds:
                    cfg = Config(ds, fam, 50, 1, mode, 0.0, 0.0, seed)
                    if args.only and not re.search(args.only, cfg.key):
                        continue
                    prep = prepare(cfg)
                    base = CompressConfig.of(
                        mode=mode, eta=0.0, delta=0.0, seed=seed, threads=2, time_limit=300
                    )
                    for _ in range(args.repeat):
                        cells = []
                        for v in VARIANTS:
                            cc = base.tuned(oracle=OracleSettings(race_linearization_stumps=v))
                            t0 = time.perf_counter()
                            res = compress(prep.original, prep.X_train, cc, None)
                            t = time.perf_counter() - t0
                            total[v] += t
                            mark = "" if res.certified else " (not certified)"
                            cells.append(f"{t:.2f}/{res.compressed.n_trees}{mark}")
                        print(cfg.key, *cells, flush=True)
    print("total", *(f"{total[v]:.1f}" for v in VARIANTS))


if __name__ == "__main__":
    main()
