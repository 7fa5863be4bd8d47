"""Issue #51: a frontier that always delivers. frontier.json lists every rung
(finished, cut with its best certified model so far, not started) whatever ends the
run; exit 0 only with a table and a frontier.json listing a certified smaller rung;
the guard's last words need no solver."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from pace_cert.frontier.ladder import Rung
from pace_cert.frontier.record import FrontierRecord, RungRecord
from pace_cert.frontier.state import FrontierState, cut_record, last_words

HEADER = {
    "tool_version": "0",
    "created": "now",
    "model": "m.onnx",
    "model_sha256": "0" * 64,
    "data": "d.csv",
    "test": None,
    "mode": "prune",
    "eta_units": "vote share",
    "time_limit": 10.0,
    "backend": "local",
    "reuse": True,
}
RUNGS = [Rung(0.0, 0.0), Rung(0.1, 0.0), Rung(0.2, 0.0)]


def _cert(trees_after: int, certified: bool = True) -> SimpleNamespace:
    summary = SimpleNamespace(
        certified=certified,
        trees_before=100,
        trees_after=trees_after,
        leaves_before=1000,
        leaves_after=10 * trees_after,
        size_lower_bound=None,
        witness_bound=None,
        phase="l0",
    )
    return SimpleNamespace(summary=summary)


def _finished(rung: Rung, trees_after: int) -> RungRecord:
    rec = cut_record(rung, _cert(trees_after, trees_after < 100), 1.0, 2.0)
    return rec.model_copy(update={"state": "finished", "time_limited": False})


def _state(tmp_path: Path) -> FrontierState:
    state = FrontierState()
    state.start(tmp_path / "frontier.json", HEADER, RUNGS, 100, 1000)
    return state


def _read(tmp_path: Path) -> FrontierRecord:
    return FrontierRecord.model_validate_json((tmp_path / "frontier.json").read_bytes())


def test_last_words_list_every_rung_finished_cut_or_not_started(tmp_path):
    """Item 4: a rung cut after certifying 95 trees is listed with them."""
    state = _state(tmp_path)
    state.finish(0, _finished(RUNGS[0], 100))  # the original unchanged
    state.begin(1)
    state.commit_seen(cut_record(RUNGS[1], _cert(95), 3.0, 4.0))
    words = last_words(state, "stopped at the time limit")
    rec = _read(tmp_path)
    assert [r.state for r in rec.rungs] == ["finished", "cut", "not started"]
    assert [r.status for r in rec.rungs] == ["original unchanged", "certified", "not started"]
    assert rec.rungs[1].trees_after == 95
    assert rec.ended == "stopped at the time limit" and rec.exit_code == 0
    assert "95" in words.table and "not started" in words.table
    assert "1 finished, 1 cut, 1 not started" in words.note
    assert state.committed.exit_code == 0


def test_no_frontier_json_is_claimed_when_none_was_written(tmp_path):
    """Item 1: stopped before the first rung: the note says nothing was written."""
    words = last_words(FrontierState(), "stopped at the time limit")
    assert words.table == ""
    assert "nothing was written" in words.note and "frontier.json" not in words.note
    assert FrontierState().committed is None


def test_exit_0_only_once_a_frontier_json_lists_a_certified_smaller_rung(tmp_path):
    """Item 3: the guard's exit code is 0 only when the file on disk says so."""
    state = _state(tmp_path)
    state.begin(0)
    state.commit_seen(cut_record(RUNGS[0], _cert(100, certified=False), 1.0, 2.0))
    state.write()
    assert state.committed.exit_code == 2
    state.commit_seen(cut_record(RUNGS[0], _cert(60), 1.0, 2.0))
    assert state.committed.exit_code == 2  # in memory only: not on disk yet
    state.write()
    assert state.committed.exit_code == 0
    assert _read(tmp_path).rungs[0].trees_after == 60


def test_an_error_in_a_rung_leaves_every_rung_listed(zoo_model, tmp_path, monkeypatch):
    """Item 4: an internal error in rung 2 leaves rung 1 finished, rung 2 cut with
    what it committed, rung 3 not started."""
    from pace_cert.frontier import run, schedule

    model, data = zoo_model("seeds", "rf", 6, 2)

    def fake_rung(job, progress=None, output=None, on_commit=None):
        if job.rung == RUNGS[1]:
            on_commit(cut_record(job.rung, _cert(3), 1.0, None))
            raise RuntimeError("boom")
        return schedule.RungOutcome(_finished(job.rung, 4))

    monkeypatch.setattr(schedule, "run_rung", fake_rung)
    with pytest.raises(RuntimeError, match="boom"):  # raised in the rung's process
        run.run_frontier(model, data, tmp_path, RUNGS, {"mode": "prune"})
    rec = _read(tmp_path)
    assert [r.state for r in rec.rungs] == ["finished", "cut", "not started"]
    assert rec.rungs[1].trees_after == 3 and rec.ended == "stopped by RuntimeError"
    assert rec.exit_code == 4  # what the process returns, though rung 1 certified


