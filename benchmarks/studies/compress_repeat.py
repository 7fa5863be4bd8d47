"""Mean wall time of ``compress`` on one table (a) configuration (RF or AdaBoost, n = 50,
depth 1, eta = delta = 0), repeated in one process: for runs of ~0.1 s, where a single
timing is mostly noise. Uses the pace_cert found under ROOT, like ``table_a_runs.py``:

    git worktree add /tmp/before <rev>
    PYTHONPATH=/tmp/before python benchmarks/compress_repeat.py /tmp/before rf cancer prune 0
    PYTHONPATH=. python benchmarks/compress_repeat.py . rf cancer prune 0

Prints the configuration, the mean and median of N timed runs (after two untimed
warm-up runs) and the size of the returned model.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path


def main(root: str, family: str, dataset: str, mode: str, seed: str, n: str = "20") -> None:
    base = Path(root).resolve()
    sys.path[:0] = [str(base / "benchmarks"), str(base)]
    import harness as h  # from ROOT, on purpose

    import pace_cert
    from pace_cert.driver.runner import compress
    from pace_cert.settings import CompressConfig

    if not Path(pace_cert.__file__).resolve().is_relative_to(base):
        raise SystemExit(f"pace_cert comes from {pace_cert.__file__}, not {base}")
    cfg = h.Config(dataset, family, 50, 1, mode, 0.0, 0.0, int(seed))
    prep = h.prepare(cfg)
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
    main(*sys.argv[1:7])
