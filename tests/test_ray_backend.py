"""The Ray backend (``--backend ray``, pace_cert/oracle/ray_backend.py): only the CP-SAT
solve moves to a Ray task, so every status is the local backend's; a task whose worker
was killed is retried and then UNKNOWN, never a proof; a task with no answer at the
deadline is UNKNOWN and cancelled. The tests that need Ray start one local instance
with 2 CPUs for the module."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np
import pytest
import ray
from ortools.sat.python import cp_model
from typer.testing import CliRunner

from pace_cert import zoo
from pace_cert.cli.main import app
from pace_cert.model.onnx_reader import ensemble_from_model
from pace_cert.oracle import ray_backend
from pace_cert.oracle.cpsat import SeparationOracle
from pace_cert.oracle.score_model import ScoreModel
from pace_cert.oracle.settings import OracleSettings
from pace_cert.plumbing.budget import Budget
from pace_cert.region.margins import required_margin

from .helpers import candidates, oracle_region, small_problem

SEEDS = ("seeds", "rf", 10, 2)  # 7 binned features, classes 0, 1, 2 (as in test_cli)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
    )
    yield
    ray.shutdown()


def _problems(n_classes: int, seeds=(0, 1)):
    """(original, candidate) pairs of small forests: sub-ensembles and the original."""
    out = []
    for seed in seeds:
        X, y = small_problem(seed, n_features=3, n_classes=n_classes)
        original, _ = ensemble_from_model(
            zoo.export_onnx(zoo.make_model("rf", 6, 2, seed).fit(X, y), 3)
        )
        out += [(original, c) for c in candidates(original, np.random.default_rng(seed))]
    return out


def _separate(original, cand, threads: int, budget: Budget | None = None, **settings):
    dom, region, _ = oracle_region(original, cand.trees, 0.0, None)
    oracle = SeparationOracle(
        dom, ScoreModel.from_ensemble(original), region, settings=OracleSettings(**settings)
    )
    sm = ScoreModel.from_ensemble(cand)
    return oracle.separate(sm, required_margin(cand), threads=threads, budget=budget)


def test_a_task_answers_what_the_local_solver_answers():
    """The worker side alone (no Ray): the model and parameters as text, back the status
    and the decoded variables' values, as CpSolver gives them here."""
    m = cp_model.CpModel()
    x = [m.new_bool_var(f"x{i}") for i in range(6)]
    m.add_exactly_one(x[:3])
    m.add_bool_or([x[0].Not(), x[4]])
    m.add(sum(x) >= 3)
    local = cp_model.CpSolver()
    local.parameters.num_workers = 1
    local.parameters.random_seed = 7
    assert local.solve(m) in (cp_model.FEASIBLE, cp_model.OPTIMAL)
    decode = np.array([v.index for v in x], np.int64)
    out = ray_backend.solve_task(ray_backend.encode_model(m.proto), str(local.parameters), decode)
    assert out["status"] in ("FEASIBLE", "OPTIMAL")
    assert out["values"].tolist() == [int(local.boolean_value(v)) for v in x]
    m.add(sum(x[:3]) >= 2)  # contradicts the ExactlyOne
    out = ray_backend.solve_task(ray_backend.encode_model(m.proto), "num_workers: 1", decode)
    assert out["status"] == "INFEASIBLE" and out["values"] is None


def test_oracle_on_ray_gives_the_local_statuses(local_ray):
    """Same statuses for every pair, one thread (sequential: also the same points, as
    the same single-worker search runs on the worker) and two (the race)."""
    seen = set()
    for original, cand in _problems(3):
        ref = _separate(original, cand, 1)
        got = _separate(original, cand, 1, backend="ray")
        assert [r.status for r in got] == [r.status for r in ref]
        for a, b in zip(got, ref):
            assert (a.point is None) == (b.point is None)
            if a.point is not None:
                assert np.array_equal(a.point, b.point)
            assert a.solve_seconds > 0
        raced = _separate(original, cand, 2, backend="ray")
        assert [r.status for r in raced] == [r.status for r in ref]
        seen |= {r.status for r in ref}
    assert seen == {"INFEASIBLE", "FEASIBLE"}


