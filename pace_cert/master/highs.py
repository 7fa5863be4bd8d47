"""HiGHS behind a narrow interface: a quiet, seeded instance and dense-to-sparse loading."""

from __future__ import annotations

import contextlib
import os
import threading

import highspy
import numpy as np

INF = highspy.kHighsInf


_STDOUT_LOCK = threading.Lock()  # fd 1 is process-wide: one redirection at a time


@contextlib.contextmanager
def _quiet_stdout():
    """HiGHS prints a banner on construction; keep stdout clean for --json. Serialised:
    two threads swapping fd 1 at once could leave it pointing at /dev/null."""
    with _STDOUT_LOCK:
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


def load_highs(h, M, cost, lower, upper, row_lo=None, row_hi=None) -> None:
    """Append columns (cost, bounds) and then the rows of dense M (row bounds; default
    [1, inf)) to HiGHS model h, M stored sparse."""
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
    nz_r, nz_c = np.nonzero(M)
    starts = np.searchsorted(nz_r, np.arange(n_rows)).astype(np.int32)
    h.addRows(
        n_rows,
        np.ones(n_rows) if row_lo is None else np.asarray(row_lo, float),
        np.full(n_rows, INF) if row_hi is None else np.asarray(row_hi, float),
        len(nz_c),
        starts,
        nz_c.astype(np.int32),
        M[nz_r, nz_c].astype(float),
    )
