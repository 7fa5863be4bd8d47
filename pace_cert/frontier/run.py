"""The frontier use case: certify every rung of a ladder within one time budget.

Each rung is one ``compress`` run (:func:`pace_cert.app.run_compress`) into
``DIR/<rung>/``, so every rung directory is what ``compress`` writes and ``verify``
checks. Shared across rungs: the inputs (read and checked once, before anything is
written), one plausibility forest (fitted once; each rung sets its own threshold), the
budget (:mod:`.schedule`: each rung gets what is left divided by the rungs still to
run, a hard stop, and a second pass for the rungs cut), and with the local backend the
models: the smallest model certified on an enclosing rung is the next rung's first
candidate (``driver/phases/start_from.py``). ``frontier.json`` lists every rung at
every moment (:mod:`.state`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pace_cert.app import AsGiven, prepare_out_dir
from pace_cert.data import Dataset, read_csv
from pace_cert.errors import InputError, exit_code_of
from pace_cert.frontier.isolate import isolation_available
from pace_cert.frontier.ladder import Ladder, Rung, eta_for_share, resolve
from pace_cert.frontier.record import FrontierRecord
from pace_cert.frontier.rung import RungJob, RungOutcome, run_rung
from pace_cert.frontier.schedule import run_locally
from pace_cert.frontier.state import FRONTIER_FILE, FrontierState
from pace_cert.model.ensemble import Ensemble
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.model.runtime import loadable_session
from pace_cert.plumbing.budget import Budget
from pace_cert.settings import CompressConfig, SettingError, check_for_model

Progress = Callable[[str], None]


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
    plan: Ladder,
    settings: dict,
    target: str = "target",
) -> CheckedInputs:
    """Read and check everything before anything is written: the model, the CSVs, the
    ladder (a :class:`RowShares` ladder translated into eta for this model) and every
    rung's settings. InputError (exit 3) otherwise."""
    original_bytes = Path(model).read_bytes() if Path(model).is_file() else b""
    ensemble, info = read_ensemble(model)
    loadable_session(original_bytes, model)
    try:  # the settings all rungs share: an error names the option, not a rung
        CompressConfig.of(**settings)
    except SettingError as e:
        raise InputError(None, str(e)) from None
    ds = read_csv(data, ensemble.classes, ensemble.n_features, target, info.feature_names)
    if len(ds.X) < 2:
        raise InputError(data, "has 1 data row; the frontier needs at least 2")
    ts = None
    if test is not None:  # its columns matched to the training CSV's by name
        ts = read_csv(test, ensemble.classes, ensemble.n_features, target, ds.feature_names)
    rungs, notes = resolve(plan, ensemble, ds.X[ds.complete])
    cfgs = []
    for r in rungs:
        try:
            cfg = CompressConfig.of(eta=r.eta, delta=r.delta, **settings)
            check_for_model(cfg, ensemble.kind)
        except SettingError as e:
            raise InputError(None, f"rung {r.name}: {e}") from None
        cfgs.append(cfg)
    return CheckedInputs(ensemble, original_bytes, ds, ts, rungs, cfgs, notes)


@dataclass(frozen=True)
class CheckedInputs:
    """What :func:`check_inputs` read: the model, the CSVs, the rungs (in eta and
    delta) with their settings, and notes on the ladder's translation."""

    ensemble: Ensemble
    original_bytes: bytes
    data: Dataset
    test: Dataset | None
    rungs: tuple[Rung, ...]
    cfgs: list[CompressConfig]
    notes: list[str]


def fit_shared_forest(X: np.ndarray, cfg: CompressConfig, deltas: Sequence[float]):
    """The one plausibility forest of the frontier (None: no rung has delta > 0),
    fitted exactly as a compress run with these settings fits its own."""
    if not any(d > 0 for d in deltas):
        return None
    from pace_cert.region.plausibility import fit_plausibility

    d = max(deltas)
    return fit_plausibility(X, d, cfg.iforest_estimators, cfg.iforest_max_samples, cfg.seed)


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
    columns: Sequence[str] | None = None,
    as_given: AsGiven | None = None,
) -> list[RungJob]:
    """One job per rung (no deadline or start model yet); ``columns``: the training
    CSV's feature columns (the test CSV's are matched to them by name); ``as_given``: how
    the rungs' certificates name the inputs (default: their paths)."""
    from pace_cert.region.plausibility import with_delta

    jobs = []
    for r, cfg in zip(rungs, cfgs):
        pl = with_delta(forest, X, r.delta) if forest is not None and r.delta > 0 else None
        job = RungJob(r, model, data, test, out / r.name, cfg, target, pl, None)
        cols = None if columns is None else tuple(columns)
        jobs.append(replace(job, columns=cols, as_given=as_given))
    return jobs