@pytest.mark.slow  # a task killed and retried on a local Ray cluster
def test_a_killed_task_is_retried_and_then_unknown(local_ray, monkeypatch, tmp_path):
    """A worker killed (SIGKILL) while it runs the task: Ray retries the task; a task
    killed on every try is UNKNOWN, never a proof; one killed once answers as locally."""
    original, cand = _problems(2, seeds=(1,))[-1]  # the original itself: INFEASIBLE
    ref = _separate(original, cand, 1)
    assert {r.status for r in ref} == {"INFEASIBLE"}
    real = ray_backend.solve_task

    def killed(model, params, decode):
        import os
        import signal

        os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(ray_backend, "solve_task", killed)
    got = _separate(original, cand, 1, backend="ray", ray_retries=1)
    assert [r.status for r in got] == ["UNKNOWN"] * len(ref)

    def killed_once(model, params, decode):
        import hashlib
        import os
        import signal

        mark = tmp_path / hashlib.sha256(model + params.encode()).hexdigest()
        if not mark.exists():
            mark.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return real(model, params, decode)

    monkeypatch.setattr(ray_backend, "solve_task", killed_once)
    got = _separate(original, cand, 1, backend="ray", ray_retries=1)
    assert [r.status for r in got] == [r.status for r in ref]
    assert len(list(tmp_path.iterdir())) == len(ref)  # every task was killed once


def test_a_task_with_no_answer_by_the_deadline_is_unknown_and_cancelled(local_ray, monkeypatch):
    """The waiting side keeps the deadline (plus RESULT_GRACE_SECONDS) even when the
    worker does not, cancels the task, and the cancelled worker frees its CPU."""

    def hangs(model, params, decode):
        time.sleep(600)

    monkeypatch.setattr(ray_backend, "solve_task", hangs)
    original, cand = _problems(2, seeds=(1,))[-1]
    t = time.perf_counter()
    got = _separate(original, cand, 2, Budget.seconds(1.0), backend="ray")
    took = time.perf_counter() - t
    assert [r.status for r in got] == ["UNKNOWN"] * len(got)
    # far below the 600 s the task hangs; generous over the 1 s deadline + grace, which
    # a loaded machine can stretch by seconds (setting up the oracle, scheduling)
    assert took < 1.0 + ray_backend.RESULT_GRACE_SECONDS + 60.0, took
    end = time.perf_counter() + 120
    while ray.available_resources().get("CPU", 0) < 2 and time.perf_counter() < end:
        time.sleep(0.1)
    assert ray.available_resources().get("CPU", 0) == 2


def _without_timings(obj):
    """A certificate with its timings (the measured latency and its setup included),
    creation time and output paths left out."""
    if isinstance(obj, dict):
        return {
            k: _without_timings(v)
            for k, v in obj.items()
            if "seconds" not in k
            and not k.startswith("latency")
            and k not in ("created", "time", "path")
        }
    if isinstance(obj, list):
        return [_without_timings(v) for v in obj]
    return obj


@pytest.mark.slow  # compress and verify on a local Ray cluster
def test_compress_and_verify_on_ray_give_the_local_verdicts(local_ray, zoo_model, tmp_path):
    """``compress --backend ray`` writes the local run's certificate (one thread: the
    deterministic schedule; timings aside) and ``verify --backend ray`` re-proves it
    with the local verdict for every pair (two threads: the race)."""
    runner = CliRunner()
    model, data = zoo_model(*SEEDS)
    certs = {}
    for backend in ("local", "ray"):
        out = tmp_path / backend
        args = ["compress", str(model), "--data", str(data), "--out", str(out)]
        flags = ["--mode", "prune", "--eta", "0.1", "--threads", "1", "--backend", backend]
        res = runner.invoke(app, [*args, *flags, "--quiet"])
        assert res.exit_code == 0, (res.stdout, res.stderr)
        certs[backend] = json.loads((out / "certificate.json").read_text())
    assert _without_timings(certs["ray"]) == _without_timings(certs["local"])
    out = tmp_path / "ray"
    files = [str(model), str(out / "compressed.onnx"), str(out / "certificate.json")]
    verdicts = {}
    for backend in ("local", "ray"):
        res = runner.invoke(app, ["verify", *files, "--json", "--backend", backend])
        assert res.exit_code == 0, (res.stdout, res.stderr)
        rep = json.loads(res.stdout)
        verdicts[backend] = (rep["status"], [(p["y0"], p["y"], p["status"]) for p in rep["pairs"]])
    assert verdicts["ray"] == verdicts["local"]
    assert verdicts["ray"][0] == "verified" and len(verdicts["ray"][1]) == 6


