"""A profile's configurations as Ray tasks (``python -m benchmarks.harness ... --backend ray``).

Each configuration is one task (:func:`benchmarks.harness.run.run_config`, CP-SAT on
``--threads`` threads inside it, so a task asks Ray for that many CPUs); the tasks run
at once as far as the cluster's CPUs allow. Rows are appended to the CSV as the tasks
finish, in any order, so a run stopped part-way resumes as the local one does (finished
rows are skipped; ``error`` rows are run again). A MismatchError (onnxruntime and the
IR disagree: a pace-cert bug) stops the run as it does locally; a task whose worker
died is retried once, then its row says ``error``.

Cluster: ``--ray-address``, else ``RAY_ADDRESS``, else a local Ray instance with every
CPU of this machine. The code reaches the workers as ``py_modules`` (pace_cert and
benchmarks, without the results); their dependencies must be installed there. Under a
whole-run budget (the quick profile) each configuration gets the budget times the tasks
that fit at once, divided by the configurations to run. Imported only with
``--backend ray``.
"""

from __future__ import annotations

import os
from pathlib import Path

import ray

import benchmarks
import pace_cert
from benchmarks.harness.prepare import MismatchError
from benchmarks.harness.profiles import Profile, config_time_limit, select
from benchmarks.harness.records import (
    DONE_STATUSES,
    Config,
    Result,
    append_result,
    read_results,
    write_results,
)
from benchmarks.harness.report import RunStats
from benchmarks.harness.run import run_config
from benchmarks.harness.tables import fmt, fmt_pct

TASK_RETRIES = 1  # a configuration whose worker died runs once more, then is an error row


def _connect(address: str | None) -> None:
    if ray.is_initialized():
        return
    code = [str(Path(m.__file__).parent) for m in (pace_cert, benchmarks)]
    env = {"py_modules": code, "excludes": ["results/", "__pycache__/"]}
    address = address or os.environ.get("RAY_ADDRESS") or "local"
    ray.init(address=address, runtime_env=env, include_dashboard=False)


def _run_config_task(cfg: Config, limit: float | None, threads: int, verbose: bool) -> Result:
    progress = (lambda m: print(f"    {cfg.key}: {m}", flush=True)) if verbose else None
    return run_config(cfg, limit, threads, progress)


def run_profile_ray(
    profile: Profile,
    out_dir: Path,
    only: str | None,
    time_limit: float | None,
    threads: int,
    verbose: bool,
    stats: RunStats,
    address: str | None = None,
) -> dict[str, Result]:
    """:func:`benchmarks.harness.run.run_profile` with the configurations as Ray tasks."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / f"{profile.name}.csv"
    results = read_results(csv_path)
    todo = select(profile.configs(), only)
    stats.filtered = len(profile.configs()) - len(todo)
    run = []
    for cfg in todo:
        old = results.get(cfg.key)
        if profile.resume and old is not None and old.status in DONE_STATUSES:
            stats.reused += 1
        else:
            run.append(cfg)
    _connect(address)
    slots = max(1, int(ray.cluster_resources().get("CPU", 1)) // threads)
    budget = None if profile.budget is None else profile.budget * slots / max(1, len(run))
    limit = config_time_limit(profile, time_limit, budget, 1)
    limit = None if limit is None else round(limit, 1)
    remote = ray.remote(_run_config_task).options(num_cpus=threads, max_retries=TASK_RETRIES)
    live = {remote.remote(cfg, limit, threads, verbose): cfg for cfg in run}
    done = 0
    while live:
        ready, _ = ray.wait(list(live), num_returns=1)
        cfg = live.pop(ready[0])
        try:
            result = ray.get(ready[0])
        except ray.exceptions.RayError as e:  # lost twice, or an error outside run_config
            cause = e if isinstance(e, MismatchError) else getattr(e, "cause", None)
            if isinstance(cause, MismatchError):  # a pace-cert bug: stop, as locally
                for ref in live:
                    ray.cancel(ref, force=True)
                raise cause from None
            why = f"ray task: {type(e).__name__}"
            result = Result.for_config(cfg, "error", time_limit=limit, error=why[:300])
        append_result(csv_path, result)
        results[cfg.key] = result
        stats.ran += 1
        done += 1
        print(
            f"[{done}/{len(run)}] {cfg.key}: {result.status} S={fmt(result.S)} "
            f"T={fmt(result.T, 2)} fid={fmt_pct(result.fidelity)} {result.error}",
            flush=True,
        )
    write_results(csv_path, results.values())
    return results
