"""Problem R, the L1 master on HiGHS: min sum w over the margin rows, with duals.

Warm-started across separation rounds (the matrix only grows); the duals price new
learners (``pace_cert/learners/pricing.py``).
"""

from __future__ import annotations

import hashlib

import highspy
import numpy as np

from pace_cert.master.highs import INF, OutOfTime, load_highs, new_highs, run_highs
from pace_cert.master.rows import MasterSolution, meets_rows
from pace_cert.plumbing.budget import Budget


def solve_l1(
    A: np.ndarray,
    n_learners: int,
    *,
    budget: Budget | None = None,
    threads: int = 1,
    seed: int = 0,
) -> MasterSolution:
    """Problem R: min sum w  s.t.  A [w; beta] >= 1,  w >= 0, beta free (a cold solve
    within ``budget``; :class:`~pace_cert.master.highs.OutOfTime` when it runs out)."""
    return L1Master(threads=threads, seed=seed).solve(A, n_learners, budget)


class L1Master:
    """Problem R kept in one HiGHS instance across rounds (simplex warm start).

    The driver's constraint matrix only grows: new samples append rows, new learners
    insert w-columns before the beta columns. ``solve(A, T)`` checks that ``A`` extends
    the matrix solved last (same old block, value for value: a digest of it is kept,
    not a copy), appends the new columns and rows to the HiGHS model and re-solves from
    the previous basis; anything else (e.g. learners removed) rebuilds the model. The
    answer is the same LP's optimum either way.
    """

    def __init__(self, *, threads: int = 1, seed: int = 0) -> None:
        self.threads, self.seed = threads, seed
        self.h: highspy.Highs | None = None
        self.shape: tuple[int, int] = (0, 0)  # of the matrix solved last
        self.digest = b""  # of its w-block and beta-block (:func:`_blocks_digest`)
        self.T = 0
        self.cols = np.zeros(0, np.int64)  # column j of A -> HiGHS column
        self.rebuilds = 0
        self.iterations = 0  # simplex iterations of the last solve

    def _extends(self, A: np.ndarray, T: int) -> bool:
        r0, c0 = self.shape
        T0 = self.T
        return (
            self.h is not None
            and A.shape[1] - T == c0 - T0
            and T >= T0
            and A.shape[0] >= r0
            and _blocks_digest(A[:r0, :T0], A[:r0, T:]) == self.digest
        )

    def _build(self, A: np.ndarray, T: int) -> None:
        self.h = new_highs(self.threads, self.seed)
        n_cols = A.shape[1]
        cost = np.r_[np.ones(T), np.zeros(n_cols - T)]
        lower = np.r_[np.zeros(T), np.full(n_cols - T, -INF)]
        load_highs(self.h, A, cost, lower, np.full(n_cols, INF))
        self.cols = np.arange(n_cols)
        self.rebuilds += 1

    def _extend(self, A: np.ndarray, T: int) -> None:
        h = self.h
        r0 = self.shape[0]
        T0 = self.T
        new = A[:r0, T0:T]
        if T > T0:
            nz_c, nz_r = np.nonzero(new.T)  # column-major entries of the new columns
            n_new = T - T0
            h.addCols(
                n_new,
                np.ones(n_new),
                np.zeros(n_new),
                np.full(n_new, INF),
                len(nz_r),
                np.searchsorted(nz_c, np.arange(n_new)).astype(np.int32),
                nz_r.astype(np.int32),
                new.T[nz_c, nz_r].astype(float),
            )
            first = int(h.getNumCol()) - n_new
            self.cols = np.r_[self.cols[:T0], first + np.arange(n_new), self.cols[T0:]]
        rows = A[r0:]
        if len(rows):
            nz_r, nz_c = np.nonzero(rows)
            h.addRows(
                len(rows),
                np.ones(len(rows)),
                np.full(len(rows), INF),
                len(nz_c),
                np.searchsorted(nz_r, np.arange(len(rows))).astype(np.int32),
                self.cols[nz_c].astype(np.int32),
                rows[nz_r, nz_c].astype(float),
            )

    #: :meth:`release` frees the HiGHS model when its matrix has more entries than this
    #: (HiGHS holds ~130 bytes a nonzero: 2**20 dense entries are ~130 MB)
    RELEASE_ENTRIES = 1 << 20

    def release(self, force: bool = False) -> None:
        """Free the HiGHS model if its matrix is large (``RELEASE_ENTRIES``; any size
        with ``force``): the next :meth:`solve` builds it again and solves from no
        basis (the same LP; only its time differs). A loop that is over and will not
        extend this master soon calls it, so a later phase's LPs do not sit beside it
        (decision record 0021, memory)."""
        if force or self.shape[0] * self.shape[1] > self.RELEASE_ENTRIES:
            self.h = None
            self.shape, self.digest, self.T = (0, 0), b"", 0
            self.cols = np.zeros(0, np.int64)

    def solve(self, A: np.ndarray, n_learners: int, budget: Budget | None = None) -> MasterSolution:
        """Problem R on ``A`` (layout of :func:`margin_rows`), warm-started when possible,
        within ``budget`` (:class:`~pace_cert.master.highs.OutOfTime` when it runs out;
        the model stays, and the next call goes on from its basis)."""
        if self._extends(A, n_learners):
            self._extend(A, n_learners)
        else:
            self._build(A, n_learners)
        self.shape, self.T = A.shape, n_learners
        self.digest = _blocks_digest(A[:, :n_learners], A[:, n_learners:])
        h = self.h
        st = run_highs(h, budget)
        if st == highspy.HighsModelStatus.kTimeLimit:
            raise OutOfTime("L1 master: the time limit stopped HiGHS")
        if st != highspy.HighsModelStatus.kOptimal:
            self.h = None  # do not extend a model in an unknown state
            raise RuntimeError(f"L1 master not optimal: {h.modelStatusToString(st)}")
        self.iterations = int(h.getInfo().simplex_iteration_count)
        sol = h.getSolution()
        x = np.asarray(sol.col_value)[self.cols]
        return MasterSolution(
            weights=np.maximum(x[:n_learners], 0.0),
            offsets=np.r_[0.0, x[n_learners:]],
            objective=float(h.getInfo().objective_function_value),
            duals=np.maximum(np.asarray(sol.row_dual), 0.0),
            optimal=True,
            status="optimal",
        )


