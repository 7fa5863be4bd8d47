"""The frontier use case: certify every rung of a ladder within one time budget.

Each rung is one ``compress`` run (:func:`pace_cert.app.run_compress`) into
``DIR/<rung>/``, so every rung directory is what ``compress`` writes and ``verify``
checks. Shared across rungs: the inputs (read and checked once, before anything is
written), one plausibility forest (fitted once; each rung sets its own threshold), the
budget (each rung gets what is left divided by the rungs still to run), and with the
local backend the models: the smallest model certified on an enclosing rung is the
next rung's first candidate (``driver/phases/start_from.py``).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pace_cert.app import prepare_out_dir, run_compress
from pace_cert.budget import Budget
from pace_cert.data import Dataset, read_csv
from pace_cert.driver.result import StartModel
from pace_cert.errors import EmptyRegion, InputError
from pace_cert.frontier.ladder import Rung, enclosing
from pace_cert.frontier.record import FrontierRecord, RowCoverage, RungRecord, rung_bounds
from pace_cert.model.ensemble import Ensemble
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.model.runtime import labels, loadable_session, session
from pace_cert.outputs import Committed, OutputDir
from pace_cert.settings import CompressConfig, SettingError, check_for_model

Progress = Callable[[str], None]
FRONTIER_FILE = "frontier.json"


@dataclass(frozen=True)
class RungJob:
    """One rung's compress run: everything a worker needs (picklable, for Ray)."""

    rung: Rung
    model: Path
    data: Path
    test: Path | None
    out: Path
    cfg: CompressConfig
    target: str
    plausibility: object | None  # the shared forest, its threshold set for this delta
    wall_deadline: float | None  # time.time() at which the rung's time ends
    start: StartModel | None = None
    start_name: str | None = None


@dataclass
class RungOutcome:
    record: RungRecord
    model: StartModel | None = None  # the smaller certified model (None: none)


@dataclass
class FrontierOutcome:
    record: FrontierRecord
    path: Path
    exit_code: int
    rungs: list[RungOutcome] = field(default_factory=list)


def check_inputs(
    model: Path,
    data: Path,
    test: Path | None,
    rungs: Sequence[Rung],
    settings: dict,
    target: str = "target",
) -> tuple[Ensemble, bytes, Dataset, Dataset | None, list[CompressConfig]]:
    """Read and check everything before anything is written: the model, the CSVs and
    every rung's settings. InputError (exit 3) otherwise."""
    original_bytes = Path(model).read_bytes() if Path(model).is_file() else b""
    ensemble, _info = read_ensemble(model)
    loadable_session(original_bytes, model)
    cfgs = []
    for r in rungs:
        try:
            cfg = CompressConfig.of(eta=r.eta, delta=r.delta, **settings)
            check_for_model(cfg, ensemble.kind)
        except SettingError as e:
            raise InputError(None, f"rung {r.name}: {e}") from None
        cfgs.append(cfg)
    ds = read_csv(data, ensemble.classes, ensemble.n_features, target)
    if len(ds.X) < 2:
        raise InputError(data, "has 1 data row; the frontier needs at least 2")
    ts = None if test is None else read_csv(test, ensemble.classes, ensemble.n_features, target)
    return ensemble, original_bytes, ds, ts, cfgs


def fit_shared_forest(X: np.ndarray, cfg: CompressConfig, deltas: Sequence[float]):
    """The one plausibility forest of the frontier (None: no rung has delta > 0),
    fitted exactly as a compress run with these settings fits its own."""
    if not any(d > 0 for d in deltas):
        return None
    from pace_cert.region.plausibility import fit_plausibility

    d = max(deltas)
    return fit_plausibility(X, d, cfg.iforest_estimators, cfg.iforest_max_samples, cfg.seed)


class FrontierOutput:
    """What the process guard (``pace_cert/guard.py``) holds while a frontier runs: the
    current rung's output directory (its commit lock: a rung's file set is never left
    half-written) and, as the last commit, the frontier's exit code so far (0 once some
    rung certified a smaller model)."""

    def __init__(self) -> None:
        self.current: OutputDir | None = None
        self.certified = 0  # rungs finished with a smaller certified model
        self._idle = threading.Lock()

    @property
    def lock(self) -> threading.Lock:
        return self._idle if self.current is None else self.current.lock

    @property
    def committed(self) -> Committed | None:
        now = None if self.current is None else self.current.committed
        if self.certified or (now is not None and now.exit_code == 0):
            return Committed(0, f"{self.certified} finished rung(s) certified smaller")
        return now


