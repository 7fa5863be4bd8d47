"""Before/after ratios of the speed-ups, measured side by side in one run.

    python -m benchmarks.studies.ablation [--out benchmarks/results/studies] [--time-limit 120]

Each case (dataset, n, depth, mode, eta, delta; random forest, seed 0, prepared as in
the harness) is compressed once per variant, back to back in one process:

* ``default``: the product as shipped;
* ``no-neighbours``: without the one-cell-move samples added around CP-SAT points;
* ``mip-weights``: the L0 support keeps the MILP's weights instead of max-margin ones;
* ``l1-cold``: the L1 LP is rebuilt by HiGHS every round instead of warm-started.

Writes ``<out>/ablation.csv`` and ``ablation.md``: S, T, rounds, and T(variant) / T(default).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks import harness
from pace_cert.driver.runner import compress
from pace_cert.settings import CompressConfig

CASES = (  # cases that converge within minutes on 2 cores (see profile.md for the rest)
    ("compas", 25, 2, "pace", 0.1, 0.1),
    ("fico", 25, 2, "prune", 0.1, 0.1),
    ("fico", 50, 2, "pace", 0.1, 0.1),
    ("compas", 50, 3, "prune", 0.1, 0.0),
)
VARIANTS = {  # tuning fields (CompressConfig.of) changed from the shipped defaults
    "default": {},
    "no-neighbours": {"neighbours": 0},
    "mip-weights": {"robust_weights": False},
    "l1-cold": {"l1_warm_start": False},
}


def run(case, variant: str, time_limit: float) -> dict:
    ds, n, d, mode, eta, delta = case
    prep = harness.prepare(harness.Config(ds, "rf", n, d, mode, eta, delta, 0))
    cfg = CompressConfig.of(
        mode=mode, eta=eta, delta=delta, time_limit=time_limit, seed=0, **VARIANTS[variant]
    )
    rounds = []
    t0 = time.perf_counter()
    res = compress(prep.original, prep.X_train, cfg, progress=rounds.append)
    secs = time.perf_counter() - t0
    return {
        "case": f"rf-{ds}-n{n}-d{d}-{mode}-eta{eta:g}-delta{delta:g}",
        "variant": variant,
        "status": res.status + (" (time limit)" if secs >= time_limit * 0.98 else ""),
        "S": res.compressed.n_trees,
        "T": round(secs, 2),
        "rounds": sum(" round " in r for r in rounds),
        "samples": len(res.history),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=harness.STUDIES_OUT, help="results directory")
    p.add_argument("--time-limit", type=float, default=120.0)
    args = p.parse_args(argv)
    command = harness.command_line("benchmarks.studies.ablation", argv)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    rows = []
    for case in CASES:
        base = None
        for variant in VARIANTS:
            r = run(case, variant, args.time_limit)
            base = r if variant == "default" else base
            r["ratio"] = round(r["T"] / base["T"], 2) if base and base["T"] > 0 else ""
            rows.append(r)
            print(f"{r['case']} {variant}: S={r['S']} T={r['T']} ratio={r['ratio']}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "ablation.csv", "w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = [
        "# Speed-up ablation (before/after, side by side in one run)",
        "",
        f"- command: `{command}`",
        f"- started (UTC): {started}",
        "- machine: " + "; ".join(f"{k} {v}" for k, v in harness.machine_info()),
        "- ratio = T(variant) / T(default): above 1 means the speed-up helps",
        "",
        harness.md_table(
            ["case", "variant", "status", "S", "T (s)", "rounds", "samples", "ratio"],
            [
                [str(r[k]) for k in ("case", "variant", "status", "S", "T", "rounds", "samples")]
                + [str(r["ratio"])]
                for r in rows
            ],
        ),
        "",
    ]
    (args.out / "ablation.md").write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
