"""Pair solves as Ray tasks (``--backend ray``): only the CP-SAT solve moves.

The oracle (:class:`~pace_cert.oracle.cpsat.SeparationOracle`) builds each pair's model,
runs the schedule, checks every found point exactly against the region and adds the
nogoods, as with the local backend. Where the local backend calls
``cp_model.CpSolver().solve(model)`` in one of its threads, this backend's
:class:`RaySolver` (the same subset of ``CpSolver``'s interface) sends plain data to a
Ray task, :func:`solve_task`:

* in: the model proto in protobuf text format, zlib-compressed (OR-Tools' Python proto
  has no binary serialiser; text round-trips exactly), the CP-SAT parameters in text
  format (seed, workers, LP level and the time limit ``max_time_in_seconds`` included),
  and the proto indices of the variables the oracle decodes a point from (the order
  literals and every leaf boolean);
* out: a dict of the CP-SAT status name, those variables' values (FEASIBLE / OPTIMAL
  only), conflicts, branches and CP-SAT's wall seconds.

A proof is what CP-SAT returned on the worker: INFEASIBLE there is INFEASIBLE here.
Everything else is UNKNOWN, never a proof: a task whose worker died or raised is retried
by Ray (``OracleSettings.ray_retries``) and then UNKNOWN, and so is one with no answer
``RESULT_GRACE_SECONDS`` after its time limit (the waiting side cancels it with
``force=True``, which ends the worker process: a plain cancel cannot interrupt code
blocked outside Python, measured with Ray 2.60). A race that decides a pair cancels the
other attempts' tasks (a plain ``ray.cancel``: the worker's poll loop stops the search
and the process stays).

Workers need OR-Tools (the driver's version) and numpy, not pace-cert: the task is
sent by value. Imported only when the backend is ``ray``.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
import zlib

import numpy as np
import ray
from ortools.sat.python import cp_model, cp_model_helper

#: the waiting side gives a task this long after its CP-SAT time limit to answer
RESULT_GRACE_SECONDS = 1.0
#: how often a waiting solve looks at its task, a stop request and the clock
POLL_SECONDS = 0.05
_STATUS = {
    s.name: s
    for s in (
        cp_model.UNKNOWN,
        cp_model.MODEL_INVALID,
        cp_model.FEASIBLE,
        cp_model.INFEASIBLE,
        cp_model.OPTIMAL,
    )
}
_connect_lock = threading.Lock()


def encode_model(proto) -> bytes:
    """A CP-SAT model proto as bytes for a task: text format, zlib-compressed."""
    return zlib.compress(str(proto).encode(), 1)


def solve_task(model: bytes, params: str, decode: np.ndarray) -> dict:
    """The worker side: parse, solve, return plain data (see the module docstring).

    CP-SAT runs in a helper thread while this one waits, so that ``ray.cancel`` (a
    KeyboardInterrupt in this thread) stops the search; the task then ends cancelled,
    and only once the search has stopped: further cancels while it stops are absorbed
    (a cancel that ended the task early left CP-SAT searching in an idle worker)."""
    m = cp_model.CpModel()
    solver = cp_model.CpSolver()
    if not m.proto.parse_text_format(zlib.decompress(model).decode()):
        return {"status": "MODEL_INVALID", "error": "the model did not parse"}
    if not solver.parameters.parse_text_format(params):
        return {"status": "MODEL_INVALID", "error": "the parameters did not parse"}
    out: dict = {}
    # the truth is the plain flag ``done``: Thread.join interrupted by a cancel can leave
    # the thread looking finished while CP-SAT still searches (measured); the event only
    # wakes the wait early
    done: list[bool] = []
    woke = threading.Event()

    def solve() -> None:
        try:
            out["status"] = solver.solve(m)
        finally:
            done.append(True)
            woke.set()

    threading.Thread(target=solve, daemon=True).start()
    try:
        while not done:
            woke.wait(POLL_SECONDS)
    except KeyboardInterrupt:  # ray.cancel: stop the search, then end as cancelled
        _stop(done, solver)
        raise
    status = out.get("status", cp_model.UNKNOWN)  # a solve that raised answers nothing
    values = None
    if status in (cp_model.FEASIBLE, cp_model.OPTIMAL):
        solution = np.asarray(solver.response_proto.solution, np.int64)
        values = solution[np.asarray(decode, np.int64)].astype(np.int8)
    return {
        "status": status.name,
        "values": values,
        "conflicts": int(solver.num_conflicts),
        "branches": int(solver.num_branches),
        "seconds": float(solver.wall_time),
    }


def _stop(done: list[bool], solver: cp_model.CpSolver) -> None:
    """Ask the search to stop until its thread says it has ended (a stop before CP-SAT
    starts searching is lost, so it is repeated), whatever KeyboardInterrupts arrive."""
    while True:
        try:
            while not done:
                solver.stop_search()
                time.sleep(POLL_SECONDS)
            return
        except KeyboardInterrupt:
            pass


def connect(address: str | None, num_cpus: int) -> None:
    """Join Ray once per process: the cluster at ``address``, else at ``RAY_ADDRESS``,
    else a new local instance with ``num_cpus`` CPUs (:class:`RayPool`: ``--threads``
    + 1). A process already connected (a test, the benchmark harness) keeps its
    connection."""
    with _connect_lock:
        if ray.is_initialized():
            return
        quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
        address = address or os.environ.get("RAY_ADDRESS") or None
        if address:
            ray.init(address=address, **quiet)
        else:
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **quiet)


class RayPool:
    """The oracle's handle on Ray: connects, sends :func:`solve_task` (by value) and
    knows the largest node's CPUs (a task runs on one node: a solve's CP-SAT workers,
    and the CPUs its task asks for, are capped there)."""

    def __init__(self, address: str | None, threads: int, retries: int) -> None:
        # a local instance gets threads + 1 CPUs: the race schedule keeps up to
        # threads + 1 solves in flight (an escalated twin of a pair stuck in a heavy
        # tail), and a twin queued behind the stuck solves would never overtake them
        connect(address, threads + 1)
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers: no pace-cert
        self._remote = ray.remote(solve_task)
        self.retries = retries
        cpus = [n["Resources"].get("CPU", 0) for n in ray.nodes() if n.get("Alive")]
        self.node_cpus = int(max(cpus, default=0)) or None  # None: no CPU node yet

    def submit(self, model: bytes, params: str, decode: np.ndarray, cpus: int):
        opts = {"num_cpus": cpus, "max_retries": self.retries, "retry_exceptions": True}
        return self._remote.options(**opts).remote(model, params, decode)

    def solver(self, decode: np.ndarray) -> RaySolver:
        return RaySolver(self, decode)


class RaySolver:
    """A CP-SAT solver whose :meth:`solve` runs as a Ray task: the part of
    ``cp_model.CpSolver`` the oracle uses (``parameters``, ``solve``,
    ``boolean_value``, ``num_conflicts``, ``num_branches``, ``wall_time``,
    ``stop_search``). ``decode``: proto indices of the variables ``boolean_value`` is
    asked about. After :meth:`stop_search` (a race decided the pair) every solve is
    UNKNOWN."""

    def __init__(self, pool: RayPool, decode: np.ndarray) -> None:
        self.parameters = cp_model.CpSolver().parameters
        self._pool = pool
        self._decode = np.asarray(decode, np.int64)
        self._lock = threading.Lock()
        self._ref = None
        self._stopped = False
        self._values: np.ndarray | None = None
        self.num_conflicts = 0
        self.num_branches = 0
        self.wall_time = 0.0
        self.error = ""  # why the last solve gave no answer (a lost task, the deadline)

    def stop_search(self) -> None:
        """Stop: the waiting solve returns UNKNOWN and its task is cancelled, once (the
        race repeats stops until its losers have returned)."""
        with self._lock:
            self._stopped = True
            ref, self._ref = self._ref, None
        if ref is not None:
            ray.cancel(ref)

    def solve(self, model: cp_model.CpModel) -> cp_model_helper.CpSolverStatus:
        self._values, self.error = None, ""
        self.num_conflicts = self.num_branches = 0
        self.wall_time = 0.0
        p = self.parameters
        if self._pool.node_cpus is not None and p.num_workers > self._pool.node_cpus:
            p.num_workers = self._pool.node_cpus
        limit = p.max_time_in_seconds
        end = time.perf_counter() + limit + RESULT_GRACE_SECONDS if math.isfinite(limit) else None
        payload, params = encode_model(model.proto), str(p)
        with self._lock:
            if self._stopped:
                return cp_model.UNKNOWN
            ref = self._ref = self._pool.submit(
                payload, params, self._decode, max(1, p.num_workers)
            )
        try:
            while not ray.wait([ref], timeout=POLL_SECONDS)[0]:
                if self._stopped:
                    self.error = "stopped"
                    return cp_model.UNKNOWN
                if end is not None and time.perf_counter() >= end:
                    ray.cancel(ref, force=True)  # hung past its limit: end the worker
                    self.error = "no answer by the time limit"
                    return cp_model.UNKNOWN
            out = ray.get(ref)
        except ray.exceptions.RayError as e:  # the task died or raised, retries spent
            self.error = f"task lost or failed: {type(e).__name__}"
            return cp_model.UNKNOWN
        finally:
            with self._lock:
                self._ref = None
        status = _STATUS.get(out.get("status"), cp_model.UNKNOWN)
        self.error = out.get("error", "")
        self.num_conflicts = int(out.get("conflicts", 0))
        self.num_branches = int(out.get("branches", 0))
        self.wall_time = float(out.get("seconds", 0.0))
        if status in (cp_model.FEASIBLE, cp_model.OPTIMAL):
            full = np.full(len(model.proto.variables), -1, np.int8)
            full[self._decode] = out["values"]
            self._values = full
        return status

    def boolean_value(self, lit) -> bool:
        """The value of ``lit`` (a decoded variable or its negation) in the last
        solution."""
        if self._values is None:
            raise AssertionError("no solution to read")
        i = int(lit.index)
        v = int(self._values[i if i >= 0 else -i - 1])
        if v < 0:
            raise AssertionError(f"variable {i} was not decoded")
        return bool(v) if i >= 0 else not v
