"""The local frontier's schedule: the rungs one after another, each with its share of
the time left (time a rung leaves goes to the next), each in a process of its own
stopped at its hard stop (:mod:`.isolate`), then the second pass: the time the ladder
left, shared by the rungs that were cut, each resuming from its own best certified
model (only a smaller certified model replaces it)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from pace_cert.frontier.isolate import KeepBest, run_in_child
from pace_cert.frontier.ladder import Rung, enclosing
from pace_cert.frontier.record import FrontierRecord, RungRecord
from pace_cert.frontier.rung import RungJob, RungOutcome, measured, run_rung
from pace_cert.frontier.state import FrontierState, not_started_record
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.plumbing.budget import Budget
from pace_cert.plumbing.outputs import OutputDir

Progress = Callable[[str], None]

#: a rung's hard stop: its share plus this share of it (at least HARD_STOP_MIN seconds),
#: never more than HARD_STOP_MIN past the frontier's own deadline
HARD_STOP_GRACE = 0.03
HARD_STOP_MIN = 1.0
#: the second pass (rungs cut, given the time the ladder left): as many cut rungs as
#: have this many seconds each, the largest regions first
SECOND_PASS_MIN = 5.0
#: the refinement: at most this many rungs added between neighbours whose sizes fall by
#: more than half, run after the ladder on the time it left plus REFINE_SLOTS rungs'
#: worth of time kept back from the ladder
MAX_REFINED = 3
REFINE_SLOTS = 1


def run_locally(
    jobs: list[RungJob],
    budget: Budget,
    state: FrontierState,
    reuse: bool,
    say: Progress,
    on_rung: Callable[[FrontierRecord], None] | None,
    isolate: bool,
    between: Callable[[RungJob, RungJob], RungJob | None] | None = None,
) -> list[RungOutcome]:
    """The rungs one after another, each with its share of the time left (time a rung
    leaves goes to the next), each in a process of its own when ``isolate`` (its hard
    stop); then the refinement (``between``: the job of a rung between two neighbours,
    None when there is none; see :func:`refine`); then the second pass: the time left,
    shared by the rungs that were cut, each resuming from its own best certified model.
    Every commit and every rung's end rewrites frontier.json. ``jobs`` is extended in
    place with the rungs the refinement adds (in ladder order)."""
    done: list[RungOutcome] = []
    rungs = [j.rung for j in jobs]
    spare = REFINE_SLOTS if between is not None and len(jobs) > 1 else 0
    for i, job in enumerate(jobs):
        job = _scheduled(job, budget, len(jobs) - i + spare, done if reuse else [], rungs[:i])
        say(f"[frontier] rung {i + 1}/{len(jobs)}: {job.rung.name}")
        done.append(_one_rung(i, job, budget, state, say, isolate))
        if on_rung is not None:
            on_rung(state.snapshot())
    if between is not None:
        refine(jobs, done, LocalRun(budget, state, reuse, say, on_rung, isolate), between)
    rungs = [j.rung for j in jobs]
    cut = [i for i, o in enumerate(done) if o.record.state == "cut"]
    left = budget.left()
    if left is None:
        return done
    cut = cut[: int(left // SECOND_PASS_MIN)]  # the largest regions first
    if not cut:
        return done
    say(f"[frontier] second pass: {left:.0f} s left for {len(cut)} rung(s) cut")
    for k, i in enumerate(cut):
        first = done[i]
        job = _scheduled(jobs[i], budget, len(cut) - k, done if reuse else [], rungs[:i])
        if first.model is not None:  # resume from the rung's own best certified model
            job = replace(job, start=first.model, start_name=first.record.name)
        job = replace(job, keep_below=kept_size(first.record))
        say(f"[frontier] second pass {k + 1}/{len(cut)}: {job.rung.name}")
        done[i] = _one_rung(i, job, budget, state, say, isolate, first)
        if on_rung is not None:
            on_rung(state.snapshot())
    return done


def falls(outer: RungRecord, inner: RungRecord) -> bool:
    """Whether the size falls by more than half from rung ``outer`` to the rung
    ``inner`` inside it (trees or leaves, of the models each keeps)."""
    (t0, l0), (t1, l1) = kept_size(outer), kept_size(inner)
    return 2 * t1 < t0 or 2 * l1 < l0


@dataclass(frozen=True)
class LocalRun:
    """What every rung of a local frontier run shares (see :func:`run_locally`)."""

    budget: Budget
    state: FrontierState
    reuse: bool
    say: Progress
    on_rung: Callable[[FrontierRecord], None] | None
    isolate: bool


def refine(
    jobs: list[RungJob],
    done: list[RungOutcome],
    run: LocalRun,
    between: Callable[[RungJob, RungJob], RungJob | None],
) -> None:
    """Where two neighbouring rungs' sizes fall by more than half (:func:`falls`), a
    rung between them (``between``), run with a share of the time left, until no such
    pair is left, no rung fits between, at most ``MAX_REFINED`` rungs were added, or the
    time left is under ``SECOND_PASS_MIN``. ``jobs``, ``done`` and ``state`` take the
    new rungs in ladder order."""
    budget, state, say = run.budget, run.state, run.say
    added = 0
    tried: set[tuple[str, str]] = set()
    while added < MAX_REFINED:
        left = budget.left()
        if left is not None and left < SECOND_PASS_MIN:
            return
        pairs = [
            i for i in range(len(done) - 1)
            if (jobs[i].rung.name, jobs[i + 1].rung.name) not in tried
            and falls(done[i].record, done[i + 1].record)
        ]  # fmt: skip
        if not pairs:
            return
        i = pairs[0]
        tried.add((jobs[i].rung.name, jobs[i + 1].rung.name))
        job = between(jobs[i], jobs[i + 1])
        if job is None or any(j.rung == job.rung for j in jobs):
            continue
        pos = i + 1
        rungs = [j.rung for j in jobs]
        jobs.insert(pos, job)
        with state.lock:
            state.insert(pos, job.rung)
        job = _scheduled(job, budget, MAX_REFINED - added, done if run.reuse else [], rungs[:pos])
        say(
            f"[frontier] refining: the size falls by more than half from {jobs[i].rung.name} "
            f"to {jobs[pos + 1].rung.name}; rung {job.rung.name} between them"
        )
        done.insert(pos, _one_rung(pos, job, budget, state, say, run.isolate))
        added += 1
        if run.on_rung is not None:
            run.on_rung(state.snapshot())


def kept_size(record: RungRecord) -> tuple[int, int]:
    """The (trees, leaves) a later pass must beat: the certified model's, else the
    original's."""
    if record.status == "certified":
        return (record.trees_after, record.leaves_after)
    return (record.trees_before, record.leaves_before)


