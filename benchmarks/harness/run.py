"""Running one configuration, and a profile's configurations one after another.

A certified result is checked through onnxruntime (:func:`check_compressed`): the
written compressed model against the IR, and the original against the compressed model
on every in-region data row and on random points in the region. A disagreement is a
bug in pace-cert (:class:`~benchmarks.harness.prepare.MismatchError`) and stops the run;
every other failure becomes a row with status ``error``.
"""

from __future__ import annotations

import importlib.util
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.harness.prepare import MismatchError, Prepared, check_agree, ort_labels, prepare
from benchmarks.harness.profiles import Profile, config_time_limit, select
from benchmarks.harness.records import (
    DONE_STATUSES,
    Config,
    Result,
    append_result,
    reached_time_limit,
    read_results,
    write_results,
)
from benchmarks.harness.report import RunStats
from benchmarks.harness.tables import fmt, fmt_pct
from pace_cert.driver.result import CompressResult
from pace_cert.driver.runner import compress
from pace_cert.model.onnx_writer import ensemble_to_onnx
from pace_cert.region.masks import probe_points, region_mask
from pace_cert.settings import CompressConfig

PROBE_POINTS = 20_000  # random points near the data per certified result (region check)


def check_compressed(cfg: Config, prep: Prepared, res: CompressResult) -> list[str]:
    """onnxruntime checks on a certified result; returns the names of the checks run.

    The certificate's claim is checked where it can be without a solver: on every test
    and training row inside its region (the declared domain, the original's margin above
    c_o, the plausibility threshold) and on the in-region share of ``PROBE_POINTS``
    random points near the training rows (:func:`pace_cert.region.masks.probe_points`),
    onnxruntime's labels of the original and of the written compressed model must be
    equal. Near-ties inside the runtime guard are outside every region (c_o >= the
    guard), so onnxruntime's float32 sums may decide them either way."""
    comp = res.compressed
    written = ensemble_to_onnx(comp, prep.info).SerializeToString()
    for name, X in (("test", prep.X_test), ("training", prep.X_train)):
        check_agree(
            f"written compressed ONNX (onnxruntime) and compressed IR on {name} rows",
            cfg,
            comp.predict(X),
            ort_labels(written, X),
        )
    done = ["original", "compressed-writer"]
    scope = "global" if cfg.eta == 0 and cfg.delta == 0 else "regional"

    def inside(X: np.ndarray) -> np.ndarray:
        return region_mask(prep.original, res.region.margin, res.plausibility, X, res.domain)

    for name, X, ref in (
        ("test", prep.X_test, prep.ort_test),
        ("training", prep.X_train, prep.ort_train),
    ):
        keep = inside(X)
        check_agree(
            f"certified {scope} compression: original (onnxruntime) and "
            f"compressed IR on {name} rows in the region",
            cfg,
            ref[keep],
            comp.predict(X[keep]),
        )
    done.append(f"{scope}-faithful")
    P = probe_points(prep.X_train, PROBE_POINTS, cfg.seed)
    P = P[inside(P)]
    if len(P):
        check_agree(
            f"certified {scope} compression: original and compressed ONNX (onnxruntime) on "
            f"{len(P)} random points in the region",
            cfg,
            ort_labels(prep.onnx_bytes, P),
            ort_labels(written, P),
        )
        done.append("region-probe")
    return done


def pricing_available() -> bool:
    """``generate`` / ``pace`` need the pricing module, which may not exist yet."""
    return importlib.util.find_spec("pace_cert.learners.pricing") is not None


def is_not_implemented(exc: BaseException) -> bool:
    if isinstance(exc, NotImplementedError):
        return True
    return isinstance(exc, ModuleNotFoundError) and (exc.name or "").startswith("pace_cert")


