"""Separation oracle on OR-Tools CP-SAT (paper §4, constraint-based).

For an ordered label pair (y0, y) the oracle searches a float32 input x with

    original:     S_y0(x) - S_k(x) > c_o           for every k != y0   (confidence region)
    plausibility: A(x) >= delta_abs                                     (if delta > 0)
    compressed:   S'_y(x) - S'_y0(x) >= -E_req                           (separation)

Model: per feature, order literals ``x_i > theta_j``; per tree, one boolean per leaf,
ExactlyOne, and ``z_leaf => path literals``. Trees with identical structure share
their leaf booleans (a pruned model reuses the original's). Every real condition is
scaled by :mod:`pace_cert.scaling` into a *superset* integer condition; a point that
satisfies the integer model but not the real region (possible only within the rounding
slack) is checked with exact rationals and excluded by a nogood on its leaves, and the
search continues. A pair is proved only on status INFEASIBLE; a time limit gives
UNKNOWN.

Before CP-SAT, the driver screens a candidate with numpy (:meth:`SeparationOracle.screen`):
every cell of a small domain, or a pool of points inside the region on a large one. A
screen only finds separating samples; it never proves anything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np
from ortools.sat.python import cp_model

from pace_cert.model.ensemble import LEAF, Ensemble, FlatForest, Tree, tree_sums
from pace_cert.region.domain import FeatureDomain
from pace_cert.region.scaling import ScaledCondition, scale_condition

# Which conditions ``_post`` writes with one integer variable per tree:
# "plausibility" (the isolation forest's sum: ~100 deep trees, ~9,000 leaves on seeds,
# one long linear constraint otherwise; benchmarks/results/tree_sums.md), "all" (also
# the original-margin and separation conditions) or "none".
TREE_SUMS = "plausibility"
ENUM_LIMIT = 300_000  # domains with at most this many cells get the enumeration pre-search
MAX_SPURIOUS = 50  # nogoods per pair and call before the pair is declared UNKNOWN

# Settings measured in benchmarks/ (probing and at-most-one merging dominate the time
# of these mostly-propagation problems: 5-20x faster, same statuses; SAT inprocessing
# (clause vivification) spent most of a proof's search time on the isolation-forest
# regions: 2-4x faster proofs without it, `benchmarks/results/cpsat_params.md`).
# Presolve off: a call's presolve (~0.3 s on seeds' isolation-forest region, redone for
# every pair and round) cost more than it saved, `benchmarks/results/tree_sums.md`.
# CP-SAT's LP relaxation (`linearization_level`) is set per racing attempt instead:
# see RACE_LINEARIZATION.
CPSAT_PARAMS: dict[str, object] = {
    "cp_model_probing_level": 0,
    "merge_at_most_one_work_limit": 0.0,
    "find_big_linear_overlap": False,
    "use_sat_inprocessing": False,
    "cp_model_presolve": False,
}


@dataclass(frozen=True)
class ScoreModel:
    """Affine class scores over trees: S_k(x) = base_k + sum_j tables_j[leaf_j(x), k]."""

    trees: tuple[Tree, ...]
    tables: tuple[np.ndarray, ...]  # float64 [n_nodes, K]
    base: np.ndarray  # float64 [K]

    @classmethod
    def from_ensemble(cls, ens: Ensemble) -> ScoreModel:
        tables = tuple(w * t.value for w, t in zip(ens.weights, ens.trees))
        return cls(ens.trees, tables, ens.base.astype(np.float64))

    @classmethod
    def sum_of(cls, trees: Sequence[Tree]) -> ScoreModel:
        """The plain sum of the trees' leaf values, base 0: e.g. the plausibility
        forest's score A(x) (one output column)."""
        trees = tuple(trees)
        k = trees[0].value.shape[1] if trees else 1
        return cls(trees, tuple(t.value for t in trees), np.zeros(k))

    @cached_property
    def flat(self) -> FlatForest:
        """The trees stacked for evaluation (built once per model)."""
        return FlatForest.of(self.trees)

    def scores(self, X: np.ndarray) -> np.ndarray:
        """Float64 class scores [len(X), K] of float32 rows ``X`` (screening only)."""
        return tree_sums(self.tables, self.base, self.flat.apply(X))

    def exact_scores(self, leaves: list[int]) -> list[Fraction]:
        """Exact rational class scores given the leaf reached in each tree."""
        k = len(self.base)
        out = []
        for c in range(k):
            s = Fraction(float(self.base[c]))
            for tab, leaf in zip(self.tables, leaves):
                s += Fraction(float(tab[leaf, c]))
            out.append(s)
        return out


