"""Table (b) of the benchmark harness: the seconds to the returned size, and issue 52's
target per prune row (max(paper S, pruning bound + 1))."""

from __future__ import annotations

from benchmarks.harness import paper_values as pv
from benchmarks.harness.records import Config, Result
from benchmarks.harness.run import time_to_size
from benchmarks.harness.tables import _target, aggregate


def test_time_to_size_is_the_first_improvement_reaching_the_returned_size():
    sizes = [(1.0, 40), (3.5, 24), (9.0, 22), (50.0, 22)]
    assert time_to_size(sizes, 22) == 9.0
    assert time_to_size(sizes, 24) == 3.5
    assert time_to_size(sizes, 10) is None
    assert time_to_size([], 5) is None


def _row(S: int, bound: int | None, t_final: float | None = 12.0) -> Result:
    cfg = Config("cancer", "rf", 50, 2, "prune", 0.1, 0.1, 0)
    return Result.for_config(cfg, "certified", S=S, pruning_bound=bound, t_final=t_final)


def test_target_is_the_paper_size_or_one_above_our_bound():
    paper = pv.PaperStat(S=8, P=None, T=11)
    assert _target(aggregate([_row(8, 3)]), paper) == "8 (met)"
    assert _target(aggregate([_row(9, 3)]), paper) == "8 (not met)"
    # a bound we prove above the paper's size moves the target to bound + 1
    assert _target(aggregate([_row(14, 13)]), paper) == "14 (met)"
    assert _target(aggregate([_row(16, 13)]), paper) == "14 (not met)"
    assert _target(aggregate([_row(16, None)]), paper) == "8 (not met)"
    assert _target(aggregate([_row(8, 3)]), None) == "--"


def test_results_round_trip_the_new_columns():
    row = _row(22, 10, 105.5)
    back = Result.from_row(row.to_row())
    assert (back.pruning_bound, back.t_final) == (10, 105.5)
    assert aggregate([back]).t_final == 105.5