def run_frontier(
    model: Path,
    data: Path,
    out: Path,
    rungs: Ladder | Sequence[Rung],
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
    state: FrontierState | None = None,
    isolate: bool = True,
    as_given: AsGiven | None = None,
    refine: bool = True,
) -> FrontierOutcome:
    """Certify each rung of ``rungs`` (ladder order: every rung after the rungs around
    it; a :class:`~pace_cert.frontier.ladder.RowShares` ladder is translated into eta
    for this model first) into ``out/<rung>/`` and write ``out/frontier.json``.

    ``settings``: CompressConfig fields shared by the rungs (mode, time_limit, threads,
    seed, ...; not eta/delta). ``budget``: the whole run's time (default
    ``settings["time_limit"]`` from now). ``backend``: local (rungs one after another,
    each starting from an enclosing rung's model when ``reuse``) or ray (rungs as Ray
    tasks in parallel, each from the original). ``on_rung``: called with the record
    after each rung; ``state``: where every rung's status is kept (for the process
    guard's last words, :func:`pace_cert.frontier.state.last_words`; default a new one);
    ``isolate``: each local rung in a forked process of its own, ended at its hard stop
    (:mod:`.isolate`; off: in this process, stopped by its budget only); ``as_given``:
    how frontier.json and the rungs' certificates name the inputs (default: their paths);
    ``refine`` (local backend): where the kept size falls by more than half between two
    neighbouring rungs, rungs between them are added within the same time
    (:func:`~pace_cert.frontier.schedule.refine`, :func:`rung_between`).
    frontier.json lists every rung (finished, cut, not started) and is rewritten
    atomically before the first rung, at each rung's commits and after each rung.
    Exit code 0 when some rung certified a smaller model, else 2; InputError before
    anything is written."""
    model, data, out = Path(model), Path(data), Path(out)
    test = None if test is None else Path(test)
    checked = check_inputs(model, data, test, rungs, settings, target)
    ensemble, original_bytes, ds = checked.ensemble, checked.original_bytes, checked.data
    rungs, cfgs = checked.rungs, checked.cfgs
    prepare_out_dir(out)
    if budget is None:
        budget = Budget.seconds(settings.get("time_limit"))
    state = FrontierState() if state is None else state
    say = progress or (lambda _m: None)
    for note in checked.notes:
        say(f"[frontier] {note}")
    if cfgs[0].mode != "tree":  # what each coverage rung can buy at best, before the work
        from pace_cert.estimate import floor_lines, floor_table
        from pace_cert.region.margins import eta_units

        rows = floor_table(ensemble, ds.X[ds.complete], rungs[0].eta)
        for line in floor_lines(rows, eta_units(ensemble)):
            say(f"[frontier] {line.strip()}")
    names = AsGiven() if as_given is None else as_given
    header = {
        "tool_version": _version(),
        "created": _now(),
        "model": names.model or str(model),
        "model_sha256": hashlib.sha256(original_bytes).hexdigest(),
        "data": names.data or str(data),
        "test": None if test is None else names.test or str(test),
        "mode": cfgs[0].mode,
        "eta_units": "vote share" if ensemble.kind == "voting" else "raw score",
        "time_limit": settings.get("time_limit"),
        "backend": backend,
        "reuse": reuse and backend == "local",
    }
    with state.lock:
        state.start(out / FRONTIER_FILE, header, rungs, ensemble.n_trees, ensemble.n_leaves)
        state.write("running")
    try:
        forest = fit_shared_forest(ds.X, cfgs[0], [r.delta for r in rungs])
        jobs = rung_jobs(
            rungs, cfgs, model, data, test, out, target, forest, ds.X, ds.feature_names, as_given
        )
        if backend == "ray":
            outcomes = _run_on_ray(jobs, budget, ray_address, cfgs[0].threads, say)
            with state.lock:
                for i, o in enumerate(outcomes):
                    state.finish(i, o.record)
        else:
            isolated = isolate and isolation_available()

            def between(outer: RungJob, inner: RungJob) -> RungJob | None:
                rung = rung_between(outer.rung, inner.rung, ensemble, ds.X[ds.complete])
                if rung is None:
                    return None
                try:
                    cfg = CompressConfig.of(eta=rung.eta, delta=rung.delta, **settings)
                    check_for_model(cfg, ensemble.kind)
                except SettingError:
                    return None
                return rung_jobs(
                    [rung], [cfg], model, data, test, out, target, forest, ds.X,
                    ds.feature_names, as_given,
                )[0]  # fmt: skip

            refining = between if refine else None
            outcomes = run_locally(jobs, budget, state, reuse, say, on_rung, isolated, refining)
    except BaseException as e:  # the rungs so far stay listed; the running one as cut
        with state.lock:
            state.write(f"stopped by {type(e).__name__}", exit_code_of(e))
        raise
    with state.lock:
        rec = state.write("finished")
    return FrontierOutcome(rec, out / FRONTIER_FILE, rec.exit_code, outcomes)


def rung_between(outer: Rung, inner: Rung, ensemble, X: np.ndarray) -> Rung | None:
    """A rung whose region lies between ``outer``'s and ``inner``'s (inside the first,
    around the second): for rungs of a row-share ladder, the share halfway between
    (rounded to 0.5 %), its eta found on the rows ``X``; else, with one delta, the eta
    halfway between (two significant digits). None when no such rung differs from both."""
    if outer.delta != inner.delta:
        return None
    if outer.share is not None and inner.share is not None:
        share = round((outer.share + inner.share) * 100) / 200  # 0.5 % steps
        if not inner.share < share < outer.share:
            return None
        rung = Rung(eta_for_share(ensemble, X, share), outer.delta, share)
    else:
        eta = float(f"{(outer.eta + inner.eta) / 2:.2g}")
        rung = Rung(eta, outer.delta)
    if not outer.eta < rung.eta < inner.eta:
        return None
    return rung


def _run_on_ray(
    jobs: list[RungJob], budget: Budget, address: str | None, threads: int, say: Progress
) -> list[RungOutcome]:
    """Every rung as a Ray task, all with the whole time left (they run in parallel;
    no model passes between them)."""

    import ray

    from pace_cert.oracle.ray_backend import connect

    where = address or "a local Ray instance"
    say(f"[frontier] connecting to {where} (starting Ray can take a minute)")
    connect(address, max(1, threads))
    say(f"[frontier] connected to {where}")
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
    from pace_cert.cert.records import now_iso

    return now_iso()