def _gap(model: ScoreModel, X: np.ndarray, y0: np.ndarray) -> np.ndarray:
    """Per row: max over y != y0 of S_y(x) - S_y0(x) in float64 (a row separates the
    pair when this is >= -E)."""
    S = model.scores(X)
    own = S[np.arange(len(X)), y0]
    S[np.arange(len(X)), y0] = -np.inf
    return S.max(axis=1) - own


@dataclass(frozen=True)
class RegionSpec:
    """The searched region: original margin > ``margin`` (score units) and A >= delta_abs."""

    margin: float
    plausibility: ScoreModel | None = None
    delta_abs: float | None = None


@dataclass
class PairResult:
    """Outcome of one separation problem."""

    y0: int
    y: int
    status: str  # INFEASIBLE | FEASIBLE | UNKNOWN
    point: np.ndarray | None = None
    seconds: float = 0.0
    conflicts: int = 0
    branches: int = 0
    spurious: int = 0
    scale_exp: int = 0
    error_bound: float = 0.0  # E_cp of the separation condition, score units
    region_error_bound: float = 0.0


@dataclass
class _Slot:
    tree: Tree
    leaves: np.ndarray
    var_index: np.ndarray  # proto index of each leaf boolean


MAX_ATTEMPTS = 4  # racing schedule: CP-SAT runs (seeds) per pair and call at most
# Racing portfolio: attempt k at a pair runs with linearization_level
# RACE_LINEARIZATION[k % len] in regions without a plausibility forest (delta = 0):
# without CP-SAT's LP (0) proofs are 3.5-5x faster there (compas RF50 at depth 5 and 7,
# cancer RF25 depth 3), and a pair's second attempt has the LP (CP-SAT's default, 1).
# With an isolation forest in the region every attempt keeps the LP
# (RACE_LINEARIZATION_PLAUSIBLE): its proofs are ~2x faster without it on seeds,
# diabetes, fico, but on spambase RF50 searches for separating points without the LP
# are heavy-tailed (2 of 8 seeds UNKNOWN at 30 s in the race, 1.1-6.9 s with the LP
# on every attempt). benchmarks/results/race_lp.md. The parallel and sequential
# schedules keep CP-SAT's default.
# Stumps (every original tree of depth <= 1, no plausibility forest) start with the LP
# (RACE_LINEARIZATION_STUMPS): a leaf boolean is then an order literal itself, so the
# LP relaxation of the two score conditions is tight; the proof that the merged
# AdaBoost spambase original is faithful takes 0.1-0.3 s with it and waits for the 2 s
# escalation without it (table (a) seeds 0-4 side by side, 120 runs without the two
# noisy AdaBoost spambase seed-4 ones: 56.9 -> 41.0 s, benchmarks/results/table_a_lp.md).
RACE_LINEARIZATION: tuple[int, ...] = (0, 1)
RACE_LINEARIZATION_STUMPS: tuple[int, ...] = (1, 0)
RACE_LINEARIZATION_PLAUSIBLE: tuple[int, ...] = (1,)
ESCALATE_SECONDS = 2.0  # racing: an attempt running this long (doubling per attempt of
# its pair) gets a twin even when every thread is busy (one extra thread at most)
FOUND_GRACE_SECONDS = 1.0  # separate(until_found=True): least time undecided pairs get
# after the call's first separating sample