STUCK = textwrap.dedent(
    """
    import sys, time
    from types import SimpleNamespace
    from pace_cert.frontier import rung, run

    def stuck(*args, on_commit=None, **kw):
        s = SimpleNamespace(certified={certified}, trees_before=6, trees_after=2,
                            leaves_before=24, leaves_after=8, size_lower_bound=None,
                            witness_bound=None, phase="l0")
        on_commit(SimpleNamespace(summary=s))
        time.sleep(600)  # a step that ignores its budget

    rung.run_compress = stuck
    run.isolation_available = lambda: {isolated}
    from pace_cert.cli.main import app
    sys.argv = ["pace-cert", *sys.argv[1:]]
    app()
    """
)


def _stuck_frontier(zoo_model, tmp_path, certified: bool, isolated: bool):
    """The frontier CLI in a fresh process whose compress runs commit a 2-tree model,
    then hang; a 10 s limit leaves room for a slow start on a loaded machine."""
    model, data = zoo_model("seeds", "rf", 6, 2)
    out = tmp_path / "out"
    script = STUCK.format(certified=certified, isolated=isolated)
    args = ["frontier", model, "--data", data, "--out", out, "--eta", "0,0.1", "--quiet"]
    res = subprocess.run(
        [sys.executable, "-c", script, *map(str, args), "--time-limit", "10"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return res, json.loads((out / "frontier.json").read_text())


@pytest.mark.parametrize(
    "certified, code", [(True, 0), pytest.param(False, 2, marks=pytest.mark.slow)]
)
def test_the_guard_ends_a_stuck_rung_with_the_table_and_frontier_json(
    zoo_model, tmp_path, certified, code
):
    """Items 1-4 (rungs in this process): a rung stuck past the limit: the guard ends
    the process with the table on stdout, frontier.json listing the stuck rung as cut
    with its best certified model and the others not started; exit 0 only when that
    model is smaller."""
    res, rec = _stuck_frontier(zoo_model, tmp_path, certified, isolated=False)
    assert res.returncode == code, res.stderr
    assert [r["state"] for r in rec["rungs"]] == ["cut", "not started"]
    assert rec["rungs"][0]["trees_after"] == 2
    assert rec["ended"].startswith("stopped at the time limit")
    assert res.stdout.splitlines()[0].split()[0] == "rung"
    assert "wrote" in res.stderr and "1 cut, 1 not started" in res.stderr


@pytest.mark.slow  # a rung hangs until its hard stop
def test_a_stuck_rung_is_stopped_at_its_hard_stop_and_the_next_rung_runs(zoo_model, tmp_path):
    """Item 2: each rung in its own process, stopped at its share (+ a grace): a
    stuck first rung does not eat the second's time; both are listed cut with the
    model they committed, and the run ends by itself with the table."""
    res, rec = _stuck_frontier(zoo_model, tmp_path, True, isolated=True)
    assert res.returncode == 0, res.stderr
    assert [r["state"] for r in rec["rungs"]] == ["cut", "cut"]
    assert all(r["stop_reason"].startswith("hard stop") for r in rec["rungs"])
    assert all(r["trees_after"] == 2 for r in rec["rungs"])
    assert all(r["seconds"] > 1.0 for r in rec["rungs"])  # its time, not its commit's
    assert rec["ended"] == "finished"
    assert res.stdout.splitlines()[0].split()[0] == "rung"


def test_unused_time_goes_back_to_the_rungs_cut(zoo_model, tmp_path, monkeypatch):
    """Item 5: time the ladder leaves goes back to the rungs that were cut, each
    resuming from its own best certified model; only a smaller model replaces it."""
    from pace_cert.frontier import run, schedule
    from pace_cert.plumbing.budget import Budget

    model, data = zoo_model("seeds", "rf", 6, 2)
    jobs = run.rung_jobs(RUNGS[:2], [None, None], model, data, None, tmp_path, "target", None, None)
    seen = []
    m5, m3 = (SimpleNamespace(model=SimpleNamespace(n_trees=n, n_leaves=10 * n)) for n in (5, 3))

    def fake_rung(job, progress=None, output=None, on_commit=None):
        seen.append((job.rung, job.start, job.keep_below, type(output).__name__))
        if job.rung == RUNGS[0] and job.keep_below is None:  # first pass: cut at 5 trees
            rec = cut_record(job.rung, _cert(5), 1.0, 1.0)
            return schedule.RungOutcome(rec, model=m5)
        if job.rung == RUNGS[0]:  # second pass: 3 trees
            return schedule.RungOutcome(_finished(job.rung, 3), model=m3)
        return schedule.RungOutcome(_finished(job.rung, 4))

    monkeypatch.setattr(schedule, "run_rung", fake_rung)
    state = _state(tmp_path)
    state.start(tmp_path / "frontier.json", HEADER, RUNGS[:2], 100, 1000)
    done = schedule.run_locally(jobs, Budget.seconds(60), state, True, print, None, False)
    assert [s[0] for s in seen] == [RUNGS[0], RUNGS[1], RUNGS[0]]
    assert seen[1][1] is m5  # the inner rung starts from the cut rung's model
    assert seen[2][1:] == (m5, (5, 50), "KeepBest")
    assert done[0].record.trees_after == 3 and done[0].record.seconds == 2.0
    assert [r.trees_after for r in _read(tmp_path).rungs] == [3, 4]


def test_a_second_pass_only_commits_a_smaller_certified_model(tmp_path):
    from pace_cert.frontier.isolate import KeepBest
    from pace_cert.plumbing.outputs import Committed

    def files(trees: int, certified: bool = True) -> dict[str, bytes]:
        summary = {"certified": certified, "trees_after": trees, "leaves_after": 10 * trees}
        return {
            "compressed.onnx": b"m%d" % trees,
            "certificate.json": json.dumps({"summary": summary}).encode(),
        }

    out = KeepBest(tmp_path, (5, 50))
    out.commit(files(6), Committed(2, "the original"))
    out.commit(files(5), Committed(0, "as large"))
    out.commit(files(3, certified=False), Committed(0, "not certified"))
    assert not (tmp_path / "compressed.onnx").exists()
    out.commit(files(4), Committed(0, "smaller"))
    assert (tmp_path / "compressed.onnx").read_bytes() == b"m4" and out.best == (4, 40)


def test_a_rungs_measurement_and_grace_count_against_its_share(zoo_model, monkeypatch):
    """Item 2: the compress run of a rung of S seconds gets S less the measurement's
    reserve; its hard stop is S plus a small grace, never far past the frontier's end."""
    import time

    from pace_cert.frontier import rung, schedule
    from pace_cert.plumbing.budget import Budget

    model, data = zoo_model("seeds", "rf", 6, 2)
    seen = {}

    def fake_compress(*args, **kw):
        seen["left"], seen["cfg"] = args[6].left(), args[3]
        raise RuntimeError("stop here")

    monkeypatch.setattr(rung, "run_compress", fake_compress)
    from pace_cert.settings import CompressConfig

    job = rung.RungJob(
        RUNGS[0], model, data, None, Path("x"), CompressConfig(mode="prune"), "target", None,
        time.time() + 100.0,
    )  # fmt: skip
    with pytest.raises(RuntimeError):
        rung.run_rung(job)
    assert 100 - rung.coverage_reserve(100) - 2 < seen["left"] <= 100 - rung.coverage_reserve(100)
    assert seen["cfg"].time_limit <= 100 - rung.coverage_reserve(100)
    assert rung.coverage_reserve(1000) == rung.COVERAGE_RESERVE_CAP
    now = time.perf_counter()
    stop = schedule.rung_hard_stop(100.0, Budget.seconds(100.0))
    assert now + 100 < stop <= time.perf_counter() + 100 + schedule.HARD_STOP_MIN
    stop = schedule.rung_hard_stop(100.0, Budget.seconds(1000.0))
    assert stop >= now + 100 + 100 * schedule.HARD_STOP_GRACE


def test_the_second_pass_takes_the_largest_cut_regions_the_time_allows(
    zoo_model, tmp_path, monkeypatch
):
    """Item 5: 7 s left and two rungs cut: the outer one runs again, not neither."""
    from pace_cert.frontier import run, schedule
    from pace_cert.plumbing.budget import Budget

    model, data = zoo_model("seeds", "rf", 6, 2)
    jobs = run.rung_jobs(RUNGS[:2], [None, None], model, data, None, tmp_path, "target", None, None)
    seen = []

    def fake_rung(job, progress=None, output=None, on_commit=None):
        seen.append((job.rung, job.keep_below is not None))
        return schedule.RungOutcome(cut_record(job.rung, _cert(5), 1.0, 1.0))

    monkeypatch.setattr(schedule, "run_rung", fake_rung)
    state = _state(tmp_path)
    state.start(tmp_path / "frontier.json", HEADER, RUNGS[:2], 100, 1000)
    budget = Budget.seconds(60)
    monkeypatch.setattr(budget.__class__, "left", lambda self: 7.0)
    schedule.run_locally(jobs, budget, state, True, print, None, False)
    assert seen == [(RUNGS[0], False), (RUNGS[1], False), (RUNGS[0], True)]
