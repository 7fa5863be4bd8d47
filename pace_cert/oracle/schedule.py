"""How one separation call spreads its threads over the ordered label pairs.

* ``race``: single-worker CP-SAT runs, pairs at once; a thread left idle starts another
  seed on an undecided pair, and the first attempt to decide a pair stops the others
  (single-worker searches for separating points have heavy-tailed times;
  docs/decisions/0002-race-schedule.md);
* ``parallel``: pairs at once, ``threads // pairs`` CP-SAT workers each;
* ``sequential``: one pair at a time with every thread (CP-SAT's own portfolio).

Each attempt is a complete, checked answer (FEASIBLE with a genuine point, INFEASIBLE,
or UNKNOWN); a schedule only chooses which answer arrives first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from pace_cert.oracle.score_model import PairResult
from pace_cert.oracle.settings import OracleSettings

Pair = tuple[int, int]


class Race:
    """The attempts (solver runs with different seeds) at one pair: the first that
    decides the pair stops the others. Thread-safe. A solver is anything with
    ``stop_search()`` (CP-SAT's ``CpSolver``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._solvers: list = []
        self.decided = False

    def join(self, solver) -> bool:
        """Register a solver; False if the pair is decided already (do not start)."""
        with self._lock:
            if self.decided:
                return False
            self._solvers.append(solver)
            return True

    def decide(self) -> None:
        with self._lock:
            self.decided = True
        self.stop()

    def stop(self) -> None:
        """Ask every registered solver to stop (a no-op for one not searching yet, so
        the scheduler repeats it until the losers have returned)."""
        with self._lock:
            solvers = list(self._solvers)
        for sv in solvers:
            sv.stop_search()


class LevelOrder:
    """The CP-SAT ``linearization_level`` of racing attempts, in order of preference:
    a pair's next attempt takes the first level it has tried least. The level of the
    attempt that decided the last pair moves to the front, so the pairs after it (in
    this call and, the object living on the oracle, in later calls) start with the
    level that has been winning. Which level is faster depends on the model: level 0
    first is faster on the paper's binned forests (docs/decisions/0002-race-schedule.md),
    level 1 on raw-feature forests with many classes (a digits forest: every level-0
    attempt lost to its level-1 twin after 2 s, 64 s for a proof that takes 2 s)."""

    def __init__(self, levels: tuple[int, ...]) -> None:
        if not levels:
            raise ValueError("LevelOrder needs at least one level")
        self._lock = threading.Lock()
        self.levels = list(dict.fromkeys(levels))  # unique, in the given order

    def pick(self, tried: list[int]) -> int:
        """The level for a pair's next attempt, given the levels its attempts used."""
        with self._lock:
            return min(self.levels, key=lambda lv: (tried.count(lv), self.levels.index(lv)))

    def won(self, level: int) -> None:
        """An attempt at ``level`` decided its pair: start the next pairs with it."""
        with self._lock:
            if level in self.levels:
                self.levels.remove(level)
                self.levels.insert(0, level)


#: one attempt at a pair: (pair, workers, deadline, race, seed, linearization level)
Attempt = Callable[
    [Pair, int, "float | None", "Race | None", "int | None", "int | None"], PairResult
]


def schedule_for(schedule: str, threads: int, n_pairs: int) -> str:
    """The schedule a call with ``threads`` threads on ``n_pairs`` pairs runs: the
    configured one, except that one thread always solves the pairs one at a time, and
    "parallel" does too with a single pair."""
    if threads > 1 and schedule == "race":
        return "race"
    if threads > 1 and n_pairs > 1 and schedule == "parallel":
        return "parallel"
    return "sequential"


def run_sequential(
    pairs: list[Pair], attempt: Attempt, threads: int, deadline: float | None
) -> list[PairResult]:
    return [attempt(pr, threads, deadline, None, None, None) for pr in pairs]


def run_parallel(
    pairs: list[Pair], attempt: Attempt, threads: int, deadline: float | None
) -> list[PairResult]:
    workers = max(1, threads // max(1, len(pairs)))
    with ThreadPoolExecutor(max_workers=min(threads, len(pairs))) as ex:
        return list(ex.map(lambda pr: attempt(pr, workers, deadline, None, None, None), pairs))


def run_race(
    pairs: list[Pair],
    attempt: Attempt,
    threads: int,
    deadline: float | None,
    *,
    seed: int,
    levels: LevelOrder,
    settings: OracleSettings,
    until_found: bool = False,
) -> list[PairResult]:
    """``threads`` single-worker attempts at a time. Pairs start in order with ``seed``;
    a thread with no pair left to start runs another seed (seed + attempt number) on the
    undecided pair with the fewest attempts, with the ``linearization_level``
    ``levels.pick`` gives it (the level that decided the last pair first). When every
    thread is busy, one more attempt may start on a pair whose last attempt has run
    ``escalate_seconds * 2**(attempts - 1)`` (two pairs both stuck in a heavy tail leave no
    thread idle). A pair's result is its first FEASIBLE or INFEASIBLE attempt; UNKNOWN
    only when every attempt ended undecided (at most ``max_attempts``).

    ``until_found``: once some pair has a separating sample, a pair still undecided
    after searching for ``max(found_grace_seconds, time to that first sample)`` since
    then (or since it started, if later) is stopped and reported UNKNOWN; pairs not
    started yet still get that long. For a loop that re-solves whenever a sample is
    found: a proof for this candidate would be thrown away with it. Never changes a
    call that finds no sample."""
    max_attempts = settings.max_attempts
    t_start = time.perf_counter()
    found_at: float | None = None
    queue = list(pairs)
    attempts = {pr: 0 for pr in pairs}
    races = {pr: Race() for pr in pairs}
    results: dict[Pair, PairResult] = {}
    live: dict[Future, Pair] = {}
    tried: dict[Pair, list[int]] = {pr: [] for pr in pairs}  # the levels of its attempts
    level_of: dict[Future, int] = {}
    started: dict[Pair, float] = {}  # when each pair's last attempt began
    first_start: dict[Pair, float] = {}  # when its first attempt began

    def launch(ex: ThreadPoolExecutor) -> None:
        while len(live) <= threads:
            now = time.perf_counter()
            if deadline is not None and now >= deadline:
                return
            open_ = [q for q in pairs if q not in results and attempts[q] < max_attempts]
            if len(live) == threads:  # busy: only a pair stuck for a while gets a twin
                open_ = [
                    q
                    for q in open_
                    if q in started
                    and now - started[q] >= settings.escalate_seconds * 2 ** (attempts[q] - 1)
                ]
            if queue and len(live) < threads:
                pr = queue.pop(0)
            elif open_:
                pr = min(open_, key=lambda q: attempts[q])
            else:
                return
            k = attempts[pr]
            attempts[pr] += 1
            started[pr] = now
            first_start.setdefault(pr, now)
            level = levels.pick(tried[pr])
            tried[pr].append(level)
            fut = ex.submit(attempt, pr, 1, deadline, races[pr], seed + k, level)
            live[fut] = pr
            level_of[fut] = level

    with ThreadPoolExecutor(max_workers=threads + 1) as ex:
        try:
            launch(ex)
            while live:
                done, _ = wait(list(live), timeout=0.05, return_when=FIRST_COMPLETED)
                for fut in done:
                    pr = live.pop(fut)
                    level = level_of.pop(fut)
                    r = fut.result()
                    if pr in results:
                        continue  # a loser, stopped
                    if r.status in ("FEASIBLE", "INFEASIBLE"):
                        results[pr] = r
                        races[pr].decide()
                        levels.won(level)
                        if r.status == "FEASIBLE" and found_at is None:
                            found_at = time.perf_counter()
                    elif not any(q == pr for q in live.values()):
                        results[pr] = r  # UNKNOWN: time limit or the nogood cap
                        attempts[pr] = max_attempts
                if until_found and found_at is not None:
                    now = time.perf_counter()
                    grace = max(settings.found_grace_seconds, found_at - t_start)
                    for pr in pairs:  # the round has a sample: stop the long searches
                        if (
                            pr not in results
                            and pr in first_start
                            and now - max(found_at, first_start[pr]) >= grace
                        ):
                            attempts[pr] = max_attempts
                            races[pr].decide()
                for pr, race in races.items():
                    if pr in results or race.decided:
                        race.stop()  # repeated: a loser may not have been searching yet
                if all(pr in results for pr in pairs):
                    continue  # wait for the stopped losers only
                launch(ex)
        except BaseException:  # e.g. a KeyboardInterrupt: stop every search, then wait
            for race in races.values():
                race.decide()
            raise
    # pairs the deadline stopped before a first attempt: undecided, as in the other
    # schedules (whose attempts return UNKNOWN at once past the deadline)
    return [results.get(pr) or PairResult(*pr, "UNKNOWN") for pr in pairs]