def better(record: RungRecord, than: RungRecord) -> bool:
    """Whether ``record`` certifies a model smaller than ``than`` keeps."""
    size = (record.trees_after, record.leaves_after)
    return record.status == "certified" and size < kept_size(than)


def rung_hard_stop(share: float, budget: Budget) -> float:
    """The ``perf_counter`` moment a rung of ``share`` seconds starting now is stopped:
    its share plus a grace, never more than HARD_STOP_MIN past the budget's end."""
    stop = time.perf_counter() + share + max(HARD_STOP_MIN, HARD_STOP_GRACE * share)
    return stop if budget.deadline is None else min(stop, budget.deadline + HARD_STOP_MIN)


def _one_rung(
    i: int,
    job: RungJob,
    budget: Budget,
    state: FrontierState,
    say: Progress,
    isolate: bool,
    first: RungOutcome | None = None,
) -> RungOutcome:
    """Rung ``i`` (a second pass when ``first``, the first pass's outcome, is given:
    only a smaller certified model replaces it), its record in ``state``."""
    t0 = time.perf_counter()
    keep = None if first is None else first.record

    def seen(record: RungRecord) -> None:
        if keep is not None and not better(record, state.partial or keep):
            return
        if keep is not None:
            record = record.model_copy(update={"seconds": keep.seconds + record.seconds})
        with state.lock:
            state.commit_seen(record)
            state.write("running")

    def directory() -> OutputDir:
        if job.keep_below is not None:
            return KeepBest(job.out, job.keep_below)
        return OutputDir(job.out)

    with state.lock:
        state.begin(i, keep)
    if isolate:
        share = None if job.wall_deadline is None else job.wall_deadline - time.time()
        hard = None if share is None else rung_hard_stop(share, budget)
        outcome, why = run_in_child(run_rung, job, hard, say, seen, directory, state.set_child)
    else:
        rung_out = directory()
        rung_out.lock = state.lock  # the guard's lock: one writer at a time
        outcome, why = run_rung(job, say, rung_out, on_commit=seen), ""
    if outcome is None:  # stopped: the best it committed, as the parent saw it
        say(f"[frontier] {job.rung.name}: {why}")
        best = state.partial or keep
        if best is None:
            outcome = RungOutcome(nothing_written(job, time.perf_counter() - t0, why))
        else:
            spent = (0.0 if keep is None else keep.seconds) + time.perf_counter() - t0
            record = best.model_copy(update={"stop_reason": why, "seconds": spent})
            left = budget.left()
            if record.data is None and (left is None or left > 0):
                record = measured(job, record)  # the rows its directory's model covers
            outcome = RungOutcome(record, None)
            if first is not None and best is keep:
                outcome.model = first.model
    elif first is not None:
        seconds = first.record.seconds + outcome.record.seconds
        if better(outcome.record, first.record):
            outcome.record = outcome.record.model_copy(update={"seconds": seconds})
        else:
            note = f"{first.record.stop_reason}; second pass ({outcome.record.seconds:.0f} s): "
            note += "nothing smaller"
            outcome = RungOutcome(
                first.record.model_copy(update={"seconds": seconds, "stop_reason": note}),
                first.model,
            )
    with state.lock:
        state.finish(i, outcome.record)
        state.write("running")
    return outcome


def nothing_written(job: RungJob, seconds: float, why: str) -> RungRecord:
    """A rung stopped before its first commit (its directory holds no file set)."""
    ens, _ = read_ensemble(job.model)
    rec = not_started_record(job.rung, ens.n_trees, ens.n_leaves)
    return rec.model_copy(
        update={
            "status": "nothing written",
            "state": "cut",
            "seconds": seconds,
            "time_limited": True,
            "stop_reason": why,
        }
    )


def _scheduled(
    job: RungJob, budget: Budget, remaining: int, done: list[RungOutcome], before: Sequence[Rung]
) -> RungJob:
    """``job`` with its share of the time left (left / rungs remaining: time a rung
    does not use is carried forward) and, from ``done``, the smallest model certified
    on a rung around it."""
    left = budget.left()
    deadline = None if left is None else time.time() + max(0.0, left) / remaining
    around = {r.name for r in enclosing(job.rung, list(before))}
    models = [(o.model, o.record.name) for o in done if o.model is not None]
    starts = [(m, n) for m, n in models if n in around]
    start, name = min(
        starts, key=lambda mn: (mn[0].model.n_trees, mn[0].model.n_leaves), default=(None, None)
    )
    return replace(job, wall_deadline=deadline, start=start, start_name=name)
