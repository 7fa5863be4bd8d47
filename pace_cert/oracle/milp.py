"""Objective-based separation oracle on a HiGHS MILP (FIPE style), for benchmarking only.

The paper's Result 1 compares the product's *constraint-based* CP-SAT separation
(:class:`~pace_cert.oracle.cpsat.SeparationOracle`) with FIPE (Emine et al. 2025), which
maximised the disagreement ``S'_y - S'_y0`` of the compressed model with a MILP.
:class:`MilpSeparationOracle` is that baseline on HiGHS. Per ordered pair (y0, y) one
MILP is built from numpy arrays:

    u[f, r] in {0, 1}   = [rank of x_f among the allowed cells >= r],   r = 1..m_f-1,
                          u[f, r+1] <= u[f, r]
    z[t, leaf] in [0,1] one per reachable leaf of every used tree (original,
                          plausibility, compressed; identical trees share columns),
                          sum_leaf z[t, .] = 1, linked to the split literals (u for
                          x_f > theta_j, 1 - u for x_f <= theta_j):
                          linking="node" (default): per side of each split,
                            sum of z over the leaves below it <= literal;
                          linking="leaf": z[t, leaf] <= literal per path condition
    region:      sum_t (T_t[leaf, y0] - T_t[leaf, k]) z + b_y0 - b_k >= c_o - tol
                          for every k != y0;  A(x) >= delta_abs - tol if plausibility
    maximise     sum_t (T'_t[leaf, y] - T'_t[leaf, y0]) z + b'_y - b'_y0

With binary u exactly one leaf per tree is consistent with the cells, so z is integral
(either linking; the node rows imply the leaf rows and are fewer, a tighter LP).
The pair is separable iff the maximum reaches ``-E_req``. The region rows are relaxed by
a small tolerance (a superset, like the base class's integer scaling): every point
HiGHS returns is re-checked exactly (rational region and compressed margin, on the
leaves ``tree.apply`` gives at the cell representative) and a non-genuine one is
excluded by a no-good on its leaf combination (scores depend on the leaves only), then
the MILP is re-solved, at most ``OracleSettings.max_spurious`` times.

Statuses, as in :class:`~pace_cert.oracle_objective.ObjectiveSeparationOracle`:
``INFEASIBLE`` when HiGHS reports the MILP infeasible or optimal with its dual bound
below the threshold; ``FEASIBLE`` with a genuine point; ``UNKNOWN`` on the time limit
(or after ``OracleSettings.max_spurious`` non-genuine points).

Nothing is certified with this class: HiGHS works in floating point with feasibility
tolerances, so its INFEASIBLE is not a proof. The product proves a pair only on CP-SAT
status INFEASIBLE of the constraint model.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from fractions import Fraction

import highspy
import numpy as np

from pace_cert.master.highs import INF, new_highs, run_highs
from pace_cert.oracle.cpsat import SeparationOracle, reachable_paths
from pace_cert.oracle.score_model import PairResult, RegionSpec, ScoreModel
from pace_cert.oracle.screen import Screen
from pace_cert.oracle.settings import OracleSettings
from pace_cert.plumbing.budget import Budget
from pace_cert.region.domain import FeatureDomain

REL_TOL = 1e-9  # region relaxation and objective tolerance, relative to the row's scale
FEAS_TOL = 1e-9  # HiGHS primal and integrality feasibility tolerances (defaults 1e-7/1e-6)
LINKINGS = ("node", "leaf")


@dataclass(frozen=True)
class _Links:
    """Linking rows ``sum_{leaf in row} z[leaf] <= literal`` of one slot.

    Membership is in coordinate form (``row[i]`` contains leaf position ``leaf[i]``);
    ``ucol``/``left`` are per row."""

    row: np.ndarray  # int64, link row of each membership entry
    leaf: np.ndarray  # int64, position of the leaf in the slot's sorted ``leaves``
    ucol: np.ndarray  # int64 per row, u column of the literal (x_f > theta_j)
    left: np.ndarray  # bool per row, the condition is x_f <= theta_j (literal 1 - u)


@dataclass
class _Rows:
    """Rows in coordinate form: ``lo[i] <= sum_j val * x[col] <= hi[i]`` for row[j] = i."""

    row: list[np.ndarray]
    col: list[np.ndarray]
    val: list[np.ndarray]
    lo: list[float]
    hi: list[float]

    @classmethod
    def empty(cls) -> _Rows:
        return cls([], [], [], [], [])

    def add(self, cols: np.ndarray, vals: np.ndarray, lo: float, hi: float) -> None:
        """Append one row."""
        self.row.append(np.full(len(cols), len(self.lo), np.int64))
        self.col.append(np.asarray(cols, np.int64))
        self.val.append(np.asarray(vals, np.float64))
        self.lo.append(lo)
        self.hi.append(hi)

    def add_block(
        self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, lo: np.ndarray, hi: np.ndarray
    ) -> None:
        """Append ``len(lo)`` rows; ``rows`` are 0-based within the block."""
        self.row.append(np.asarray(rows, np.int64) + len(self.lo))
        self.col.append(np.asarray(cols, np.int64))
        self.val.append(np.asarray(vals, np.float64))
        self.lo.extend(float(v) for v in lo)
        self.hi.extend(float(v) for v in hi)


@dataclass
class _Layout:
    """Column layout of one pair's MILP: u columns first, then z blocks per slot."""

    n_u: int
    z_start: dict[int, int]  # slot -> first z column
    n_cols: int