def measure(
    cfg: Config, prep: Prepared, res: CompressResult, seconds: float, time_limit: float | None
) -> Result:
    comp = res.compressed
    pred = comp.predict(prep.X_test)
    checks = check_compressed(cfg, prep, res) if res.certified else ["original"]
    result = Result.for_config(
        cfg,
        res.status,
        S=comp.n_trees,
        P=100.0 * sum(o == "new" for o in comp.origin) / comp.n_trees if comp.n_trees else 0.0,
        T=round(seconds, 3),
        trees_before=prep.original.n_trees,
        leaves_before=prep.original.n_leaves,
        leaves_after=comp.n_leaves,
        fidelity=float(np.mean(pred == prep.ort_test)),
        accuracy=float(np.mean(pred == prep.y_test)),
        original_accuracy=float(np.mean(prep.ort_test == prep.y_test)),
        samples_kept=res.samples_kept,
        samples_dropped=res.samples_dropped,
        separating_samples=len(res.history),
        phase=res.phase,
        l0_optimal=res.l0_optimal,
        size_bound=getattr(res, "size_bound", None),
        pruning_bound=None if res.pruning_bound is None else res.pruning_bound.value,
        pricing=res.pricing,
        pricing_rounds=len(res.reduced_costs),
        generation_stop=res.generation_stop,
        time_limit=time_limit,
        onnx_checks="+".join(checks),
    )
    result.hit_time_limit = reached_time_limit(result)
    return result


def time_to_size(sizes: list[tuple[float, int]], final: int | None) -> float | None:
    """Seconds at which the run first held a certified model of ``final`` trees or
    fewer (``sizes``: (seconds, trees) per improvement, in order)."""
    return next((t for t, k in sizes if final is not None and k <= final), None)


def run_config(
    cfg: Config,
    time_limit: float | None,
    threads: int,
    progress: Callable[[str], None] | None = None,
) -> Result:
    """Run one configuration; only an onnxruntime/IR mismatch escapes as an exception."""
    if cfg.mode != "prune" and not pricing_available():
        missing = "pace_cert.learners.pricing is missing"
        return Result.for_config(cfg, "not-implemented", time_limit=time_limit, error=missing)
    try:
        prep = prepare(cfg)
        comp_cfg = CompressConfig.of(
            mode=cfg.mode,
            eta=cfg.eta,
            delta=cfg.delta,
            seed=cfg.seed,
            threads=threads,
            time_limit=time_limit,
        )
        t0 = time.perf_counter()
        sizes: list[tuple[float, int]] = []  # (seconds, trees) of each certified improvement

        def improved(r) -> None:
            if r.certified:
                sizes.append((time.perf_counter() - t0, r.compressed.n_trees))

        res = compress(prep.original, prep.X_train, comp_cfg, progress, on_improve=improved)
        seconds = time.perf_counter() - t0
        result = measure(cfg, prep, res, seconds, time_limit)
        result.t_final = time_to_size(sizes, result.S) if res.certified else None
        return result
    except MismatchError:
        raise
    except Exception as exc:
        status = "not-implemented" if is_not_implemented(exc) else "error"
        if status == "error":
            traceback.print_exc()
        return Result.for_config(
            cfg, status, time_limit=time_limit, error=f"{type(exc).__name__}: {exc}"[:300]
        )


# ------------------------------------------------------------------------ the profile


def run_profile(
    profile: Profile,
    out_dir: Path,
    only: str | None,
    time_limit: float | None,
    threads: int,
    verbose: bool,
    stats: RunStats,
) -> dict[str, Result]:
    """Run the profile's configurations selected by ``only`` (skipping finished ones
    when the profile resumes), appending each row to ``<out_dir>/<profile>.csv`` as it
    finishes; returns every row of the CSV by key."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / f"{profile.name}.csv"
    results = read_results(csv_path)
    todo = select(profile.configs(), only)
    stats.filtered = len(profile.configs()) - len(todo)
    t0 = time.perf_counter()
    for i, cfg in enumerate(todo, 1):
        old = results.get(cfg.key)
        if profile.resume and old is not None and old.status in DONE_STATUSES:
            stats.reused += 1
            continue
        budget_left = (
            None if profile.budget is None else profile.budget - (time.perf_counter() - t0)
        )
        if budget_left is not None and budget_left < 5:
            stats.over_budget.append(cfg.key)
            continue
        limit = config_time_limit(profile, time_limit, budget_left, len(todo) - i + 1)
        limit = None if limit is None else round(limit, 1)
        progress = (lambda m: print(f"    {m}", flush=True)) if verbose else None
        result = run_config(cfg, limit, threads, progress)
        append_result(csv_path, result)
        results[cfg.key] = result
        stats.ran += 1
        print(
            f"[{i}/{len(todo)}] {cfg.key}: {result.status} S={fmt(result.S)} "
            f"T={fmt(result.T, 2)} fid={fmt_pct(result.fidelity)} {result.error}",
            flush=True,
        )
    write_results(csv_path, results.values())
    return results
