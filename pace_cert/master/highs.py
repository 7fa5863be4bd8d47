"""HiGHS behind a narrow interface: a quiet, seeded instance, dense-to-sparse loading,
and :func:`run_highs`, the one way to solve: with the time its budget has left."""

from __future__ import annotations

import contextlib
import os

import highspy
import numpy as np

from pace_cert.plumbing.budget import Budget
from pace_cert.plumbing.guard import STDOUT_LOCK
from pace_cert.plumbing.memory import give_back

INF = highspy.kHighsInf


class OutOfTime(RuntimeError):
    """A solve that needed an optimum stopped at its time limit (the budget ran out)."""


@contextlib.contextmanager
def _quiet_stdout():
    """HiGHS prints a banner on construction; keep stdout clean for --json. Serialised:
    two threads swapping fd 1 at once could leave it pointing at /dev/null, and the
    process guard's last words must not print while it does (fd 1 is process-wide)."""
    with STDOUT_LOCK:
        fd = os.dup(1)
        try:
            with open(os.devnull, "w") as devnull:
                os.dup2(devnull.fileno(), 1)
                yield
        finally:
            os.dup2(fd, 1)
            os.close(fd)


def new_highs(threads: int = 1, seed: int = 0, time_limit: float | None = None) -> highspy.Highs:
    with _quiet_stdout():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", int(seed))
    h.setOptionValue("threads", int(max(1, threads)))
    if time_limit is not None:
        h.setOptionValue("time_limit", float(max(time_limit, 0.01)))
    return h


#: nonzeros of M handed to HiGHS per ``addRows`` call (:func:`load_highs`)
LOAD_BLOCK_NONZEROS = 1 << 18


def load_highs(h, M, cost, lower, upper, row_lo=None, row_hi=None) -> None:
    """Append columns (cost, bounds) and then the rows of dense M (row bounds; default
    [1, inf)) to HiGHS model h, M stored sparse. The rows go in blocks of about
    :data:`LOAD_BLOCK_NONZEROS` nonzeros, in order (the same model as one call): the
    sparse copy of a large dense M (index arrays of 16 bytes per nonzero) never exists
    whole."""
    n_rows, n_cols = M.shape
    h.addCols(
        n_cols,
        np.asarray(cost, float),
        np.asarray(lower, float),
        np.asarray(upper, float),
        0,
        np.zeros(n_cols, np.int32),
        np.zeros(0, np.int32),
        np.zeros(0),
    )
    if n_rows == 0:
        return
    lo = np.ones(n_rows) if row_lo is None else np.asarray(row_lo, float)
    hi = np.full(n_rows, INF) if row_hi is None else np.asarray(row_hi, float)
    step = max(1, LOAD_BLOCK_NONZEROS // max(n_cols, 1))
    for a in range(0, n_rows, step):
        block = M[a : a + step]
        nz_r, nz_c = np.nonzero(block)
        starts = np.searchsorted(nz_r, np.arange(len(block))).astype(np.int32)
        h.addRows(
            len(block),
            lo[a : a + step],
            hi[a : a + step],
            len(nz_c),
            starts,
            nz_c.astype(np.int32),
            block[nz_r, nz_c].astype(float),
        )


def run_highs(h: highspy.Highs, budget: Budget | None) -> highspy.HighsModelStatus:
    """Solve ``h`` within the time ``budget`` has left (None or unlimited: no limit);
    returns the model status (``kTimeLimit`` when the budget stopped it).

    HiGHS compares ``time_limit`` with the instance's run time summed over every
    ``run()`` (a warm-started model is solved many times), so the option is set to the
    run time so far plus the time left."""
    limit = None if budget is None else budget.solver_limit()
    h.setOptionValue("time_limit", INF if limit is None else h.getRunTime() + limit)
    h.run()
    give_back()  # what the solve freed (presolve's copies), and earlier solves' instances
    return h.getModelStatus()


def solve_optimal(h: highspy.Highs, budget: Budget | None, what: str) -> None:
    """:func:`run_highs`, for a model whose optimum the caller needs: raises
    :class:`OutOfTime` at the time limit, RuntimeError for any other non-optimal end."""
    st = run_highs(h, budget)
    if st == highspy.HighsModelStatus.kTimeLimit:
        raise OutOfTime(f"{what}: the time limit stopped HiGHS")
    if st != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"{what} not optimal: {h.modelStatusToString(st)}")