@pytest.mark.parametrize(
    ("flags", "needles"),
    [
        (("--backend", "spark"), ("--backend", "local, ray", "spark")),
        (("--ray-address", "10.0.0.1:6379"), ("--ray-address", "--backend ray")),
        (("--backend", "ray", "--ray-address", "a b"), ("--ray-address", "host:port")),
    ],
)
def test_backend_flags_are_checked(flags, needles, zoo_model, tmp_path):
    """Bad backend flags are bad input (exit 3, one line naming the flag), before any
    Ray is started, for compress and for verify."""
    runner = CliRunner()
    model, data = zoo_model(*SEEDS)
    out = tmp_path / "out"
    cmds = [
        ["compress", str(model), "--data", str(data), "--out", str(out), *flags],
        ["verify", str(model), str(model), str(Path(tmp_path) / "none.json"), *flags],
    ]
    for cmd in cmds:
        res = runner.invoke(app, cmd)
        assert res.exit_code == 3, (cmd, res.stdout, res.stderr)
        err = res.stderr.strip()
        assert len(err.splitlines()) == 1 and err.startswith("error: "), err
        for needle in needles:
            assert needle in err, (needle, err)
    assert not out.exists()


@pytest.mark.slow  # the benchmark harness on Ray, not the product
def test_the_harness_runs_configurations_as_ray_tasks(local_ray, tmp_path):
    """``python -m benchmarks.harness ... --backend ray``: the configuration runs as a
    task and its row is the local run's (status and size)."""
    from benchmarks.harness.__main__ import main
    from benchmarks.harness.records import read_results

    only = ["quick", "--only", "^ada-seeds-n50-d1-prune-eta0-delta0-s0$", "--threads", "1"]
    rows = {}
    for backend in ("local", "ray"):
        out = tmp_path / backend
        assert main([*only, "--out", str(out), "--backend", backend]) == 0
        rows[backend] = read_results(out / "quick.csv")
    ((key, ray_row),) = rows["ray"].items()
    local_row = rows["local"][key]
    assert (ray_row.status, ray_row.S) == (local_row.status, local_row.S) == ("certified", 5)


def _pigeonhole(n: int) -> cp_model.CpModel:
    """n + 1 pigeons in n holes: infeasible, and slow for one CP-SAT worker."""
    m = cp_model.CpModel()
    x = [[m.new_bool_var(f"p{i}h{j}") for j in range(n)] for i in range(n + 1)]
    for row in x:
        m.add_exactly_one(row)
    for j in range(n):
        m.add_at_most_one(row[j] for row in x)
    return m


def test_a_cancelled_task_stops_its_search_under_repeated_cancels():
    """``ray.cancel`` raises KeyboardInterrupt in the task's thread; the race may cancel
    again while the task stops. The task must end only once CP-SAT has stopped: a search
    left running in an idle worker takes a CPU from the next tasks (measured: a verify
    on Ray after a race ran 6x slower). Injected here as Ray does it, into the thread
    running :func:`solve_task`, five times 20 ms apart."""
    import ctypes
    import threading

    params = "num_workers: 1 cp_model_presolve: false max_time_in_seconds: 60"
    model = ray_backend.encode_model(_pigeonhole(13).proto)
    before = threading.active_count()
    outcome: list = []

    def run():
        try:
            outcome.append(ray_backend.solve_task(model, params, np.zeros(0, np.int64)))
        except KeyboardInterrupt:
            outcome.append("cancelled")

    th = threading.Thread(target=run)
    th.start()
    time.sleep(0.5)  # searching
    for _ in range(5):
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(th.ident), ctypes.py_object(KeyboardInterrupt)
        )
        time.sleep(0.02)
    th.join(30)  # the search, not stopped, would run 60 s
    assert not th.is_alive() and outcome == ["cancelled"], outcome
    end = time.perf_counter() + 20  # the helper thread's last steps, on a loaded machine
    while threading.active_count() > before and time.perf_counter() < end:
        time.sleep(0.05)
    assert threading.active_count() == before  # no CP-SAT thread left searching
