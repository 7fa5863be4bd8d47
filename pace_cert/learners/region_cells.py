"""The region's cells a single tree must label, on the original's threshold grid.

A *forest cell* is a product of one cell per feature of the original's own sorted
thresholds (cell k of feature f is ``(th[k-1], th[k]]``): every original split, hence
the original's scores, label and margin, is constant on it. The plausibility forest's
thresholds cut it further, so a forest cell may be partly inside the region. A forest
cell is *labelled* when some point of it is known to lie in the region; a pure tree
(:mod:`pace_cert.learners.region_tree`) must give it the original's label there, and any
label elsewhere.

:func:`region_cells` labels every forest cell exactly when the feature domain (with the
plausibility thresholds) is small enough to enumerate: then a pure tree is faithful on
the whole region. Otherwise it labels the cells of known region points (the run's
samples and the screening pool), and the oracle certifies a tree or refutes it with a
point whose cell joins them. Membership is exact (:mod:`pace_cert.region.masks`), so a
tree's leaf count on labelled cells is a lower bound for any tree faithful in the
region.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from pace_cert.model.ensemble import LEAF, Ensemble, Tree
from pace_cert.region.domain import FeatureDomain, collect_thresholds
from pace_cert.region.masks import margin_mask, plausibility_mask


@dataclass(frozen=True)
class ForestGrid:
    """The original's sorted float32 thresholds per feature and how many of its split
    nodes use each (``usage``): the grid a single tree cuts on."""

    thresholds: tuple[np.ndarray, ...]
    usage: tuple[np.ndarray, ...]  # int64, one count per threshold

    @classmethod
    def of(cls, original: Ensemble) -> ForestGrid:
        th = collect_thresholds(original.trees, original.n_features)
        usage = [np.zeros(len(t), np.int64) for t in th]
        for tree in original.trees:
            inner = tree.feature != LEAF
            for f, v in zip(tree.feature[inner], tree.threshold[inner]):
                usage[int(f)][int(np.searchsorted(th[int(f)], v))] += 1
        return cls(tuple(th), tuple(usage))

    @property
    def n_features(self) -> int:
        return len(self.thresholds)

    def coords(self, X: np.ndarray) -> np.ndarray:
        """Forest cell per feature of float32 rows: int64 [n, n_features]."""
        X = np.asarray(X, np.float32)
        return np.stack(
            [np.searchsorted(th, X[:, f], side="left") for f, th in enumerate(self.thresholds)],
            axis=1,
        ).astype(np.int64)

    def choose_cut(self, f: int, a: int, b: int) -> int:
        """The cut between forest cells ``a`` < ``b`` of feature f (cells <= c go left,
        a <= c < b): among the thresholds in between, the one the original's splits use
        most (ties: the middle one). Cells strictly between a and b hold no labelled
        point, so any of them is faithful there; the original's own boundary is the
        best guess where the unknown cells change label."""
        cand = np.arange(a, b)
        use = self.usage[f][cand]
        top = cand[use == use.max()]
        return int(top[len(top) // 2])

    def point(self, domain: FeatureDomain, coords: np.ndarray) -> np.ndarray:
        """A float32 point of the domain in the forest cell ``coords`` (per feature its
        first allowed domain cell in that forest cell; outside the cell when it holds
        none), for guessing the original's label there."""
        x = np.empty(len(coords), np.float32)
        for f, c in enumerate(coords):
            th, dth = self.thresholds[f], domain.thresholds[f]
            allowed = np.flatnonzero(domain.allowed(f))
            first = 0 if c == 0 else int(np.searchsorted(dth, th[c - 1])) + 1
            pos = min(int(np.searchsorted(allowed, first)), len(allowed) - 1)
            x[f] = domain.reps[f][allowed[pos]]
        return x

    def tree(self, feature: np.ndarray, cut: np.ndarray, left: np.ndarray, right: np.ndarray,
             label: np.ndarray, n_classes: int) -> Tree:  # fmt: skip
        """The IR tree of a cell tree: split ``x_f <= thresholds[f][cut]`` (cells <= cut
        go left: float32 x is in cell <= c iff x <= th[c]); one-hot leaf values."""
        inner = feature != LEAF
        th = np.zeros(len(feature), np.float32)
        th[inner] = [self.thresholds[int(f)][int(c)] for f, c in zip(feature[inner], cut[inner])]
        value = np.zeros((len(feature), n_classes))
        value[~inner, label[~inner]] = 1.0
        return Tree(feature.copy(), th, left.copy(), right.copy(), value)