def run_rung(
    job: RungJob, progress: Progress | None = None, output: OutputDir | None = None
) -> RungOutcome:
    """One rung: compress into ``job.out`` within the job's time, then measure the
    written model on the data and test rows. ``output``: the rung's output directory
    object (default: a new one)."""
    t0 = time.perf_counter()
    left = None if job.wall_deadline is None else max(0.0, job.wall_deadline - time.time())
    budget = Budget.seconds(left)
    cfg = job.cfg if left is None else job.cfg.tuned(time_limit=max(left, 0.01))
    said = progress or (lambda _m: None)
    started: list[bool] = []

    def watch(msg: str) -> None:
        if msg.startswith("[start] certified"):
            started.append(True)
        said(msg)

    ensemble, _ = read_ensemble(job.model)
    try:
        out = run_compress(
            job.model,
            job.data,
            job.out,
            cfg,
            job.target,
            watch,
            budget,
            output=output,
            plausibility=job.plausibility,
            start=job.start,
        )
    except EmptyRegion:
        said(f"[frontier] {job.rung.name}: no training row lies in the region; next rung")
        return RungOutcome(_empty_record(job, ensemble, time.perf_counter() - t0, left))
    s = out.certificate.summary
    rec = RungRecord(
        name=job.rung.name,
        eta=job.rung.eta,
        delta=job.rung.delta,
        status="certified" if out.exit_code == 0 else "original unchanged",
        trees_before=s.trees_before,
        trees_after=s.trees_after,
        leaves_before=s.leaves_before,
        leaves_after=s.leaves_after,
        bounds=rung_bounds(out.certificate),
        started_from=job.start_name,
        start_certified=None if job.start is None else bool(started),
        data=_row_coverage(job, ensemble, job.data),
        test=None if job.test is None else _row_coverage(job, ensemble, job.test),
        seconds=time.perf_counter() - t0,
        budget_seconds=left,
        time_limited=out.timed_out,
        phase=s.phase,
    )
    start = None
    if out.compressed is not None:
        ls = out.certificate.learners
        start = StartModel(
            out.compressed,
            [lr.weight for lr in ls],
            [lr.merged for lr in ls],
            [list(lr.original_trees) for lr in ls],
        )
    return RungOutcome(rec, start)


def _empty_record(job: RungJob, ens: Ensemble, seconds: float, left: float | None) -> RungRecord:
    return RungRecord(
        name=job.rung.name,
        eta=job.rung.eta,
        delta=job.rung.delta,
        status="empty region",
        trees_before=ens.n_trees,
        trees_after=ens.n_trees,
        leaves_before=ens.n_leaves,
        leaves_after=ens.n_leaves,
        bounds={"size_lower_bound": None, "witness_bound": None, "pruning_bound": None},
        seconds=seconds,
        budget_seconds=left,
        time_limited=False,
    )


def _row_coverage(job: RungJob, original: Ensemble, path: Path) -> RowCoverage:
    """The rows of ``path`` inside the rung's region (the domain, margin and
    plausibility bound of its certificate, inferred from the training rows as compress
    does) and onnxruntime's agreement of the written model with the original on all."""
    from pace_cert.cert.coverage import coverage
    from pace_cert.driver.state import region_domain
    from pace_cert.region.margins import region_margin

    rows = read_csv(path, original.classes, original.n_features, job.target).X
    train = read_csv(job.data, original.classes, original.n_features, job.target).X
    forest = job.plausibility if job.cfg.delta > 0 else None
    domain = region_domain(original, train, job.cfg, forest)
    cov = coverage(original, rows, region_margin(original, job.cfg.eta), forest, domain)
    a = labels(session(Path(job.model).read_bytes()), rows)
    b = labels(session((job.out / "compressed.onnx").read_bytes()), rows)
    agree = float(np.mean(a == b)) if len(rows) else 1.0
    return RowCoverage(path=str(path), rows=len(rows), inside=cov.inside, agreement=agree)


def rung_jobs(
    rungs: Sequence[Rung],
    cfgs: Sequence[CompressConfig],
    model: Path,
    data: Path,
    test: Path | None,
    out: Path,
    target: str,
    forest,
    X: np.ndarray,
) -> list[RungJob]:
    """One job per rung (no deadline or start model yet)."""
    from pace_cert.region.plausibility import with_delta

    jobs = []
    for r, cfg in zip(rungs, cfgs):
        pl = with_delta(forest, X, r.delta) if forest is not None and r.delta > 0 else None
        jobs.append(RungJob(r, model, data, test, out / r.name, cfg, target, pl, None))
    return jobs