@dataclass
class _Outcome:
    """Per-pair solve bookkeeping."""

    status: str = "UNKNOWN"
    point: np.ndarray | None = None
    nodes: int = 0
    spurious: int = 0


class MilpSeparationOracle(SeparationOracle):
    """Separation by maximising ``S'_y - S'_y0`` with a HiGHS MILP (FIPE baseline).

    Benchmark-only (paper Result 1): it never certifies anything; see the module
    docstring for the formulation and the status contract. Domain, slots (identical
    trees share leaf columns), representatives and the exact region check are the base
    class's; only :meth:`_solve_pair` differs. ``PairResult.branches`` holds HiGHS's
    branch-and-bound node count; ``scale_exp`` and the rounding bounds stay 0 (no
    integer scaling here).
    """

    def __init__(
        self,
        domain: FeatureDomain,
        original: ScoreModel,
        region: RegionSpec,
        *,
        seed: int = 0,
        linking: str = "node",
        settings: OracleSettings | None = None,
        hints: Screen | None = None,
    ) -> None:
        if linking not in LINKINGS:
            raise ValueError(f"linking must be one of {LINKINGS}, not {linking!r}")
        # one HiGHS solve per pair: no seed races
        settings = replace(settings or OracleSettings(), schedule="parallel", backend="local")
        super().__init__(domain, original, region, seed=seed, settings=settings, hints=hints)
        self.linking = linking
        sizes = np.array([max(len(c) - 1, 0) for c in self._allowed_cells], np.int64)
        self._u_start = np.r_[0, np.cumsum(sizes)].astype(np.int64)  # u[f, r] -> start[f]+r-1
        self._links_cache: dict[int, _Links] = {}
        self._lock = threading.Lock()  # the per-slot link cache
        # new_highs silences HiGHS's banner by redirecting file descriptor 1 around the
        # constructor; concurrent redirections from the pair threads would race and can
        # leave stdout pointing at /dev/null, so constructions are serialised.

    # ---------------------------------------------------------------- model building
    def _links(self, slot: int) -> _Links:
        """The linking rows of a slot's reachable leaves (cached per slot).

        ``leaf`` linking: one row ``z[leaf] <= literal`` per path condition of a leaf.
        ``node`` linking: one row per side of each (simplified) split, summing z over the
        leaves below that side; a path prefix identifies the node, so leaves sharing a
        prefix share the row. Both have the same integer solutions; the node rows imply
        the leaf rows (tighter LP relaxation, fewer rows)."""
        with self._lock:
            cached = self._links_cache.get(slot)
        if cached is not None:
            return cached
        s = self._slots[slot]
        paths = reachable_paths(s.tree, self.domain)
        ids: dict[tuple, int] = {}
        row, leaf, ucol, left = [], [], [], []
        for pos, lf in enumerate(s.leaves):
            conds = paths[int(lf)]
            for i, (f, j, goes_left) in enumerate(conds):
                key = (pos, i) if self.linking == "leaf" else tuple(conds[: i + 1])
                if key not in ids:
                    ids[key] = len(ids)
                    ucol.append(int(self._u_start[f]) + int(self._rank[f][j]) - 1)
                    left.append(goes_left)
                row.append(ids[key])
                leaf.append(pos)
        links = _Links(
            np.array(row, np.int64),
            np.array(leaf, np.int64),
            np.array(ucol, np.int64),
            np.array(left, bool),
        )
        with self._lock:
            self._links_cache[slot] = links
        return links

    def _layout(self, slots: list[int]) -> _Layout:
        """u columns, then one z block per distinct slot in ``slots`` (first-seen order)."""
        n_u = int(self._u_start[-1])
        z_start: dict[int, int] = {}
        col = n_u
        for s in slots:
            if s not in z_start:
                z_start[s] = col
                col += len(self._slots[s].leaves)
        return _Layout(n_u, z_start, col)

    def _structure(self, lay: _Layout) -> _Rows:
        """Order chains on u, one leaf per tree, and the path-condition links."""
        rows = _Rows.empty()
        for f in range(len(self._allowed_cells)):  # u[f, r+1] - u[f, r] <= 0
            a, b = int(self._u_start[f]), int(self._u_start[f + 1])
            n = b - a - 1
            if n > 0:
                r = np.arange(n)
                cols = np.r_[a + 1 + r, a + r]
                vals = np.r_[np.ones(n), -np.ones(n)]
                rows.add_block(np.r_[r, r], cols, vals, np.full(n, -INF), np.zeros(n))
        for s, z0 in lay.z_start.items():
            n_leaves = len(self._slots[s].leaves)
            rows.add(z0 + np.arange(n_leaves), np.ones(n_leaves), 1.0, 1.0)
            lk = self._links(s)
            n = len(lk.ucol)
            if n == 0:
                continue
            # right: sum z - u <= 0;  left: sum z + u <= 1
            rows.add_block(
                np.r_[lk.row, np.arange(n)],
                np.r_[z0 + lk.leaf, lk.ucol],
                np.r_[np.ones(len(lk.leaf)), np.where(lk.left, 1.0, -1.0)],
                np.full(n, -INF),
                lk.left.astype(np.float64),
            )
        return rows

    def _score_row(
        self, lay: _Layout, slots: list[int], tables: tuple[np.ndarray, ...], a: int, b: int
    ) -> tuple[np.ndarray, np.ndarray, float, float]:
        """Coefficients of ``sum_t (T_t[leaf, a] - T_t[leaf, b]) z`` (b < 0: no minus
        term), each term shifted to a zero minimum (one leaf per tree). Returns
        (cols, vals, shift, scale): the row equals the sum minus ``shift``; ``scale`` is
        the sum of the terms' largest magnitudes (for tolerances)."""
        coef = np.zeros(lay.n_cols)
        shift = 0.0
        scale = 0.0
        for s, tab in zip(slots, tables):
            leaves = self._slots[s].leaves
            d = tab[leaves, a] - (tab[leaves, b] if b >= 0 else 0.0)
            if d.size == 0:
                continue
            lo = float(d.min())
            z0 = lay.z_start[s]
            coef[z0 : z0 + len(leaves)] += d - lo
            shift += lo
            scale += float(np.abs(d).max())
        nz = np.flatnonzero(coef)
        return nz, coef[nz], shift, scale

    def _region_rows(self, lay: _Layout, y0: int, rows: _Rows) -> None:
        """Original margin > c_o against every k != y0, and A(x) >= delta_abs, each
        relaxed by a relative tolerance (points are re-checked exactly)."""
        orig = self.original
        for k in range(len(orig.base)):
            if k == y0:
                continue
            cols, vals, shift, scale = self._score_row(lay, self._orig_slots, orig.tables, y0, k)
            rhs = self.region.margin - float(orig.base[y0] - orig.base[k]) - shift
            rows.add(cols, vals, rhs - REL_TOL * (1.0 + scale), INF)
        pl = self.region.plausibility
        if pl is not None and self.region.delta_abs is not None:
            cols, vals, shift, scale = self._score_row(lay, self._plaus_slots, pl.tables, 0, -1)
            rhs = self.region.delta_abs - float(pl.base[0]) - shift
            rows.add(cols, vals, rhs - REL_TOL * (1.0 + scale), INF)

    def _build(self, lay: _Layout, rows: _Rows, cost: np.ndarray, workers: int) -> highspy.Highs:
        """A maximising HiGHS MILP: binary u, continuous z in [0, 1], the given rows."""
        h = new_highs(threads=workers, seed=self.seed)  # thread-safe (stdout lock)
        n = lay.n_cols
        h.addCols(
            n, cost, np.zeros(n), np.ones(n), 0, np.zeros(n, np.int32), np.zeros(0, np.int32),
            np.zeros(0),
        )  # fmt: skip
        if lay.n_u:
            idx = np.arange(lay.n_u, dtype=np.int32)
            h.changeColsIntegrality(
                lay.n_u, idx, np.array([highspy.HighsVarType.kInteger] * lay.n_u)
            )
        _add_rows(h, rows)
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        for key, value in (
            ("mip_rel_gap", 0.0),
            ("primal_feasibility_tolerance", FEAS_TOL),
            ("mip_feasibility_tolerance", FEAS_TOL),
        ):
            h.setOptionValue(key, value)
        return h

    # ------------------------------------------------------------------------ solving
    def _solve_pair(
        self,
        y0: int,
        y: int,
        comp: ScoreModel,
        comp_slots: list[int],
        e_req: float,
        workers: int,
        deadline: float | None,
    ) -> PairResult:
        """Maximise the compressed disagreement over the region; see the class contract."""
        t0 = time.perf_counter()
        used = [*self._orig_slots, *self._plaus_slots, *comp_slots]
        lay = self._layout(used)
        rows = self._structure(lay)
        self._region_rows(lay, y0, rows)
        cols, vals, shift, scale = self._score_row(lay, comp_slots, comp.tables, y, y0)
        cost = np.zeros(lay.n_cols)
        cost[cols] = vals
        # objective (without the constant) >= threshold  <=>  S'_y - S'_y0 >= -E_req
        threshold = -e_req - float(comp.base[y] - comp.base[y0]) - shift
        tol = REL_TOL * (1.0 + scale)
        h = self._build(lay, rows, cost, workers)
        h.setOptionValue("mip_abs_gap", tol / 4)
        out = self._search(h, lay, y0, y, comp, comp_slots, e_req, threshold, tol, deadline)
        return PairResult(
            y0,
            y,
            out.status,
            out.point,
            seconds=time.perf_counter() - t0,
            branches=out.nodes,
            spurious=out.spurious,
        )

    def _search(
        self,
        h: highspy.Highs,
        lay: _Layout,
        y0: int,
        y: int,
        comp: ScoreModel,
        comp_slots: list[int],
        e_req: float,
        threshold: float,
        tol: float,
        deadline: float | None,
    ) -> _Outcome:
        """Solve, check the incumbent exactly, exclude non-genuine ones and re-solve."""
        out = _Outcome()
        ok = (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit)
        budget = Budget(deadline)
        for _ in range(self.settings.max_spurious + 1):
            if budget.expired():
                break
            st = run_highs(h, budget)  # the instance's run time counts from its first run
            info = h.getInfo()
            out.nodes += int(info.mip_node_count)
            if st == highspy.HighsModelStatus.kInfeasible:
                out.status = "INFEASIBLE"  # the (relaxed) region is empty
                break
            if st not in ok:
                break  # anything else is never a decision
            sol = h.getSolution()
            value = float(info.objective_function_value)
            if sol.value_valid and value >= threshold - tol:
                x, leaves = self._decode(np.asarray(sol.col_value), lay)
                if self._in_region(y0, leaves) and _separates(
                    comp, [leaves[s] for s in comp_slots], y0, y, e_req
                ):
                    out.status, out.point = "FEASIBLE", x
                    break
                out.spurious += 1
                self._add_nogood(h, lay, leaves)
                continue
            optimal = st == highspy.HighsModelStatus.kOptimal
            if optimal and info.mip_dual_bound < threshold - tol / 2:
                out.status = "INFEASIBLE"  # the maximum stays below the threshold
            break  # time limit without a point reaching the threshold: UNKNOWN
        return out

    def _decode(self, values: np.ndarray, lay: _Layout) -> tuple[np.ndarray, list[int]]:
        """The cell representative read off u, and the leaf of every slot at it.

        Raises AssertionError if a used slot's z does not select the leaf that
        ``tree.apply`` gives (the formulation and the representative disagree)."""
        u = values[: lay.n_u] > 0.5
        cells = np.array(
            [
                self._allowed_cells[f][int(u[self._u_start[f] : self._u_start[f + 1]].sum())]
                for f in range(len(self._allowed_cells))
            ],
            np.int64,
        )
        x = self.domain.representative(cells)
        leaves = [int(s.tree.apply(x[None, :])[0]) for s in self._slots]
        for s, z0 in lay.z_start.items():
            pos = int(np.searchsorted(self._slots[s].leaves, leaves[s]))
            if values[z0 + pos] < 0.5:
                raise AssertionError("HiGHS leaf assignment disagrees with the representative")
        return x, leaves

    def _add_nogood(self, h: highspy.Highs, lay: _Layout, leaves: list[int]) -> None:
        """Exclude the leaf combination ``leaves`` on every used slot: sum z <= n - 1.

        Valid for every integer solution (z is integral there); the region and the
        separation condition depend on the leaves only, so no genuine point is lost."""
        cols = np.array(
            [
                z0 + int(np.searchsorted(self._slots[s].leaves, leaves[s]))
                for s, z0 in lay.z_start.items()
            ],
            np.int64,
        )
        rows = _Rows.empty()
        rows.add(cols, np.ones(len(cols)), -INF, float(len(cols) - 1))
        _add_rows(h, rows)


