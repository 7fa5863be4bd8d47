"""Screening with numpy: separating samples without a solver (never a proof).

Before CP-SAT, the driver screens a candidate here: every allowed cell of a small domain
(the *grid*), or a *pool* of points inside the region on a large one (training rows,
random cell moves of them, and the neighbours of every separating sample found). The
same points hint CP-SAT's search (:meth:`Screen.hint_points`). A screen only finds
separating samples; it never proves anything.
"""

from __future__ import annotations

import numpy as np

from pace_cert.oracle.score_model import PairResult, RegionSpec, ScoreModel, gap
from pace_cert.plumbing.budget import Budget
from pace_cert.region.domain import FeatureDomain


def cell_product(values: list[np.ndarray]) -> np.ndarray:
    """Every combination of one value per feature, float32 [prod(sizes), n_features], in
    ``itertools.product`` order (the last feature varies fastest)."""
    n = int(np.prod([len(v) for v in values], dtype=np.int64))
    out = np.empty((n, len(values)), np.float32)
    if n == 0:
        return out
    inner = n
    for f, v in enumerate(values):
        inner //= len(v)
        out[:, f] = np.tile(np.repeat(np.asarray(v, np.float32), inner), n // (len(v) * inner))
    return out


class Screen:
    """Grid or pool of points clearly inside the region, with the original's labels.

    ``enum_limit``: domains with at most this many allowed cells are screened on every
    cell (the grid); larger ones on the pool, once :meth:`seed_pool` has built it.
    ``pool_cap``: the pool keeps at most this many points (the newest, plus a seeded
    random share of the older ones), so memory and screening time stay bounded.
    ``moves_per_point``: one-cell moves of a point tried at most (all of them when its
    features have fewer cells in all; else each feature's neighbouring cells first,
    then seeded random ones): raw features have thousands of cells.
    """

    def __init__(
        self,
        domain: FeatureDomain,
        original: ScoreModel,
        region: RegionSpec,
        *,
        seed: int = 0,
        enum_limit: int = 300_000,
        pool_cap: int = 200_000,
        moves_per_point: int = 512,
    ) -> None:
        self.domain = domain
        self.original = original
        self.region = region
        self.seed = seed
        self.enum_limit = enum_limit
        self.pool_cap = pool_cap
        self.moves_per_point = moves_per_point
        self._rng = np.random.default_rng(seed)
        self.allowed_cells = [np.flatnonzero(domain.allowed(f)) for f in range(domain.n_features)]
        self._pool: tuple[np.ndarray, np.ndarray] | None = None  # (points, labels) inside
        self._scores_memo: tuple[ScoreModel, np.ndarray, np.ndarray] | None = None
        self._grid_cache: tuple[np.ndarray, np.ndarray] | None = None
        self._grid_done = False
        self._grid_labels: np.ndarray | None = None  # labels on the whole product
        self._grid_reps: list[np.ndarray] = []

    def grid(self) -> tuple[np.ndarray, np.ndarray] | None:
        """All allowed cell representatives when the domain is small, else None (cached).

        Also caches, per grid point, the original's label if the point is clearly inside
        the region (float64 margin above c_o by a safety slack; same for A(x)), else -1.
        """
        if self._grid_done:
            return self._grid_cache
        self._grid_done = True
        sizes = [len(c) for c in self.allowed_cells]
        if float(np.prod([float(v) for v in sizes])) <= self.enum_limit:
            reps = [self.domain.reps[f][c] for f, c in enumerate(self.allowed_cells)]
            grid = cell_product(reps)
            y0 = self.inside_labels(grid)
            inside = y0 >= 0
            self._grid_cache = (grid[inside], y0[inside])
            self._grid_labels, self._grid_reps = y0.reshape(sizes), reps
        return self._grid_cache

    def label_change_points(self) -> np.ndarray:
        """On an enumerable domain: for every feature and every pair of consecutive
        allowed cells of it where two grid points differing in that feature only are both
        clearly inside the region and labelled differently by the original, the lower
        point (float32 [m, n_features], one per such gap); empty otherwise. Candidates for
        :func:`witness.find_witnesses`, which re-checks them with the exact region."""
        F = self.domain.n_features
        if self.grid() is None:
            return np.empty((0, F), np.float32)
        L = self._grid_labels
        points: list[list[int]] = []
        for f in range(F):
            n = L.shape[f]
            if n < 2:
                continue
            lo = (slice(None),) * f + (slice(0, n - 1),)
            hi = (slice(None),) * f + (slice(1, n),)
            a, b = L[lo], L[hi]  # views: the lower and upper point of each pair
            change = np.moveaxis((a != b) & (a >= 0) & (b >= 0), f, 0)
            rest = change.shape[1:]
            change = change.reshape(n - 1, -1)
            for i in np.flatnonzero(change.any(axis=1)):
                j = np.unravel_index(int(np.argmax(change[i])), rest)
                points.append([*j[:f], int(i), *j[f:]])
        if not points:
            return np.empty((0, F), np.float32)
        idx = np.asarray(points, np.int64)
        reps = self._grid_reps
        return np.stack([np.asarray(reps[f], np.float32)[idx[:, f]] for f in range(F)], axis=1)

    def can_enumerate(self) -> bool:
        """Whether the domain is small enough for the enumeration pre-search."""
        return self.grid() is not None

    def enumerate_separation(
        self, compressed: ScoreModel, e_req: float, per_pair: int = 25
    ) -> list[PairResult]:
        """Cheap pre-search on small domains: separating samples found by evaluating every
        cell clearly inside the region. Finds samples only; it never proves anything."""
        g = self.grid()
        if g is None or len(g[0]) == 0:
            return []
        grid, y0 = g
        return self.violations(grid, y0, compressed, e_req, per_pair)

    # ------------------------------------------------------------ sample pool screen
    def seed_pool(self, X: np.ndarray, per_row: int = 20, max_moves: int = 3) -> int:
        """Start the screening pool for domains too large to enumerate: the rows' cell
        representatives plus ``per_row`` random variants of each row (1..``max_moves``
        features moved to another allowed cell, half of them to an adjacent cell), kept
        when clearly inside the region. Returns the pool size. Deterministic (seed)."""
        rng = np.random.default_rng(self.seed)
        cells = self.domain.cell_index(np.asarray(X, np.float32))
        n, F = cells.shape
        if n == 0 or per_row <= 0:
            return self._set_pool(np.zeros((0, F), np.int64))
        ranks = np.stack(
            [np.searchsorted(self.allowed_cells[f], cells[:, f]) for f in range(F)], axis=1
        )
        sizes = np.array([len(c) for c in self.allowed_cells])
        R = np.repeat(ranks, per_row, axis=0)
        m = len(R)
        for k in range(max_moves):
            f = rng.integers(0, F, m)
            move = rng.random(m) < 0.7 if k else np.ones(m, bool)  # first move always
            local = rng.random(m) < 0.5
            step = rng.choice(np.array([-2, -1, 1, 2]), m)
            new = np.where(local, R[np.arange(m), f] + step, rng.integers(0, sizes[f]))
            new = np.clip(new, 0, sizes[f] - 1)
            R[np.arange(m)[move], f[move]] = new[move]
        all_ranks = np.unique(np.vstack([ranks, R]), axis=0)
        return self._set_pool(
            np.stack([self.allowed_cells[f][all_ranks[:, f]] for f in range(F)], axis=1)
        )

    def _set_pool(self, cells: np.ndarray) -> int:
        X = (
            np.stack(
                [self.domain.reps[f][cells[:, f]] for f in range(self.domain.n_features)], axis=1
            ).astype(np.float32)
            if len(cells)
            else np.zeros((0, self.domain.n_features), np.float32)
        )
        y0 = self.inside_labels(X) if len(X) else np.zeros(0, np.int64)
        self._pool = (X[y0 >= 0], y0[y0 >= 0])
        return len(self._pool[0])

    def grow_pool(self, points: list[np.ndarray]) -> int:
        """Add points and every one-cell move of them that is clearly inside the region
        (near separating samples is where the next ones tend to be). Returns the size."""
        if not points or self._pool is None:
            return self.pool_size()
        X = np.unique(np.concatenate([self._one_cell_moves(points), np.asarray(points)]), axis=0)
        y0 = self.inside_labels(X)
        X, y0 = X[y0 >= 0], y0[y0 >= 0]
        old_X, old_y = self._pool
        room = self.pool_cap - len(X)
        if len(old_X) > room:  # keep the new points and a random share of the old
            keep = np.sort(self._rng.choice(len(old_X), max(room, 0), replace=False))
            old_X, old_y = old_X[keep], old_y[keep]
        PX = np.concatenate([old_X, X])
        Py = np.concatenate([old_y, y0])
        PX, idx = np.unique(PX, axis=0, return_index=True)
        self._pool = (PX, Py[idx])
        return len(PX)

    def pool_size(self) -> int:
        return 0 if self._pool is None else len(self._pool[0])

    def pool_points(self) -> tuple[np.ndarray, np.ndarray]:
        """The pool's points (float32) and the original's labels there (clearly inside
        the region by float64 with a slack; re-check exactly before relying on it)."""
        if self._pool is None:
            return np.zeros((0, self.domain.n_features), np.float32), np.zeros(0, np.int64)
        return self._pool

    def screen(self, compressed: ScoreModel, e_req: float, per_pair: int = 25) -> list[PairResult]:
        """Cheap pre-search: every cell on small domains (:meth:`enumerate_separation`),
        else the sample pool. Finds separating samples only; it never proves anything."""
        if self.can_enumerate():
            return self.enumerate_separation(compressed, e_req, per_pair)
        if self._pool is None:
            return []
        return self.violations(*self._pool, compressed, e_req, per_pair)

    def inside_labels(self, X: np.ndarray) -> np.ndarray:
        """Per float32 row: the original's label when the row is clearly inside the region
        (float64 margin above c_o by a safety slack; same for A(x) and delta), else -1.
        Used to pick samples only; proofs never rely on it."""
        S = self.original.scores(X)
        y0 = np.argmax(S, axis=1)
        top = S[np.arange(len(X)), y0]
        S2 = S.copy()
        S2[np.arange(len(X)), y0] = -np.inf
        slack = 1e-6 * (np.abs(S).max(axis=1) + 1.0)
        inside = top - S2.max(axis=1) > self.region.margin + slack
        pl = self.region.plausibility
        if pl is not None and self.region.delta_abs is not None:
            A = pl.scores(X)[:, 0]
            inside &= self.region.delta_abs + 1e-6 * (np.abs(A) + 1.0) <= A
        return np.where(inside, y0, -1)

    def scores_on(self, model: ScoreModel, X: np.ndarray) -> np.ndarray:
        """``model.scores(X)``, read-only, remembered for the last (model, X) pair (by
        identity): a round screens its candidate on the grid or pool and then hints
        CP-SAT from the same points, so the candidate is scored there once."""
        memo = self._scores_memo
        if memo is not None and memo[0] is model and memo[1] is X:
            return memo[2]
        S = model.scores(X)
        S.flags.writeable = False
        self._scores_memo = (model, X, S)
        return S

    def violations(
        self, X: np.ndarray, y0: np.ndarray, compressed: ScoreModel, e_req: float, per_pair: int
    ) -> list[PairResult]:
        """Rows (labelled y0, all inside) where the compressed model fails the margin,
        at most ``per_pair`` per ordered pair, most violated first."""
        if len(X) == 0:
            return []
        S = self.scores_on(compressed, X)
        own = S[np.arange(len(X)), y0]
        out = []
        for y in range(S.shape[1]):
            viol = np.flatnonzero((y0 != y) & (S[:, y] - own >= -e_req))
            if len(viol) == 0:
                continue
            worst = viol[np.argsort(own[viol] - S[viol, y], kind="stable")[:per_pair]]
            for i in worst:
                out.append(PairResult(int(y0[i]), y, "FEASIBLE", X[i].copy()))
        return out

    def climb(
        self,
        compressed: ScoreModel,
        e_req: float,
        per_pair: int = 25,
        width: int = 32,
        steps: int = 25,
        budget: Budget | None = None,
        patience: int = 5,
    ) -> list[PairResult]:
        """Pre-search on large domains when the pool holds no separating sample: a beam
        search from the ``width`` pool points closest to separating (largest
        max_y S'_y - S'_y0). Each step takes every one-cell move of the beam that is
        clearly inside the region (any original label) and not visited before, and
        keeps the ``width`` with the largest gap, better or not (the scores are flat
        across most moves). Stops at the first step where some move separates and
        returns those moves (at most ``per_pair`` per pair). Finds samples only (numpy,
        float64): never proves anything; nothing after ``steps`` steps without one,
        after ``patience`` steps in a row without a larger gap than any before, or when
        ``budget`` expires."""
        if self._pool is None or len(self._pool[0]) == 0 or steps <= 0:
            return []
        PX, Py = self._pool
        g = gap(compressed, PX, Py)
        beam = PX[np.argsort(-g, kind="stable")[:width]]
        seen = {row.tobytes() for row in beam}
        top, flat = float(g.max()), 0
        for _ in range(steps):
            if budget is not None and budget.expired():
                return []
            X = np.unique(np.concatenate([self._moves(x) for x in beam]), axis=0)
            fresh = np.array([row.tobytes() not in seen for row in X], bool)
            X = X[fresh]
            seen.update(row.tobytes() for row in X)
            y0 = self.inside_labels(X) if len(X) else np.zeros(0, np.int64)
            X, y0 = X[y0 >= 0], y0[y0 >= 0]
            if len(X) == 0:
                return []
            found = self.violations(X, y0, compressed, e_req, per_pair)
            if found:
                return found
            g = gap(compressed, X, y0)
            beam = X[np.argsort(-g, kind="stable")[:width]]
            flat = flat + 1 if g.max() <= top else 0
            top = max(top, float(g.max()))
            if flat >= patience:
                return []
        return []

    def _moves(self, x: np.ndarray) -> np.ndarray:
        """Cell representatives differing from ``x`` in one feature's cell (x included):
        every one when there are at most ``moves_per_point``; else, per feature, the
        two allowed cells on each side of x's and then seeded random others."""
        x = np.asarray(x, np.float32)
        total = sum(len(c) for c in self.allowed_cells)
        blocks = []
        if total > self.moves_per_point:
            cells_x = self.domain.cell_index(x[None, :])[0]
            extra = max(0, self.moves_per_point - 4 * len(self.allowed_cells))
            per = max(1, extra // max(1, len(self.allowed_cells)))
        for f, cells in enumerate(self.allowed_cells):
            if total > self.moves_per_point:
                r = int(np.searchsorted(cells, cells_x[f]))
                near = cells[max(0, r - 2) : r + 3]
                far = self._rng.choice(cells, min(per, len(cells)), replace=False)
                cells = np.unique(np.concatenate([near, far]))
            vals = self.domain.reps[f][cells]
            block = np.repeat(x[None, :], len(vals), axis=0)
            block[:, f] = vals
            blocks.append(block)
        return np.concatenate(blocks)

    def neighbours(
        self, points: list[np.ndarray], compressed: ScoreModel, e_req: float, per_pair: int = 10
    ) -> list[PairResult]:
        """More separating samples near found ones: every point that differs from a found
        point in one feature's cell (cell representatives), clearly inside the region and
        failing the compressed model's margin. Cheap (numpy), finds samples only: it
        lets the master see several samples per pair and round instead of one."""
        if not points:
            return []
        X = self._one_cell_moves(points)
        y0 = self.inside_labels(X)
        keep = y0 >= 0
        return self.violations(X[keep], y0[keep], compressed, e_req, per_pair)

    def widen(
        self, points: list[np.ndarray], compressed: ScoreModel, e_req: float, per_pair: int
    ) -> list[PairResult]:
        """After CP-SAT found separating ``points`` (new ground): grow the pool around
        them (:meth:`grow_pool`) and return their :meth:`neighbours` (none when
        ``per_pair`` is 0)."""
        self.grow_pool(points)
        return self.neighbours(points, compressed, e_req, per_pair) if per_pair else []

    def _one_cell_moves(self, points: list[np.ndarray]) -> np.ndarray:
        """Distinct float32 points differing from one of ``points`` in one feature's cell
        (cell representatives)."""
        return np.unique(np.concatenate([self._moves(x) for x in points]), axis=0)

    def hint_points(
        self, compressed: ScoreModel, pairs: list[tuple[int, int]]
    ) -> dict[tuple[int, int], np.ndarray]:
        """Per pair (y0, y), the known point inside the region labelled y0 where the
        compressed model comes closest to predicting y (the largest S'_y - S'_y0 over
        the grid or the pool); pairs without such a point are left out. A start for
        CP-SAT's search (a solution hint), never a constraint."""
        g = self.grid() if self.can_enumerate() else self._pool
        if g is None or len(g[0]) == 0:
            return {}
        X, lab = g
        S = self.scores_on(compressed, X)
        out = {}
        for y0, y in pairs:
            rows = np.flatnonzero(lab == y0)
            if len(rows):
                out[(y0, y)] = X[int(rows[int(np.argmax(S[rows, y] - S[rows, y0]))])]
        return out