class CellKeys:
    """A set of forest cells (rows of grid coordinates), one key per cell: the cell's
    mixed-radix index when the grid has fewer than 2**62 cells; else a 128-bit key, two
    random linear hashes of the coordinates modulo 2**64 (rows that differ collide with
    probability about 2**-128; a collision could only leave a cell out of a fit, which
    the oracle's proof does not depend on). Keys are kept sorted; numpy throughout."""

    def __init__(self, grid: ForestGrid) -> None:
        sizes = [len(t) + 1 for t in grid.thresholds]
        self._radix: np.ndarray | None = None
        self._mult: np.ndarray | None = None
        if float(np.prod([float(v) for v in sizes])) < 2.0**62:
            self._radix = np.cumprod([1, *sizes[:-1]]).astype(np.int64)
            self._keys: np.ndarray = np.zeros(0, np.int64)
        else:
            rng = np.random.default_rng(0x9E3779B97F4A7C15)
            self._mult = rng.integers(1, 2**63, size=(len(sizes), 2), dtype=np.uint64) | 1
            self._keys = np.zeros(0, np.dtype((np.void, 16)))

    def keys(self, coords: np.ndarray) -> np.ndarray:
        if self._radix is not None:
            return np.asarray(coords, np.int64) @ self._radix
        assert self._mult is not None
        h = np.zeros((len(coords), 2), np.uint64)
        with np.errstate(over="ignore"):
            for f in range(coords.shape[1]):
                h += coords[:, f].astype(np.uint64)[:, None] * self._mult[f][None, :]
        return np.ascontiguousarray(h).view(np.dtype((np.void, 16))).ravel()

    def contains(self, keys: np.ndarray) -> np.ndarray:
        return np.isin(keys, self._keys)

    def add(self, keys: np.ndarray) -> None:
        self._keys = np.union1d(self._keys, keys)

    def add_all(self, other: CellKeys) -> None:
        """Every key of ``other`` (a set over the same grid, so the same keys)."""
        self.add(other._keys)


class LabelledCells:
    """Forest cells known to lie (partly) in the region, each with the original's class
    index there, grown as region points turn up. ``complete``: every forest cell with a
    region point is among them."""

    def __init__(self, grid: ForestGrid, complete: bool = False) -> None:
        self.grid = grid
        self.complete = complete
        # coordinates in the smallest integer type that holds them (int16 for grids of
        # fewer than 32767 thresholds a feature): 1.3 M cells of 57 features are 148 MB,
        # not the 593 MB of int64
        top = max((len(t) for t in grid.thresholds), default=0)
        self.dtype = np.int16 if top < np.iinfo(np.int16).max else np.int32
        self.keys = CellKeys(grid)
        self._coords: list[np.ndarray] = []
        self._labels: list[np.ndarray] = []
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def add(self, coords: np.ndarray, labels: np.ndarray) -> int:
        """Add the cells ``coords`` (grid coordinates) with class indices ``labels``;
        cells present already are skipped. Returns how many were new."""
        if len(coords) == 0:
            return 0
        keys = self.keys.keys(coords)
        _, first = np.unique(keys, return_index=True)
        first = np.sort(first[~self.keys.contains(keys[first])])
        if len(first) == 0:
            return 0
        self.keys.add(keys[first])
        self._coords.append(coords[first].astype(self.dtype))
        self._labels.append(np.asarray(labels, np.int64)[first])
        self._n += len(first)
        return len(first)

    def add_points(self, X: np.ndarray, y0: np.ndarray) -> int:
        """Add the cells of region points ``X`` (float32) labelled ``y0``."""
        return self.add(self.grid.coords(X), y0) if len(X) else 0

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The cells' coordinates [n, n_features] (``dtype``) and class indices [n]."""
        if len(self._coords) > 1:  # one block from now on
            self._coords = [np.vstack(self._coords)]
            self._labels = [np.concatenate(self._labels)]
        if not self._coords:
            return np.zeros((0, self.grid.n_features), self.dtype), np.zeros(0, np.int64)
        return self._coords[0], self._labels[0]