def _separates(comp: ScoreModel, leaves: list[int], y0: int, y: int, e_req: float) -> bool:
    """Exact (rational) separation condition ``S'_y - S'_y0 >= -E_req`` at these leaves."""
    sc = comp.exact_scores(leaves)
    return sc[y] - sc[y0] >= Fraction(-e_req)


def _add_rows(h: highspy.Highs, rows: _Rows) -> None:
    """Load coordinate-form rows into HiGHS as CSR (duplicate entries summed)."""
    n_rows = len(rows.lo)
    if n_rows == 0:
        return
    r = np.concatenate(rows.row)
    c = np.concatenate(rows.col)
    v = np.concatenate(rows.val)
    n_cols = int(h.getNumCol())
    key = np.unique(r * n_cols + c, return_inverse=True)
    uniq, inv = key
    vals = np.zeros(len(uniq))
    np.add.at(vals, inv, v)
    keep = vals != 0.0
    uniq, vals = uniq[keep], vals[keep]
    rr, cc = uniq // n_cols, uniq % n_cols
    starts = np.searchsorted(rr, np.arange(n_rows)).astype(np.int32)
    h.addRows(
        n_rows,
        np.asarray(rows.lo, np.float64),
        np.asarray(rows.hi, np.float64),
        len(cc),
        starts,
        cc.astype(np.int32),
        vals,
    )
