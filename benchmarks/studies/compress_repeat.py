"""Mean wall time of ``compress`` on one table (a) configuration (RF or AdaBoost, n = 50,
depth 1, eta = delta = 0), repeated in one process: for runs of ~0.1 s, where a single
timing is mostly noise. Uses the pace_cert of the tree it is run from, like
``table_a_runs.py``:

    git worktree add /tmp/before <rev>
    (cd /tmp/before && python -m benchmarks.studies.compress_repeat rf cancer prune 0 20)
    python -m benchmarks.studies.compress_repeat rf cancer prune 0 20

Arguments: FAMILY DATASET MODE SEED [N, default 20]. Prints the configuration, the mean
and median of N timed runs (after two untimed warm-up runs) and the size of the
returned model.
"""

from __future__ import annotations

import statistics
import sys
import time

from benchmarks.harness import Config, prepare
from benchmarks.studies.table_a_runs import same_tree
from pace_cert.driver.runner import compress
from pace_cert.settings import CompressConfig


def main(family: str, dataset: str, mode: str, seed: str, n: str = "20") -> None:
    same_tree()
    cfg = Config(dataset, family, 50, 1, mode, 0.0, 0.0, int(seed))
    prep = prepare(cfg)
    comp = CompressConfig.of(mode=mode, seed=int(seed), threads=2, time_limit=300.0)
    times = []
    for i in range(int(n) + 2):
        t0 = time.perf_counter()
        res = compress(prep.original, prep.X_train, comp, None)
        if i >= 2:
            times.append(time.perf_counter() - t0)
    print(
        f"{cfg.key} runs={len(times)} mean={statistics.mean(times) * 1000:.1f}ms "
        f"median={statistics.median(times) * 1000:.1f}ms S={res.compressed.n_trees}",
        flush=True,
    )


if __name__ == "__main__":
    main(*sys.argv[1:6])
