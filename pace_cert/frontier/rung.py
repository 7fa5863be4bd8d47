"""One rung of a frontier: a ``compress`` run into ``DIR/<rung>/`` within the rung's
time (its measurement on the rows included), then the written model measured on the
data and test rows (:func:`run_rung`). A :class:`RungJob` holds everything a worker
needs (picklable: a forked process or a Ray task runs it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pace_cert.app import AsGiven, run_compress
from pace_cert.data import read_csv
from pace_cert.driver.result import StartModel
from pace_cert.errors import EmptyRegion
from pace_cert.frontier.ladder import Rung
from pace_cert.frontier.record import RowCoverage, RungRecord, rung_bounds
from pace_cert.frontier.state import cut_record
from pace_cert.model.ensemble import Ensemble
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.model.runtime import labels, session
from pace_cert.plumbing.budget import Budget
from pace_cert.plumbing.outputs import OutputDir
from pace_cert.settings import CompressConfig

Progress = Callable[[str], None]

#: share of a rung's time kept for measuring its model on the rows (at most
#: COVERAGE_RESERVE_CAP seconds): the measurement counts against the rung's time
COVERAGE_RESERVE = 0.1
COVERAGE_RESERVE_CAP = 15.0


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
    keep_below: tuple[int, int] | None = None  # second pass: (trees, leaves) to beat
    columns: tuple[str, ...] | None = None  # the training CSV's feature columns
    as_given: AsGiven | None = None  # how the certificate names the inputs (default: paths)


@dataclass
class RungOutcome:
    record: RungRecord
    model: StartModel | None = None  # the smaller certified model (None: none)


def run_rung(
    job: RungJob,
    progress: Progress | None = None,
    output: OutputDir | None = None,
    on_commit: Callable[[RungRecord], None] | None = None,
) -> RungOutcome:
    """One rung: compress into ``job.out`` within the job's time, then measure the
    written model on the data and test rows. ``output``: the rung's output directory
    object (default: a new one); ``on_commit``: called with the rung's record (state
    cut: its best certified model so far) after each file set it commits."""
    t0 = time.perf_counter()
    left = None if job.wall_deadline is None else max(0.0, job.wall_deadline - time.time())
    # the compress run's time: the rung's share less the measurement's reserve
    run_seconds = None if left is None else max(left - coverage_reserve(left), 0.01)
    budget = Budget.seconds(run_seconds)
    cfg = job.cfg if run_seconds is None else job.cfg.tuned(time_limit=run_seconds)
    said = progress or (lambda _m: None)
    started: list[bool] = []

    def watch(msg: str) -> None:
        if msg.startswith("[start] certified"):
            started.append(True)
        said(msg)

    ensemble, _ = read_ensemble(job.model)

    def committed(cert) -> None:
        if on_commit is not None:
            on_commit(cut_record(job.rung, cert, time.perf_counter() - t0, left, job.start_name))

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
            on_commit=committed,
            plausibility=job.plausibility,
            start=job.start,
            as_given=job.as_given,
            say_floor=False,  # the frontier says the floor table once, at its start
        )
    except EmptyRegion:
        said(f"[frontier] {job.rung.name}: no training row lies in the region; next rung")
        return RungOutcome(_empty_record(job, ensemble, time.perf_counter() - t0, left))
    s = out.certificate.summary
    rec = RungRecord(
        name=job.rung.name,
        eta=job.rung.eta,
        delta=job.rung.delta,
        share_asked=job.rung.share,
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
        state="cut" if out.timed_out else "finished",
        stop_reason="" if out.stop is None else str(out.stop),
        estimate=None if out.estimate is None else out.estimate.floor,
        deployment=s.deployment,
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


def measured(job: RungJob, record: RungRecord) -> RungRecord:
    """``record`` with its data and test rows measured against the model its directory
    holds (a rung stopped before it measured them); unchanged when there is none."""
    if not (job.out / "compressed.onnx").is_file():
        return record
    ensemble, _ = read_ensemble(job.model)
    data = _row_coverage(job, ensemble, job.data)
    test = None if job.test is None else _row_coverage(job, ensemble, job.test)
    return record.model_copy(update={"data": data, "test": test})


def coverage_reserve(seconds: float) -> float:
    """Seconds of a rung's ``seconds`` kept for measuring its model on the rows."""
    return min(COVERAGE_RESERVE * seconds, COVERAGE_RESERVE_CAP)


def _empty_record(job: RungJob, ens: Ensemble, seconds: float, left: float | None) -> RungRecord:
    return RungRecord(
        name=job.rung.name,
        eta=job.rung.eta,
        delta=job.rung.delta,
        share_asked=job.rung.share,
        status="empty region",
        trees_before=ens.n_trees,
        trees_after=ens.n_trees,
        leaves_before=ens.n_leaves,
        leaves_after=ens.n_leaves,
        bounds={"size_lower_bound": None, "witness_bound": None, "pruning_bound": None},
        seconds=seconds,
        budget_seconds=left,
        time_limited=False,
        stop_reason="no training row lies in the region",
    )


def _row_coverage(job: RungJob, original: Ensemble, path: Path) -> RowCoverage:
    """The rows of ``path`` inside the rung's region (the domain, margin and
    plausibility bound of its certificate, inferred from the training rows as compress
    does) and onnxruntime's agreement of the written model with the original, on the
    rows inside the region and on all."""
    from pace_cert.cert.coverage import region_masks
    from pace_cert.driver.state import region_domain
    from pace_cert.region.margins import region_margin

    rows = read_csv(path, original.classes, original.n_features, job.target, job.columns).X
    train = read_csv(job.data, original.classes, original.n_features, job.target, job.columns).X
    forest = job.plausibility if job.cfg.delta > 0 else None
    domain = region_domain(original, train, job.cfg, forest)
    inside = region_masks(original, rows, region_margin(original, job.cfg.eta), forest, domain)[
        "inside"
    ]
    a = labels(session(Path(job.model).read_bytes()), rows)
    b = labels(session((job.out / "compressed.onnx").read_bytes()), rows)
    same = np.asarray(a == b)
    names = job.as_given or AsGiven()
    named = names.test if path == job.test else names.data
    return RowCoverage(
        path=named or str(path),
        rows=len(rows),
        inside=int(inside.sum()),
        agreement=float(same.mean()) if len(rows) else 1.0,
        agreement_inside=float(same[inside].mean()) if inside.any() else None,
    )