def run_frontier(
    model: Path,
    data: Path,
    out: Path,
    rungs: Sequence[Rung],
    settings: dict,
    *,
    test: Path | None = None,
    target: str = "target",
    budget: Budget | None = None,
    backend: str = "local",
    ray_address: str | None = None,
    reuse: bool = True,
    progress: Progress | None = None,
    on_rung: Callable[[FrontierRecord], None] | None = None,
    output: FrontierOutput | None = None,
) -> FrontierOutcome:
    """Certify each rung of ``rungs`` (ladder order: every rung after the rungs around
    it) into ``out/<rung>/`` and write ``out/frontier.json``.

    ``settings``: CompressConfig fields shared by the rungs (mode, time_limit, threads,
    seed, ...; not eta/delta). ``budget``: the whole run's time (default
    ``settings["time_limit"]`` from now). ``backend``: local (rungs one after another,
    each starting from an enclosing rung's model when ``reuse``) or ray (rungs as Ray
    tasks in parallel, each from the original). ``on_rung``: called with the record
    after each rung (frontier.json is rewritten then); ``output``: where the current
    rung's output directory is published (for the process guard). Exit code 0 when some rung
    certified a smaller model, else 2; InputError before anything is written."""
    t0 = time.perf_counter()
    model, data, out = Path(model), Path(data), Path(out)
    test = None if test is None else Path(test)
    ensemble, original_bytes, ds, _ts, cfgs = check_inputs(
        model, data, test, rungs, settings, target
    )
    prepare_out_dir(out)
    if budget is None:
        budget = Budget.seconds(settings.get("time_limit"))
    say = progress or (lambda _m: None)
    forest = fit_shared_forest(ds.X, cfgs[0], [r.delta for r in rungs])
    jobs = rung_jobs(rungs, cfgs, model, data, test, out, target, forest, ds.X)
    header = {
        "tool_version": _version(),
        "created": _now(),
        "model": str(model),
        "model_sha256": hashlib.sha256(original_bytes).hexdigest(),
        "data": str(data),
        "test": None if test is None else str(test),
        "mode": cfgs[0].mode,
        "eta_units": "vote share" if ensemble.kind == "voting" else "raw score",
        "time_limit": settings.get("time_limit"),
        "backend": backend,
        "reuse": reuse and backend == "local",
    }
    done: list[RungOutcome] = []

    def record() -> FrontierRecord:
        code = 0 if any(o.record.status == "certified" for o in done) else 2
        return FrontierRecord(
            **header,
            seconds=time.perf_counter() - t0,
            exit_code=code,
            rungs=[o.record for o in done],
        )

    def commit() -> FrontierRecord:
        from pace_cert.outputs import write_atomic

        rec = record()
        write_atomic(out / FRONTIER_FILE, (rec.model_dump_json(indent=1) + "\n").encode())
        if on_rung is not None:
            on_rung(rec)
        return rec

    if backend == "ray":
        done.extend(_run_on_ray(jobs, budget, ray_address, cfgs[0].threads, say))
        done.sort(key=lambda o: [j.rung.name for j in jobs].index(o.record.name))
    else:
        for i, job in enumerate(jobs):
            job = _scheduled(job, budget, len(jobs) - i, done if reuse else [], rungs[:i])
            say(f"[frontier] rung {i + 1}/{len(jobs)}: {job.rung.name}")
            rung_out = OutputDir(job.out)
            if output is not None:
                output.current = rung_out
            done.append(run_rung(job, say, rung_out))
            if output is not None:
                output.certified += done[-1].record.status == "certified"
            commit()
    rec = commit()
    return FrontierOutcome(rec, out / FRONTIER_FILE, rec.exit_code, done)


def _scheduled(
    job: RungJob, budget: Budget, remaining: int, done: list[RungOutcome], before: Sequence[Rung]
) -> RungJob:
    """``job`` with its share of the time left (left / rungs remaining: time a rung
    does not use is carried forward) and, from ``done``, the smallest model certified
    on a rung around it."""
    from dataclasses import replace

    left = budget.left()
    deadline = None if left is None else time.time() + max(0.0, left) / remaining
    around = {r.name for r in enclosing(job.rung, list(before))}
    models = [(o.model, o.record.name) for o in done if o.model is not None]
    starts = [(m, n) for m, n in models if n in around]
    start, name = min(
        starts, key=lambda mn: (mn[0].model.n_trees, mn[0].model.n_leaves), default=(None, None)
    )
    return replace(job, wall_deadline=deadline, start=start, start_name=name)


def _run_on_ray(
    jobs: list[RungJob], budget: Budget, address: str | None, threads: int, say: Progress
) -> list[RungOutcome]:
    """Every rung as a Ray task, all with the whole time left (they run in parallel;
    no model passes between them)."""
    from dataclasses import replace

    import ray

    from pace_cert.oracle.ray_backend import connect

    connect(address, max(1, threads))
    left = budget.left()
    deadline = None if left is None else time.time() + max(0.0, left)
    task = ray.remote(num_cpus=1)(_ray_rung)
    refs = [task.remote(replace(j, wall_deadline=deadline)) for j in jobs]
    say(f"[frontier] {len(refs)} rungs submitted as Ray tasks")
    return list(ray.get(refs))


def _ray_rung(job: RungJob) -> RungOutcome:
    out = run_rung(job)
    return RungOutcome(out.record, None)


def _version() -> str:
    from pace_cert import __version__

    return __version__


def _now() -> str:
    from pace_cert.cert.certificate import now_iso

    return now_iso()