class _Race:
    """The attempts (CP-SAT runs with different seeds) at one pair: the first that
    decides the pair stops the others. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._solvers: list[cp_model.CpSolver] = []
        self.decided = False

    def join(self, solver: cp_model.CpSolver) -> bool:
        """Register a solver; False if the pair is decided already (do not start)."""
        with self._lock:
            if self.decided:
                return False
            self._solvers.append(solver)
            return True

    def decide(self) -> None:
        with self._lock:
            self.decided = True
        self.stop()

    def stop(self) -> None:
        """Ask every registered solver to stop (a no-op for one not searching yet, so
        the scheduler repeats it until the losers have returned)."""
        with self._lock:
            solvers = list(self._solvers)
        for sv in solvers:
            sv.stop_search()


@dataclass
class OracleStats:
    solves: int = 0
    seconds: float = 0.0
    history: list[PairResult] = field(default_factory=list)


def reachable_paths(tree: Tree, domain: FeatureDomain) -> dict[int, list[tuple[int, int, bool]]]:
    """Leaves reachable by some allowed cell vector, with their non-redundant conditions.

    A condition (f, j, goes_left) means ``x_f <= theta_j`` (left) or ``x_f > theta_j``
    (right), j indexing the domain's thresholds of feature f. A split whose outcome is
    fixed by the conditions above it (given the allowed cells) adds no condition, and the
    branch it excludes is dropped: the simplified tree equals the tree on the domain.
    """
    allowed = [np.r_[0, np.cumsum(domain.allowed(f))] for f in range(domain.n_features)]
    n_cells = domain.n_cells()

    def any_allowed(f: int, lo: int, hi: int) -> bool:  # cells lo..hi inclusive
        return lo <= hi and allowed[f][hi + 1] - allowed[f][lo] > 0

    out: dict[int, list[tuple[int, int, bool]]] = {}
    root_bounds = {f: (0, int(n_cells[f]) - 1) for f in range(domain.n_features)}
    stack: list[tuple[int, dict[int, tuple[int, int]], list[tuple[int, int, bool]]]] = [
        (0, root_bounds, [])
    ]
    while stack:
        node, bounds, conds = stack.pop()
        if tree.left[node] == LEAF:
            out[node] = conds
            continue
        f = int(tree.feature[node])
        ths = domain.thresholds[f]
        th = np.float32(tree.threshold[node])
        j = int(np.searchsorted(ths, th))
        if j >= len(ths) or ths[j] != th:
            raise ValueError("tree threshold missing from the feature domain")
        lo, hi = bounds[f]
        can_left = any_allowed(f, lo, min(hi, j))
        can_right = any_allowed(f, max(lo, j + 1), hi)
        if can_left and can_right:
            bl = dict(bounds)
            bl[f] = (lo, min(hi, j))
            br = dict(bounds)
            br[f] = (max(lo, j + 1), hi)
            stack.append((int(tree.left[node]), bl, [*conds, (f, j, True)]))
            stack.append((int(tree.right[node]), br, [*conds, (f, j, False)]))
        elif can_left:
            stack.append((int(tree.left[node]), bounds, conds))
        elif can_right:
            stack.append((int(tree.right[node]), bounds, conds))
    return out


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


def _tree_key(t: Tree) -> bytes:
    return b"|".join(a.tobytes() for a in (t.feature, t.threshold, t.left, t.right))


class SeparationOracle:
    """Holds one CP-SAT base model (domain + every registered tree) and solves pairs on
    clones of it, so adding a learner adds its leaves instead of rebuilding."""

    def __init__(
        self,
        domain: FeatureDomain,
        original: ScoreModel,
        region: RegionSpec,
        *,
        seed: int = 0,
    ) -> None:
        self.domain = domain
        self.original = original
        self.region = region
        self.seed = seed
        self.model = cp_model.CpModel()
        self._slots: list[_Slot] = []
        self._by_key: dict[bytes, int] = {}
        self._order = self._build_features()
        self._orig_slots = [self.register(t) for t in original.trees]
        self._plaus_slots = (
            [self.register(t) for t in region.plausibility.trees] if region.plausibility else []
        )
        self._stumps = all(t.depth <= 1 for t in original.trees)
        k = len(original.base)
        self._region_conds = {y0: self._region_conditions(y0) for y0 in range(k)}
        self.stats = OracleStats()
        self._pool: tuple[np.ndarray, np.ndarray] | None = None  # (points, labels) inside
        self.use_hints = True  # CP-SAT solution hints from the pool (steer only)
        self.tree_sums = TREE_SUMS
        # how separate() spreads its threads over the pairs (benchmarks/results/
        # cpsat_params.md): "race" (one single-worker CP-SAT per pair, pairs at once; a
        # thread left idle starts another seed on an undecided pair, the first attempt
        # to decide it stops the others: single-worker searches for separating points
        # have heavy-tailed times), "parallel" (pairs at once, threads // pairs workers
        # each) or "sequential" (one pair at a time, all threads: CP-SAT's portfolio).
        # Subclasses whose _solve_pair takes no race (objective, MILP) use "parallel".
        self.schedule = "race"
        self._pair_hints: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._scores_memo: tuple[ScoreModel, np.ndarray, np.ndarray] | None = None

    # ------------------------------------------------------------------ model building
    def _build_features(self) -> list[list[cp_model.IntVar]]:
        """Order literals over the *allowed* cells only: ``lit[f][r-1]`` is true iff x_f
        lies in the r-th allowed cell or above (0-based ranks). Thresholds that separate
        no two allowed cells share a literal, so a binary feature needs one literal."""
        order = []
        self._allowed_cells = []
        self._rank = []  # rank[f][j]: number of allowed cells <= j (x_f > theta_j <=> rank >= it)
        for i in range(self.domain.n_features):
            allowed = self.domain.allowed(i)
            cells = np.flatnonzero(allowed)
            lits = [self.model.new_bool_var(f"x{i}_rank>={r}") for r in range(1, len(cells))]
            for a, b in zip(lits[1:], lits[:-1]):
                self.model.add_implication(a, b)
            order.append(lits)
            self._allowed_cells.append(cells)
            self._rank.append(np.cumsum(allowed)[:-1])
        return order

    def register(self, tree: Tree) -> int:
        """Add a tree's leaf booleans (shared with any identical tree); return its slot.

        Only leaves reachable inside the domain get a boolean, and a split that is
        constant on the cells still possible at that node adds no literal.
        """
        key = _tree_key(tree)
        if key in self._by_key:
            return self._by_key[key]
        paths = reachable_paths(tree, self.domain)
        leaves = np.array(sorted(paths), np.int64)
        zs = [self.model.new_bool_var(f"t{len(self._slots)}l{leaf}") for leaf in leaves]
        self.model.add_exactly_one(zs)
        for z, leaf in zip(zs, leaves):
            lits = []
            for f, j, goes_left in paths[int(leaf)]:
                lit = self._order[f][int(self._rank[f][j]) - 1]  # x_f > theta_j
                lits.append(lit.Not() if goes_left else lit)
            if lits:
                self.model.add_bool_and(lits).only_enforce_if(z)
        slot = len(self._slots)
        self._slots.append(_Slot(tree, leaves, np.array([z.index for z in zs], np.int64)))
        self._by_key[key] = slot
        return slot

    def _region_conditions(self, y0: int) -> list[tuple[list[int], ScaledCondition]]:
        """Integer supersets of the original-margin and plausibility conditions for y0."""
        orig = self.original
        conds = []
        for kcls in range(len(orig.base)):
            if kcls == y0:
                continue
            alphas = [
                tab[s.leaves, y0] - tab[s.leaves, kcls]
                for tab, s in zip(orig.tables, (self._slots[i] for i in self._orig_slots))
            ]
            c = Fraction(self.region.margin) - (
                Fraction(float(orig.base[y0])) - Fraction(float(orig.base[kcls]))
            )
            conds.append((self._orig_slots, scale_condition(alphas, c, strict=True)))
        if self.region.plausibility is not None and self.region.delta_abs is not None:
            pl = self.region.plausibility
            alphas = [tab[self._slots[i].leaves, 0] for tab, i in zip(pl.tables, self._plaus_slots)]
            c = Fraction(self.region.delta_abs) - Fraction(float(pl.base[0]))
            conds.append((self._plaus_slots, scale_condition(alphas, c, strict=False)))
        return conds

    def _post(self, m: cp_model.CpModel, slots: list[int], cond: ScaledCondition) -> None:
        """Post ``sum coefs * z >= rhs`` (coefficients shifted to be non-negative).

        A right-hand side below the smallest reachable sum is dropped (always true); one
        above the largest makes the model infeasible outright; either way CP-SAT never
        sees a bound outside int64.

        Where ``self.tree_sums`` says so (:meth:`_per_tree`): the same integers, with one
        variable per tree holding its leaf's coefficient (domain: the tree's distinct
        coefficients) and the condition on their sum, instead of one long sum over every
        leaf boolean.
        """
        terms: list[tuple[list[int], list[int]]] = []  # per tree: (leaf var indices, coefs)
        rhs = cond.rhs
        top = 0
        for slot, a in zip(slots, cond.coefs):
            lo = int(a.min()) if a.size else 0
            rhs -= lo  # exactly one leaf per tree: shift to non-negative coefficients
            nz = np.flatnonzero(a != lo)
            if nz.size:
                terms.append(
                    (
                        [int(v) for v in self._slots[slot].var_index[nz]],
                        [int(v) for v in (a[nz] - lo)],
                    )
                )
            top += int(a.max()) - lo if a.size else 0
        if rhs <= 0:
            return  # every leaf combination satisfies it
        if rhs > top:
            m.add_bool_or([])  # no leaf combination satisfies it
            return
        if not self._per_tree(slots):
            vars_ = [m.get_bool_var_from_proto_index(i) for ix, _ in terms for i in ix]
            coefs = [c for _, cs in terms for c in cs]
            m.add(cp_model.LinearExpr.weighted_sum(vars_, coefs) >= rhs)
            return
        sums = []
        for ix, cs in terms:
            d = m.new_int_var_from_domain(cp_model.Domain.from_values([0, *cs]), "")
            zs = [m.get_bool_var_from_proto_index(i) for i in ix]
            m.add(d == cp_model.LinearExpr.weighted_sum(zs, cs))  # one leaf: d is its coef
            sums.append(d)
        m.add(cp_model.LinearExpr.sum(sums) >= rhs)

    def _per_tree(self, slots: list[int]) -> bool:
        """Whether a condition over ``slots`` is posted with one variable per tree."""
        if self.tree_sums == "all":
            return True
        return self.tree_sums == "plausibility" and slots is self._plaus_slots

    # ------------------------------------------------------- enumeration pre-search
    def _grid(self):
        """All allowed cell representatives when the domain is small, else None (cached).

        Also caches, per grid point, the original's label if the point is clearly inside
        the region (float64 margin above c_o by a safety slack; same for A(x)), else -1.
        """
        if hasattr(self, "_grid_cache"):
            return self._grid_cache
        sizes = [len(c) for c in self._allowed_cells]
        self._grid_cache = None
        self._grid_labels = None  # the labels on the whole product, shaped ``sizes``
        if float(np.prod([float(v) for v in sizes])) <= ENUM_LIMIT:
            reps = [self.domain.reps[f][c] for f, c in enumerate(self._allowed_cells)]
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
        if self._grid() is None:
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
        return self._grid() is not None

    def enumerate_separation(
        self, compressed: ScoreModel, e_req: float, per_pair: int = 25
    ) -> list[PairResult]:
        """Cheap pre-search on small domains: separating samples found by evaluating every
        cell clearly inside the region. Finds samples only; it never proves anything."""
        g = self._grid()
        if g is None or len(g[0]) == 0:
            return []
        grid, y0 = g
        return self._violations(grid, y0, compressed, e_req, per_pair)

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
            [np.searchsorted(self._allowed_cells[f], cells[:, f]) for f in range(F)], axis=1
        )
        sizes = np.array([len(c) for c in self._allowed_cells])
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
            np.stack([self._allowed_cells[f][all_ranks[:, f]] for f in range(F)], axis=1)
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
        PX = np.concatenate([self._pool[0], X])
        Py = np.concatenate([self._pool[1], y0])
        PX, idx = np.unique(PX, axis=0, return_index=True)
        self._pool = (PX, Py[idx])
        return len(PX)

    def pool_size(self) -> int:
        return 0 if self._pool is None else len(self._pool[0])

    def screen(self, compressed: ScoreModel, e_req: float, per_pair: int = 25) -> list[PairResult]:
        """Cheap pre-search: every cell on small domains (:meth:`enumerate_separation`),
        else the sample pool. Finds separating samples only; it never proves anything."""
        if self.can_enumerate():
            return self.enumerate_separation(compressed, e_req, per_pair)
        if self._pool is None:
            return []
        return self._violations(*self._pool, compressed, e_req, per_pair)

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

    def _scores_on(self, model: ScoreModel, X: np.ndarray) -> np.ndarray:
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

    def _violations(
        self, X: np.ndarray, y0: np.ndarray, compressed: ScoreModel, e_req: float, per_pair: int
    ) -> list[PairResult]:
        """Rows (labelled y0, all inside) where the compressed model fails the margin,
        at most ``per_pair`` per ordered pair, most violated first."""
        if len(X) == 0:
            return []
        S = self._scores_on(compressed, X)
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
        deadline: float | None = None,
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
        after ``patience`` steps in a row without a larger gap than any before, or at
        ``deadline`` (a ``time.perf_counter()`` value)."""
        if self._pool is None or len(self._pool[0]) == 0 or steps <= 0:
            return []
        PX, Py = self._pool
        gap = _gap(compressed, PX, Py)
        beam = PX[np.argsort(-gap, kind="stable")[:width]]
        seen = {row.tobytes() for row in beam}
        top, flat = float(gap.max()), 0
        for _ in range(steps):
            if deadline is not None and time.perf_counter() >= deadline:
                return []
            X = np.unique(np.concatenate([self._moves(x) for x in beam]), axis=0)
            fresh = np.array([row.tobytes() not in seen for row in X], bool)
            X = X[fresh]
            seen.update(row.tobytes() for row in X)
            y0 = self.inside_labels(X) if len(X) else np.zeros(0, np.int64)
            X, y0 = X[y0 >= 0], y0[y0 >= 0]
            if len(X) == 0:
                return []
            found = self._violations(X, y0, compressed, e_req, per_pair)
            if found:
                return found
            g = _gap(compressed, X, y0)
            beam = X[np.argsort(-g, kind="stable")[:width]]
            flat = flat + 1 if g.max() <= top else 0
            top = max(top, float(g.max()))
            if flat >= patience:
                return []
        return []

    def _moves(self, x: np.ndarray) -> np.ndarray:
        """Cell representatives differing from ``x`` in one feature's cell (x included)."""
        blocks = []
        for f, cells in enumerate(self._allowed_cells):
            vals = self.domain.reps[f][cells]
            block = np.repeat(np.asarray(x, np.float32)[None, :], len(vals), axis=0)
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
        return self._violations(X[keep], y0[keep], compressed, e_req, per_pair)

    def _one_cell_moves(self, points: list[np.ndarray]) -> np.ndarray:
        """Distinct float32 points differing from one of ``points`` in one feature's cell
        (cell representatives)."""
        return np.unique(np.concatenate([self._moves(x) for x in points]), axis=0)

    # ------------------------------------------------------------------------ solving
    def separate(
        self,
        compressed: ScoreModel,
        e_req: float,
        pairs: list[tuple[int, int]] | None = None,
        *,
        threads: int = 1,
        time_limit: float | None = None,
        until_found: bool = False,
    ) -> list[PairResult]:
        """Solve every ordered pair with ``threads`` threads, as ``self.schedule`` says.

        ``until_found`` (racing schedule only): once some pair has a separating sample,
        a pair still undecided after searching for ``max(FOUND_GRACE_SECONDS, time to
        that first sample)`` since then (or since it started, if later) is stopped and
        reported UNKNOWN; pairs not started yet still get that long. For a loop that
        re-solves whenever a sample is found: a proof for this candidate would be thrown
        away with it. Never changes a call that finds no sample."""
        comp_slots = [self.register(t) for t in compressed.trees]
        k = len(self.original.base)
        if pairs is None:
            pairs = [(a, b) for a in range(k) for b in range(k) if a != b]
        schedule = self.schedule_for(threads, len(pairs))
        workers = max(1, threads if schedule == "sequential" else threads // max(1, len(pairs)))
        self._pair_hints = self._hints(compressed, pairs) if self.use_hints else {}
        deadline = None if time_limit is None else time.perf_counter() + time_limit
        args = [(y0, y, compressed, comp_slots, e_req, workers, deadline) for y0, y in pairs]
        if schedule == "race":
            results = self._race(
                pairs, compressed, comp_slots, e_req, threads, deadline, until_found
            )
        elif schedule == "parallel":
            with ThreadPoolExecutor(max_workers=min(threads, len(pairs))) as ex:
                results = list(ex.map(lambda a: self._solve_pair(*a), args))
        else:
            results = [self._solve_pair(*a) for a in args]
        self.stats.solves += len(results)
        self.stats.seconds += sum(r.seconds for r in results)
        return results

    def schedule_for(self, threads: int, n_pairs: int) -> str:
        """The schedule :meth:`separate` runs with ``threads`` threads on ``n_pairs``
        pairs: ``self.schedule``, except that one thread always solves the pairs one at
        a time, and "parallel" does too with a single pair."""
        if threads > 1 and self.schedule == "race":
            return "race"
        if threads > 1 and n_pairs > 1 and self.schedule == "parallel":
            return "parallel"
        return "sequential"

    def race_linearization(self) -> tuple[int, ...]:
        """CP-SAT ``linearization_level`` of racing attempts 0, 1, ... (cycled)."""
        if self._plaus_slots:
            return RACE_LINEARIZATION_PLAUSIBLE
        return RACE_LINEARIZATION_STUMPS if self._stumps else RACE_LINEARIZATION

    def _race(
        self,
        pairs: list[tuple[int, int]],
        comp: ScoreModel,
        comp_slots: list[int],
        e_req: float,
        threads: int,
        deadline: float | None,
        until_found: bool = False,
    ) -> list[PairResult]:
        """The "race" schedule: ``threads`` single-worker CP-SAT runs at a time. Pairs
        start in order with the oracle's seed; a thread with no pair left to start runs
        another seed (seed + attempt number) on the undecided pair with the fewest
        attempts. When every thread is busy, one more attempt may start on a pair whose
        last attempt has run ``ESCALATE_SECONDS * 2**(attempts - 1)`` (two pairs both
        stuck in a heavy tail leave no thread idle). A pair's result is its first
        FEASIBLE or INFEASIBLE attempt (each a complete, checked answer); UNKNOWN only
        when every attempt ended undecided. ``until_found``: see :meth:`separate`."""
        t_start = time.perf_counter()
        found_at: float | None = None
        levels = self.race_linearization()
        queue = list(pairs)
        attempts = {pr: 0 for pr in pairs}
        races = {pr: _Race() for pr in pairs}
        results: dict[tuple[int, int], PairResult] = {}
        live: dict[Future, tuple[int, int]] = {}
        started: dict[tuple[int, int], float] = {}  # when each pair's last attempt began
        first_start: dict[tuple[int, int], float] = {}  # when its first attempt began

        def launch(ex: ThreadPoolExecutor) -> None:
            while len(live) <= threads:
                now = time.perf_counter()
                if deadline is not None and now >= deadline:
                    return
                open_ = [q for q in pairs if q not in results and attempts[q] < MAX_ATTEMPTS]
                if len(live) == threads:  # busy: only a pair stuck for a while gets a twin
                    open_ = [
                        q
                        for q in open_
                        if q in started
                        and now - started[q] >= ESCALATE_SECONDS * 2 ** (attempts[q] - 1)
                    ]
                if queue and len(live) < threads:
                    pr = queue.pop(0)
                elif open_:
                    pr = min(open_, key=lambda q: attempts[q])
                else:
                    return
                attempt = attempts[pr]
                attempts[pr] += 1
                started[pr] = now
                first_start.setdefault(pr, now)
                fut = ex.submit(
                    self._solve_pair, *pr, comp, comp_slots, e_req, 1, deadline,
                    race=races[pr], seed=self.seed + attempt,
                    linearization=levels[attempt % len(levels)],
                )  # fmt: skip
                live[fut] = pr

        with ThreadPoolExecutor(max_workers=threads + 1) as ex:
            launch(ex)
            while live:
                done, _ = wait(list(live), timeout=0.05, return_when=FIRST_COMPLETED)
                for fut in done:
                    pr = live.pop(fut)
                    r = fut.result()
                    if pr in results:
                        continue  # a loser, stopped
                    if r.status in ("FEASIBLE", "INFEASIBLE"):
                        results[pr] = r
                        races[pr].decide()
                        if r.status == "FEASIBLE" and found_at is None:
                            found_at = time.perf_counter()
                    elif not any(q == pr for q in live.values()):
                        results[pr] = r  # UNKNOWN: time limit or the nogood cap
                        attempts[pr] = MAX_ATTEMPTS
                if until_found and found_at is not None:
                    now = time.perf_counter()
                    grace = max(FOUND_GRACE_SECONDS, found_at - t_start)
                    for pr in pairs:  # the round has a sample: stop the long searches
                        if (
                            pr not in results
                            and pr in first_start
                            and now - max(found_at, first_start[pr]) >= grace
                        ):
                            attempts[pr] = MAX_ATTEMPTS
                            races[pr].decide()
                for pr, race in races.items():
                    if pr in results or race.decided:
                        race.stop()  # repeated: a loser may not have been searching yet
                if all(pr in results for pr in pairs):
                    continue  # wait for the stopped losers only
                launch(ex)
        # pairs the deadline stopped before a first attempt: undecided, as in the other
        # schedules (whose attempts return UNKNOWN at once past the deadline)
        return [results.get(pr) or PairResult(*pr, "UNKNOWN") for pr in pairs]

    def _solve_pair(
        self,
        y0: int,
        y: int,
        comp: ScoreModel,
        comp_slots: list[int],
        e_req: float,
        workers: int,
        deadline: float | None,
        *,
        race: _Race | None = None,
        seed: int | None = None,
        linearization: int | None = None,
    ) -> PairResult:
        t0 = time.perf_counter()
        m = self.model.clone()
        hint = self._pair_hints.get((y0, y))
        if hint is not None:
            m.proto.solution_hint.vars.extend(hint[0].tolist())
            m.proto.solution_hint.values.extend(hint[1].tolist())
        region_err = 0.0
        for slots, cond in self._region_conds[y0]:
            self._post(m, slots, cond)
            region_err = max(region_err, cond.error_bound)
        alphas = [
            tab[self._slots[s].leaves, y] - tab[self._slots[s].leaves, y0]
            for tab, s in zip(comp.tables, comp_slots)
        ]
        c = Fraction(-e_req) - (Fraction(float(comp.base[y])) - Fraction(float(comp.base[y0])))
        sep = scale_condition(alphas, c, strict=False)
        self._post(m, comp_slots, sep)
        res = PairResult(y0, y, "UNKNOWN", scale_exp=sep.scale_exp, error_bound=sep.error_bound)
        res.region_error_bound = region_err
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = workers
        solver.parameters.random_seed = self.seed if seed is None else seed
        for key, value in CPSAT_PARAMS.items():
            setattr(solver.parameters, key, value)
        if linearization is not None:
            solver.parameters.linearization_level = linearization
        if race is not None and not race.join(solver):
            res.seconds = time.perf_counter() - t0
            return res  # another attempt decided the pair already
        for _ in range(MAX_SPURIOUS + 1):
            if deadline is not None:
                left = deadline - time.perf_counter()
                if left <= 0:
                    break
                solver.parameters.max_time_in_seconds = left
            if race is not None and race.decided:
                break
            status = solver.solve(m)
            res.conflicts += int(solver.num_conflicts)
            res.branches += int(solver.num_branches)
            if status == cp_model.INFEASIBLE:
                res.status = "INFEASIBLE"
                break
            if status not in (cp_model.FEASIBLE, cp_model.OPTIMAL):
                break  # UNKNOWN (time limit) or MODEL_INVALID: never a proof
            x = self._point(solver)
            leaves = self._leaves_at(x)
            self._check_leaves(solver, leaves)
            if self._in_region(y0, leaves):
                res.status, res.point = "FEASIBLE", x
                break
            res.spurious += 1  # inside the rounding slack only: exclude its leaves, go on
            m.add_bool_or(
                [
                    m.get_bool_var_from_proto_index(
                        int(
                            self._slots[s].var_index[
                                np.searchsorted(self._slots[s].leaves, leaves[s])
                            ]
                        )
                    ).Not()
                    for s in [*self._orig_slots, *self._plaus_slots]
                ]
            )
        res.seconds = time.perf_counter() - t0
        return res

    def _hints(
        self, compressed: ScoreModel, pairs: list[tuple[int, int]]
    ) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]:
        """Per pair, a CP-SAT solution hint (proto indices, values): a known point inside
        the region (label y0) where the compressed model comes closest to predicting y,
        i.e. the largest S'_y - S'_y0 over the screening pool, or over the enumerated
        cells on small domains. It starts the search next to where separating samples
        tend to be (seeds RF25: a FEASIBLE pair 3.3 s -> 0.7 s; 1.26x over all cases of
        `benchmarks/results/cpsat_params.md`).
        A hint only steers the search; it changes no constraint and no status."""
        g = self._grid() if self.can_enumerate() else self._pool
        if g is None or len(g[0]) == 0:
            return {}
        X, lab = g
        S = self._scores_on(compressed, X)
        by_row: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        out = {}
        for y0, y in pairs:
            rows = np.flatnonzero(lab == y0)
            if len(rows):
                i = int(rows[int(np.argmax(S[rows, y] - S[rows, y0]))])
                if i not in by_row:
                    by_row[i] = self._assignment(X[i])
                out[(y0, y)] = by_row[i]
        return out

    def _leaves_at(self, x: np.ndarray) -> list[int]:
        """The leaf of every registered tree (slot order) at the float32 point ``x``."""
        row = np.asarray(x, np.float32)[None, :]
        return [int(s.tree.apply(row)[0]) for s in self._slots]

    def _assignment(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(proto indices, 0/1 values) of every order literal and leaf boolean at ``x``."""
        cells = self.domain.cell_index(np.asarray(x, np.float32)[None, :])[0]
        idx, val = [], []
        for f, lits in enumerate(self._order):
            rank = int(np.searchsorted(self._allowed_cells[f], cells[f]))
            idx.append(np.array([lit.index for lit in lits], np.int64))
            val.append((np.arange(len(lits)) < rank).astype(np.int64))
        for s, leaf in zip(self._slots, self._leaves_at(x)):
            idx.append(s.var_index)
            val.append((s.leaves == leaf).astype(np.int64))
        return np.concatenate(idx), np.concatenate(val)

    def _point(self, solver: cp_model.CpSolver) -> np.ndarray:
        cells = np.array(
            [
                self._allowed_cells[f][sum(int(solver.boolean_value(lit)) for lit in lits)]
                for f, lits in enumerate(self._order)
            ],
            np.int64,
        )
        return self.domain.representative(cells)

    def _check_leaves(self, solver: cp_model.CpSolver, leaves: list[int]) -> None:
        for s, leaf in zip(self._slots, leaves):
            j = int(np.searchsorted(s.leaves, leaf))
            var = self.model.get_bool_var_from_proto_index(int(s.var_index[j]))
            if not solver.boolean_value(var):
                raise AssertionError("CP-SAT leaf assignment disagrees with the representative")

    def _in_region(self, y0: int, leaves: list[int]) -> bool:
        """Exact (rational) membership of the point's leaves in the stated region."""
        orig_leaves = [leaves[s] for s in self._orig_slots]
        sc = self.original.exact_scores(orig_leaves)
        margin = Fraction(self.region.margin)
        if any(sc[y0] - sc[k] <= margin for k in range(len(sc)) if k != y0):
            return False
        pl = self.region.plausibility
        if pl is not None and self.region.delta_abs is not None:
            a = pl.exact_scores([leaves[s] for s in self._plaus_slots])[0]
            if a < Fraction(self.region.delta_abs):
                return False
        return True
