"""The race schedule's choice of CP-SAT LP level (pace_cert/oracle/schedule.py): the
level that decided the last pair starts the next pairs. Soundness does not depend on
it (every attempt is a complete answer; tests/test_oracle_bruteforce.py); these tests
pin the policy with attempts that answer at once at one level and, at the other, wait
until their race is stopped, as a heavy-tailed search does."""

from __future__ import annotations

import time

import pytest

from pace_cert.oracle.schedule import LevelOrder, run_race
from pace_cert.oracle.score_model import PairResult
from pace_cert.oracle.settings import OracleSettings


def test_a_pairs_attempts_take_the_levels_it_tried_least_in_order():
    order = LevelOrder((0, 1))
    assert [order.pick([]), order.pick([0]), order.pick([0, 1]), order.pick([0, 1, 0])] == [
        0,
        1,
        0,
        1,
    ]
    order.won(1)
    assert order.levels == [1, 0]
    assert [order.pick([]), order.pick([1])] == [1, 0]
    order.won(7)  # a level it does not race: ignored
    assert order.levels == [1, 0]
    with pytest.raises(ValueError):
        LevelOrder(())


def _attempts(fast_level: int, log: list[tuple[tuple[int, int], int]]):
    """An attempt that decides its pair at once at ``fast_level`` and otherwise
    searches (polls) until its race is decided, then answers UNKNOWN."""

    def attempt(pr, workers, deadline, race=None, seed=None, level=None) -> PairResult:
        log.append((pr, level))
        if level == fast_level:
            return PairResult(*pr, "INFEASIBLE")
        end = time.perf_counter() + 30
        while not race.decided and time.perf_counter() < end:
            time.sleep(0.01)
        return PairResult(*pr, "UNKNOWN")

    return attempt


def test_after_a_level_wins_the_next_pairs_start_with_it():
    """Level 0 first; once a level-1 twin decides a pair, the pairs still to start
    begin at level 1 and decide at once (with the fixed order each waited for its
    escalated twin), and the order carries over to the next call."""
    pairs = [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)]
    settings = OracleSettings(escalate_seconds=0.2)
    order = LevelOrder((0, 1))
    log: list = []
    res = run_race(pairs, _attempts(1, log), 2, None, seed=0, levels=order, settings=settings)
    assert [r.status for r in res] == ["INFEASIBLE"] * len(pairs)
    firsts = {}
    for pr, level in log:
        firsts.setdefault(pr, level)
    late = [firsts[pr] for pr in pairs[3:]]
    assert late == [1, 1, 1], log  # not one escalation per pair
    assert order.levels[0] == 1
    log.clear()
    run_race(pairs, _attempts(1, log), 2, None, seed=0, levels=order, settings=settings)
    firsts = {}
    for pr, level in log:
        firsts.setdefault(pr, level)
    assert set(firsts.values()) == {1}, log


def test_an_interrupt_stops_every_search_before_the_race_returns():
    """A KeyboardInterrupt in the scheduling thread (here raised when the first result
    is read) tells every attempt still searching to stop (``stop_search``), so the
    interrupt is not held up until those searches end by themselves."""
    import threading

    stopped = threading.Event()

    class Solver:
        def stop_search(self) -> None:
            stopped.set()

    class Interrupting:
        @property
        def status(self) -> str:
            raise KeyboardInterrupt

    def attempt(pr, workers, deadline, race=None, seed=None, level=None):
        if pr == (0, 1):
            return Interrupting()
        race.join(Solver())
        stopped.wait(30)  # a long search, until told to stop
        return PairResult(*pr, "UNKNOWN")

    pairs = [(1, 0), (0, 1)]
    with pytest.raises(KeyboardInterrupt):
        run_race(
            pairs, attempt, 2, None, seed=0, levels=LevelOrder((0,)), settings=OracleSettings()
        )
    assert stopped.is_set()