def _blocks_digest(w_block: np.ndarray, beta_block: np.ndarray) -> bytes:
    """A digest of two float64 blocks that is equal for blocks equal value for value
    (-0.0 counted as 0.0, as ``np.array_equal`` does; the rows hold no NaN): what
    :class:`L1Master` keeps of the matrix it solved instead of a copy of it."""
    h = hashlib.blake2b(digest_size=32)
    for block in (w_block, beta_block):
        h.update(repr(block.shape).encode())
        h.update(np.ascontiguousarray(block + 0.0, np.float64).tobytes())
    return h.digest()


def solve_on_support(
    A: np.ndarray,
    n_learners: int,
    support: np.ndarray,
    *,
    budget: Budget | None = None,
    seed: int = 0,
) -> MasterSolution | None:
    """L1 weights restricted to ``support`` (other weights fixed to 0), or None when the
    rows cannot be met on that support (:class:`~pace_cert.master.highs.OutOfTime` when
    ``budget`` ran out first). If an optimal L0 support stays feasible after rows are
    added, it is still optimal: adding rows never lowers the L0 optimum."""
    cols = np.r_[np.asarray(support, np.int64), np.arange(n_learners, A.shape[1])]
    try:
        sub = solve_l1(A[:, cols], len(support), budget=budget, seed=seed)
    except OutOfTime:
        raise
    except RuntimeError:
        return None
    w = np.zeros(n_learners)
    w[np.asarray(support, np.int64)] = sub.weights
    return MasterSolution(w, sub.offsets, float(np.sum(w > 0)), None, True, "support re-solve")


#: L1 cost of a weight on the support being completed, against 1 off it
SUPPORT_COST = 1e-3


def complete_support(
    A: np.ndarray,
    n_learners: int,
    sol: MasterSolution,
    *,
    budget: Budget | None = None,
    seed: int = 0,
) -> MasterSolution | None:
    """Weights meeting every row of ``A`` that favour ``sol``'s support: one L1 solve
    where the support's weights cost ``SUPPORT_COST`` and the others 1 (a column scaling
    of problem R), so learners off the support carry at most ``SUPPORT_COST`` times the
    support's own L1 value when the support alone meets the rows (support learners the
    rows do not need may drop out). For an L0 MILP whose answer fails its rows. None
    when problem R itself is infeasible or the result fails the rows; never optimal (an
    upper bound on the L0 optimum).
    :class:`~pace_cert.master.highs.OutOfTime` when ``budget`` runs out first."""
    cost = np.ones(n_learners)
    cost[np.flatnonzero(sol.weights[:n_learners] > 0)] = SUPPORT_COST
    scaled = np.hstack([A[:, :n_learners] / cost, A[:, n_learners:]])
    try:
        sub = solve_l1(scaled, n_learners, budget=budget, seed=seed)
    except OutOfTime:
        raise
    except RuntimeError:
        return None
    w = np.maximum(sub.weights / cost, 0.0)
    out = MasterSolution(w, sub.offsets, float(np.sum(w > 0)), None, False, "completed support")
    return out if meets_rows(A, out) else None
