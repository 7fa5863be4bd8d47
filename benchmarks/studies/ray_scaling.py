"""verify of a multi-class model on the local and the Ray backend, and how far workers carry it.

One run, one process: a random forest on scikit-learn's digits (10 classes: 90 ordered
label pairs; pixel counts 0..16, certified over the integers) is compressed once
(``--mode prune``, cached in ``--work``), then ``run_verify`` re-proves the certificate
on ``local`` and on ``ray`` (a local Ray instance with ``--threads`` + 1 CPUs, as
verify starts it, started and warmed up before the first Ray run and timed apart),
first with ``--threads`` (the race schedule: the side-by-side comparison), then with
one thread (the sequential schedule: one single-worker CP-SAT solve per pair, one at a
time, which gives clean per-pair times). Every run must give the same verdict and the
same status for every pair.

Projection of the proof's wall time on W Ray workers, from the one-thread runs: each
pair costs its CP-SAT seconds on the worker ``t`` plus the Ray round trip measured for it
``o`` (driver seconds minus worker seconds); the driver's own per-pair work ``s`` (model
clone, conditions, point decoding, measured on the local backend) holds the GIL, so it
does not parallelise. proof(W) = max(sum s, makespan of the pairs in order on W
workers, each taking the next pair when free), beside the bound max(max t, sum t / W);
verify(W) adds the part of verify outside the proof (reading the files, onnxruntime
replays, claims; measured on the local run). The projection assumes one attempt per
pair (no racing seeds), a cluster of identical single-CPU workers and the round trip
measured here: a conservative model of the race, whose idle workers re-attempt
undecided pairs.

    python -m benchmarks.studies.ray_scaling --out benchmarks/results/studies/ray_scaling.md
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from pace_cert.cert.verify import run_verify
from pace_cert.oracle.cpsat import SeparationOracle

WORKERS = (1, 2, 4, 8, 16, 32, 64)


def build(work: Path, trees: int, depth: int, eta: float, limit: float) -> tuple[Path, ...]:
    """The digits forest, its training CSV and a certified compression (cached)."""
    from sklearn.datasets import load_digits

    from pace_cert import zoo
    from pace_cert.app import run_compress
    from pace_cert.settings import CompressConfig

    key = f"rf{trees}d{depth}-digits-eta{eta:g}"
    d = work / key
    model, data, out = d / "model.onnx", d / "train.csv", d / "out"
    if not (out / "certificate.json").exists():
        d.mkdir(parents=True, exist_ok=True)
        X, y = load_digits(return_X_y=True)
        X = X.astype(np.float32).astype(np.float64)
        Xtr, _, ytr, _ = zoo.split(X, y, seed=0)
        est = zoo.make_model("rf", trees, depth, 0).fit(Xtr, ytr)
        model.write_bytes(zoo.export_onnx(est, X.shape[1]).SerializeToString())
        zoo.write_csv(data, Xtr, ytr, [f"px{i}" for i in range(X.shape[1])])
        cfg = CompressConfig.of(mode="prune", eta=eta, time_limit=limit, threads=2)
        res = run_compress(model, data, out, cfg, progress=print)
        if res.exit_code != 0:
            raise SystemExit(f"{key}: compress certified nothing smaller in {limit} s")
    return model, out / "compressed.onnx", out / "certificate.json"


@contextlib.contextmanager
def capture():
    """Record each ``SeparationOracle.separate`` call: (seconds, its PairResults)."""
    calls: list[tuple[float, list]] = []
    real = SeparationOracle.separate

    def separate(self, *args, **kwargs):
        t = time.perf_counter()
        res = real(self, *args, **kwargs)
        calls.append((time.perf_counter() - t, res))
        return res

    SeparationOracle.separate = separate
    try:
        yield calls
    finally:
        SeparationOracle.separate = real


def verify_once(paths: tuple[Path, ...], backend: str, threads: int) -> dict:
    with capture() as calls:
        t = time.perf_counter()
        rep = run_verify(*paths, threads=threads, backend=backend)
        wall = time.perf_counter() - t
    assert len(calls) == 1, "one proof per verify"
    proof, pairs = calls[0]
    return {
        "backend": backend,
        "threads": threads,
        "status": rep.status,
        "message": rep.message,
        "wall": wall,
        "proof": proof,
        "pairs": pairs,
        "statuses": [(r.y0, r.y, r.status) for r in pairs],
    }


def makespan(costs: list[float], workers: int) -> float:
    """Pairs in order, each to the first worker free (what a FIFO task queue does)."""
    free = [0.0] * workers
    for c in costs:
        t = heapq.heappop(free)
        heapq.heappush(free, t + c)
    return max(free)


def warm_up(threads: int) -> float:
    """Start the local Ray instance and run one tiny task per CPU (imports OR-Tools in
    every worker); returns the seconds."""
    import ray

    from pace_cert.oracle.ray_backend import RayPool

    t = time.perf_counter()
    RayPool(None, threads, 0)  # connects as verify does (threads + 1 CPUs)

    @ray.remote(num_cpus=1)
    def touch() -> int:
        from ortools.sat.python import cp_model

        return int(cp_model.CpSolver().solve(cp_model.CpModel()))

    ray.get([touch.remote() for _ in range(threads + 1)])
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trees", type=int, default=30)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--eta", type=float, default=0.2, help="compress's region (vote share)")
    p.add_argument("--compress-limit", type=float, default=600.0, help="seconds (cached run)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--work", type=Path, default=Path("/tmp/pace-ray-scaling"))
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    machine = harness.machine_info()
    paths = build(args.work, args.trees, args.depth, args.eta, args.compress_limit)
    T = args.threads
    runs = [verify_once(paths, "local", T)]
    ray_start = warm_up(T)
    runs.append(verify_once(paths, "ray", T))
    runs.append(verify_once(paths, "local", 1))
    runs.append(verify_once(paths, "ray", 1))
    same = all(r["status"] == runs[0]["status"] for r in runs) and all(
        r["statuses"] == runs[0]["statuses"] for r in runs
    )
    lines = ["## Side by side", ""]
    lines += [
        "| backend | threads | schedule | verify wall (s) | proof wall (s) | pair seconds, "
        "sum (s) | CP-SAT seconds, sum (s) | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r['backend']} | {r['threads']} | {'race' if r['threads'] > 1 else 'sequential'}"
            f" | {r['wall']:.2f} | {r['proof']:.2f} | {sum(x.seconds for x in r['pairs']):.2f}"
            f" | {sum(x.solve_seconds for x in r['pairs']):.2f} | {r['status']}: {r['message']} |"
        )
    n = len(runs[0]["pairs"])
    lines += [
        "",
        f"Ray start and warm-up (a local instance with {T + 1} CPUs, one task per CPU), not in "
        f"the Ray rows: {ray_start:.2f} s. Same verdict and the same status for all {n} "
        f"pairs in every run: {'yes' if same else 'NO'}.",
        "",
    ]
    loc1, ray1 = runs[2], runs[3]
    t = np.array([x.solve_seconds for x in ray1["pairs"]])
    o = np.maximum(np.array([x.seconds for x in ray1["pairs"]]) - t, 0.0)
    s = np.maximum(np.array([x.seconds - x.solve_seconds for x in loc1["pairs"]]), 0.0)
    outside = loc1["wall"] - loc1["proof"]
    q = np.percentile(t, [50, 90]) if n else [0.0, 0.0]
    lines += [
        "## Per pair (one-thread runs)",
        "",
        f"- CP-SAT seconds on the worker t: sum {t.sum():.2f}, median {q[0]:.3f}, "
        f"p90 {q[1]:.3f}, max {t.max():.3f} (local backend: sum "
        f"{sum(x.solve_seconds for x in loc1['pairs']):.2f})",
        f"- Ray round trip o (driver seconds - worker seconds): sum {o.sum():.2f}, "
        f"median {np.median(o):.3f}, max {o.max():.3f}",
        f"- driver work per pair on the local backend s (not parallel): sum {s.sum():.2f}",
        f"- verify outside the proof: {outside:.2f} s",
        "",
        "## Projection against workers",
        "",
        "| workers | proof (s) | verify (s) | speed-up of the proof vs 1 worker | bound "
        "max(max t, sum t / W) (s) |",
        "|---|---|---|---|---|",
    ]
    costs = list(t + o)
    base = None
    for w in WORKERS:
        proof = max(float(s.sum()), makespan(costs, w))
        base = base or proof
        bound = max(float(t.max()), float(t.sum()) / w)
        lines.append(
            f"| {w} | {proof:.2f} | {proof + outside:.2f} | {base / proof:.1f}x | {bound:.2f} |"
        )
    head = harness.report_head(
        "verify on the local and the Ray backend, and a projection against workers",
        "benchmarks.studies.ray_scaling",
        [
            f"model: random forest {args.trees} trees x depth {args.depth} on digits (10 "
            f"classes, {n} ordered pairs), compressed with `--mode prune --eta {args.eta:g}`",
            "machine: " + "; ".join(f"{k} {v}" for k, v in machine),
        ],
        __doc__,
        argv,
    )
    harness.emit_report("\n".join(head + lines) + "\n", args.out)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