def region_points(
    original: Ensemble, margin: float, plausibility, X: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The rows of float32 ``X`` exactly inside the region (margin > c_o, and A >=
    delta_abs when ``plausibility`` is given) and the original's class index there."""
    X = np.asarray(X, np.float32)
    inside = margin_mask(original, X, margin)
    if plausibility is not None and inside.any():
        inside[inside] = plausibility_mask(plausibility, X[inside])
    X = X[inside]
    return X, original.predict_index(X) if len(X) else np.zeros(0, np.int64)


def neighbour_points(grid: ForestGrid, domain: FeatureDomain, X: np.ndarray) -> np.ndarray:
    """For every row of ``X`` (float32, in the domain), feature and direction: the row
    moved into the next forest cell along that feature, at the allowed domain cell
    nearest to its own (the first allowed one past the forest threshold crossed). Rows
    with no such cell are left out. Candidates for :func:`flood_fill`."""
    X = np.asarray(X, np.float32)
    fc = grid.coords(X)
    out = []
    for f in range(domain.n_features):
        th, dth = grid.thresholds[f], domain.thresholds[f]
        if len(th) == 0:
            continue
        allowed = np.flatnonzero(domain.allowed(f))
        # up: the first allowed domain cell above th[fc] (the upper end of x's forest cell)
        up = np.searchsorted(dth, th[np.minimum(fc[:, f], len(th) - 1)]) + 1
        up_pos = np.searchsorted(allowed, up, side="left")
        up_ok = (fc[:, f] < len(th)) & (up_pos < len(allowed))
        # down: the last allowed domain cell at or below th[fc - 1] (its lower end)
        down = np.searchsorted(dth, th[np.maximum(fc[:, f] - 1, 0)])
        down_pos = np.searchsorted(allowed, down, side="right") - 1
        down_ok = (fc[:, f] > 0) & (down_pos >= 0)
        for ok, pos in ((up_ok, up_pos), (down_ok, down_pos)):
            if ok.any():
                moved = X[ok].copy()
                moved[:, f] = domain.reps[f][allowed[pos[ok]]]
                out.append(moved)
    if not out:
        return np.zeros((0, X.shape[1]), np.float32)
    return np.vstack(out)


def flood_fill(
    original: Ensemble,
    grid: ForestGrid,
    domain: FeatureDomain,
    margin: float,
    plausibility,
    X: np.ndarray,
    max_points: int,
    stop=None,
    chunk: int = 1024,
    known: LabelledCells | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Region points in forest cells next to those of the region points ``X``, found by
    moving one feature at a time into the neighbouring forest cell (the nearest allowed
    value past the threshold) and keeping the moves exactly inside the region, then the
    same from the new points, breadth first, until no new forest cell turns up,
    ``max_points`` were found or ``stop()``. One candidate per new forest cell is tried
    (a cell whose nearest point is outside may be reached later from another side).
    Works ``chunk`` frontier points at a time, so memory stays bounded. Returns the new
    points and the original's class indices there. ``known``: cells labelled already
    (not looked for again)."""
    X = np.asarray(X, np.float32)
    seen = CellKeys(grid)
    seen.add(seen.keys(grid.coords(X)))
    if known is not None and len(known):
        seen.add_all(known.keys)  # the same grid: its keys, no copy of its coordinates
    found_X: list[np.ndarray] = []
    found_y: list[np.ndarray] = []
    frontier, total = X, 0
    while len(frontier) and total < max_points:
        nxt = []
        for lo in range(0, len(frontier), chunk):
            if stop is not None and stop():
                return _stacked(found_X, found_y, grid.n_features)
            cand = neighbour_points(grid, domain, frontier[lo : lo + chunk])
            keys = seen.keys(grid.coords(cand))
            _, first = np.unique(keys, return_index=True)
            first = first[~seen.contains(keys[first])]
            cand = cand[np.sort(first)]
            P, y = region_points(original, margin, plausibility, cand)
            if len(P) == 0:
                continue
            seen.add(seen.keys(grid.coords(P)))
            found_X.append(P)
            found_y.append(y)
            nxt.append(P)
            total += len(P)
            if total >= max_points:
                break
        frontier = np.vstack(nxt) if nxt else np.zeros((0, grid.n_features), np.float32)
    return _stacked(found_X, found_y, grid.n_features)


def _stacked(
    xs: list[np.ndarray], ys: list[np.ndarray], n_features: int
) -> tuple[np.ndarray, np.ndarray]:
    if not xs:
        return np.zeros((0, n_features), np.float32), np.zeros(0, np.int64)
    return np.vstack(xs), np.concatenate(ys)


def domain_cells(domain: FeatureDomain, chunk: int = 1 << 17) -> Iterator[np.ndarray]:
    """Every allowed domain cell's float32 representative, ``chunk`` rows at a time."""
    values = [domain.reps[f][domain.allowed(f)] for f in range(domain.n_features)]
    sizes = [len(v) for v in values]
    total = int(np.prod(sizes, dtype=np.int64))
    for start in range(0, total, chunk):
        idx = np.unravel_index(np.arange(start, min(total, start + chunk)), sizes)
        yield np.stack([values[f][i] for f, i in enumerate(idx)], axis=1).astype(np.float32)


def n_domain_cells(domain: FeatureDomain) -> float:
    return float(np.prod([float(domain.allowed(f).sum()) for f in range(domain.n_features)]))


def region_cells(
    original: Ensemble,
    grid: ForestGrid,
    domain: FeatureDomain,
    margin: float,
    plausibility,
    known: tuple[np.ndarray, np.ndarray],
    enum_cells: int,
    stop=None,
) -> LabelledCells:
    """The forest cells to label: every one with a region point when the domain has at
    most ``enum_cells`` allowed cells (``complete``), else the cells of the region points
    ``known`` = (float32 rows, class indices). ``margin``: c_o; ``plausibility``: the
    fitted forest (None when delta = 0). Once ``stop()`` is true the enumeration ends
    and the known points' cells are returned instead (not complete)."""
    X, y0 = known
    partial = LabelledCells(grid)
    partial.add_points(np.asarray(X, np.float32), y0)
    if n_domain_cells(domain) > enum_cells:
        return partial
    cells = LabelledCells(grid, complete=True)
    for P in domain_cells(domain):
        if stop is not None and stop():
            return partial
        P, y = region_points(original, margin, plausibility, P)
        cells.add_points(P, y)
    return cells


def _allowed_cells(grid: ForestGrid, domain: FeatureDomain) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per feature, the forest cells that hold an allowed domain value, and a float32
    point of each (its first allowed value)."""
    reps = []
    for f, th in enumerate(grid.thresholds):
        dth, allowed = domain.thresholds[f], np.flatnonzero(domain.allowed(f))
        lower = np.r_[-1, np.searchsorted(dth, th)]  # the last domain cell below each cell
        upper = np.r_[np.searchsorted(dth, th), len(dth)]  # the last domain cell inside it
        pos = np.searchsorted(allowed, lower + 1)  # the first allowed domain cell inside
        ok = (pos < len(allowed)) & (allowed[np.minimum(pos, len(allowed) - 1)] <= upper)
        reps.append((np.flatnonzero(ok), domain.reps[f][allowed[pos[ok]]]))
    return reps


def enumerable(grid: ForestGrid, domain: FeatureDomain, enum_cells: int) -> bool:
    """Whether a tree can be fit on every cell that may hold a region point: the domain
    has at most ``enum_cells`` allowed cells (:func:`region_cells` is complete), or at
    most that many forest cells hold an allowed point (:func:`confident_cells`). Else
    (raw features, typically) the tree is learnt from counterexamples and may not
    certify in the time."""
    if n_domain_cells(domain) <= enum_cells:
        return True
    counts = [float(len(cells)) for cells, _ in _allowed_cells(grid, domain)]
    return float(np.prod(counts)) <= enum_cells


def confident_cells(
    original: Ensemble,
    grid: ForestGrid,
    domain: FeatureDomain,
    margin: float,
    enum_cells: int,
    stop=None,
) -> LabelledCells | None:
    """Every forest cell holding an allowed domain point where the original's margin is
    above ``margin`` (its margin is the same at every point of the cell), whatever the
    plausibility: a superset of the region's cells, so a tree pure on them is faithful
    (``complete``). None when more than ``enum_cells`` cells hold an allowed point, or
    once ``stop()`` is true."""
    reps = _allowed_cells(grid, domain)
    if float(np.prod([float(len(r[0])) for r in reps])) > enum_cells:
        return None
    cells = LabelledCells(grid, complete=True)
    n = int(np.prod([len(r[0]) for r in reps], dtype=np.int64))
    chunk = 1 << 17
    for start in range(0, n, chunk):
        if stop is not None and stop():
            return None
        idx = np.unravel_index(np.arange(start, min(n, start + chunk)), [len(r[0]) for r in reps])
        coords = np.stack([r[0][i] for r, i in zip(reps, idx)], axis=1).astype(np.int64)
        P = np.stack([r[1][i] for r, i in zip(reps, idx)], axis=1).astype(np.float32)
        inside = margin_mask(original, P, margin)
        if inside.any():
            cells.add(coords[inside], original.predict_index(P[inside]))
    return cells
