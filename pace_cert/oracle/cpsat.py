"""Separation oracle on OR-Tools CP-SAT (paper §4, constraint-based).

For an ordered label pair (y0, y) the oracle searches a float32 input x with

    original:     S_y0(x) - S_k(x) > c_o           for every k != y0   (confidence region)
    plausibility: A(x) >= delta_abs                                     (if delta > 0)
    compressed:   S'_y(x) - S'_y0(x) >= -E_req                           (separation)

Model: per feature, order literals ``x_i > theta_j``; per tree, one boolean per leaf,
ExactlyOne, and ``z_leaf => path literals``. Trees with identical structure share
their leaf booleans (a pruned model reuses the original's). Every real condition is
scaled by :mod:`pace_cert.region.scaling` into a *superset* integer condition; a point
that satisfies the integer model but not the real region (possible only within the
rounding slack) is checked with exact rationals and excluded by a nogood on its leaves,
and the search continues. A pair is proved only on status INFEASIBLE; a time limit
gives UNKNOWN.

The pairs of one call are spread over threads by :mod:`pace_cert.oracle.schedule`;
the screen (:mod:`pace_cert.oracle.screen`) may supply solution hints. Each CP-SAT
solve runs in the calling thread (``settings.backend`` "local") or as a Ray task
("ray", :mod:`pace_cert.oracle.ray_backend`); everything else stays here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model

from pace_cert.model.ensemble import LEAF, Tree
from pace_cert.oracle.schedule import (
    LevelOrder,
    Race,
    run_parallel,
    run_race,
    run_sequential,
    schedule_for,
)
from pace_cert.oracle.score_model import PairResult, RegionSpec, ScoreModel
from pace_cert.oracle.screen import Screen
from pace_cert.oracle.settings import BACKENDS, OracleSettings
from pace_cert.plumbing.budget import Budget
from pace_cert.plumbing.memory import give_back
from pace_cert.region.domain import FeatureDomain
from pace_cert.region.scaling import ScaledCondition, scale_condition


@dataclass
class _Slot:
    tree: Tree
    leaves: np.ndarray
    var_index: np.ndarray  # proto index of each leaf boolean


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


def _value_literals(
    m: cp_model.CpModel, d: cp_model.IntVar, zs: list[cp_model.IntVar], cs: list[int]
) -> None:
    """Tie ``d`` = sum(cs * zs) (at most one of ``zs`` true, coefficients > 0; none true
    means d = 0) to its values: per distinct value v a literal b <=> (d == v), and b
    implies some leaf of value v (for v = 0: no leaf of ``zs``). Redundant, so the
    solutions are the same; but once a value's leaves are ruled out, v leaves d's domain,
    where bound propagation on the sum alone still counts every open leaf's value
    (docs/decisions/0004-tree-sums.md)."""
    by_value: dict[int, list[cp_model.IntVar]] = {}
    for z, c in zip(zs, cs):
        by_value.setdefault(c, []).append(z)
    support = [(0, [z.Not() for z in zs])] + [(v, group) for v, group in by_value.items()]
    for v, group in support:
        b = m.new_bool_var("")
        m.add(d == v).only_enforce_if(b)
        m.add(d != v).only_enforce_if(b.Not())
        if v == 0:
            m.add_bool_and(group).only_enforce_if(b)  # d == 0: no leaf of zs
        else:
            m.add_bool_or(group).only_enforce_if(b)  # d == v: one of v's leaves


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
        settings: OracleSettings | None = None,
        hints: Screen | None = None,
    ) -> None:
        """``hints``: a screen whose points start each pair's search (solution hints,
        when ``settings.use_hints``); they steer only, never change a status."""
        self.domain = domain
        self.original = original
        self.region = region
        self.seed = seed
        self.settings = OracleSettings() if settings is None else settings
        self.hints = hints
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
        self._pair_hints: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._ray = None  # RayPool, on the first call with settings.backend "ray"
        self._levels: LevelOrder | None = None  # the race's level order, kept across calls

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

    def _post(
        self,
        m: cp_model.CpModel,
        slots: list[int],
        cond: ScaledCondition,
        links: str | None = None,
    ) -> None:
        """Post ``sum coefs * z >= rhs`` (coefficients shifted to be non-negative).

        A right-hand side below the smallest reachable sum is dropped (always true); one
        above the largest makes the model infeasible outright; either way CP-SAT never
        sees a bound outside int64.

        Where ``self.tree_sums`` says so (:meth:`_per_tree`): the same integers, with one
        variable per tree holding its leaf's coefficient (domain: the tree's distinct
        coefficients) and the condition on their sum, instead of one long sum over every
        leaf boolean. Each tree's variable is tied to its leaves as ``links`` says
        (default ``settings.sum_links``; "values": :func:`_value_literals`).
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
            if (links or self.settings.sum_links) == "values":
                _value_literals(m, d, zs, cs)
            sums.append(d)
        m.add(cp_model.LinearExpr.sum(sums) >= rhs)

    def _links(self, seed: int | None) -> str:
        """``sum_links`` of an attempt: the settings' outside the race (``seed`` None),
        else racing attempt k's entry of ``race_sum_links`` (cycled; k = seed - self.seed)."""
        cycle = self.settings.race_sum_links
        if seed is None or not cycle:
            return self.settings.sum_links
        return cycle[(seed - self.seed) % len(cycle)]

    def _per_tree(self, slots: list[int]) -> bool:
        """Whether a condition over ``slots`` is posted with one variable per tree."""
        if self.settings.tree_sums == "all":
            return True
        return self.settings.tree_sums == "plausibility" and slots is self._plaus_slots

    # ------------------------------------------------------------------------ solving
    def separate(
        self,
        compressed: ScoreModel,
        e_req: float,
        pairs: list[tuple[int, int]] | None = None,
        *,
        threads: int = 1,
        budget: Budget | None = None,
        until_found: bool = False,
    ) -> list[PairResult]:
        """Solve every ordered pair (default: all of them) with ``threads`` threads, as
        ``settings.schedule`` says (:mod:`pace_cert.oracle.schedule`), within
        ``budget``; a pair the budget stops is UNKNOWN. ``until_found``: see
        :func:`pace_cert.oracle.schedule.run_race`."""
        comp_slots = [self.register(t) for t in compressed.trees]
        if self.settings.backend not in BACKENDS:
            raise ValueError(f"OracleSettings.backend must be one of {BACKENDS}")
        if self.settings.backend == "ray" and self._ray is None:
            from pace_cert.oracle.ray_backend import RayPool

            st = self.settings
            self._ray = RayPool(st.ray_address, threads, st.ray_retries)
        k = len(self.original.base)
        if pairs is None:
            pairs = [(a, b) for a in range(k) for b in range(k) if a != b]
        schedule = self.schedule_for(threads, len(pairs))
        self._pair_hints = self._hints(compressed, pairs) if self.settings.use_hints else {}
        deadline = None if budget is None else budget.deadline

        def attempt(pr, workers, dl, race=None, seed=None, linearization=None) -> PairResult:
            if race is None:  # parallel, sequential: the oracle's seed and levels
                return self._solve_pair(*pr, compressed, comp_slots, e_req, workers, dl)
            return self._solve_pair(
                *pr, compressed, comp_slots, e_req, workers, dl,
                race=race, seed=seed, linearization=linearization,
            )  # fmt: skip

        if schedule == "race":
            results = run_race(
                pairs, attempt, threads, deadline, seed=self.seed,
                levels=self._level_order(), settings=self.settings,
                until_found=until_found,
            )  # fmt: skip
        elif schedule == "parallel":
            results = run_parallel(pairs, attempt, threads, deadline)
        else:
            results = run_sequential(pairs, attempt, threads, deadline)
        self.stats.solves += len(results)
        self.stats.seconds += sum(r.seconds for r in results)
        give_back(collect=True)  # once a round: what the round dropped, cycles included
        return results

    def schedule_for(self, threads: int, n_pairs: int) -> str:
        """The schedule :meth:`separate` runs with ``threads`` threads on ``n_pairs``
        pairs (:func:`pace_cert.oracle.schedule.schedule_for`)."""
        return schedule_for(self.settings.schedule, threads, n_pairs)

    def _level_order(self) -> LevelOrder:
        """The race's level order, first :meth:`race_linearization`, then what won."""
        if self._levels is None:
            self._levels = LevelOrder(self.race_linearization())
        return self._levels

    def race_linearization(self) -> tuple[int, ...]:
        """CP-SAT ``linearization_level`` of racing attempts 0, 1, ... (cycled)."""
        st = self.settings
        if self._plaus_slots:
            return st.race_linearization_plausible
        return st.race_linearization_stumps if self._stumps else st.race_linearization

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
        race: Race | None = None,
        seed: int | None = None,
        linearization: int | None = None,
    ) -> PairResult:
        t0 = time.perf_counter()
        if deadline is not None and t0 >= deadline:  # no time: not even the model's copy
            return PairResult(y0, y, "UNKNOWN")  # (building one costs ~0.4 s on 100 trees)
        m = self.model.clone()
        hint = self._pair_hints.get((y0, y))
        if hint is not None:
            m.proto.solution_hint.vars.extend(hint[0].tolist())
            m.proto.solution_hint.values.extend(hint[1].tolist())
        region_err = 0.0
        links = self._links(seed)
        for slots, cond in self._region_conds[y0]:
            self._post(m, slots, cond, links)
            region_err = max(region_err, cond.error_bound)
        alphas = [
            tab[self._slots[s].leaves, y] - tab[self._slots[s].leaves, y0]
            for tab, s in zip(comp.tables, comp_slots)
        ]
        c = Fraction(-e_req) - (Fraction(float(comp.base[y])) - Fraction(float(comp.base[y0])))
        sep = scale_condition(alphas, c, strict=False)
        self._post(m, comp_slots, sep, links)
        res = PairResult(y0, y, "UNKNOWN", scale_exp=sep.scale_exp, error_bound=sep.error_bound)
        res.region_error_bound = region_err
        solver = self._new_solver()
        solver.parameters.num_workers = workers
        solver.parameters.random_seed = self.seed if seed is None else seed
        for key, value in self.settings.cpsat_params.items():
            setattr(solver.parameters, key, value)
        if linearization is not None:
            solver.parameters.linearization_level = linearization
        if race is not None and not race.join(solver):
            res.seconds = time.perf_counter() - t0
            return res  # another attempt decided the pair already
        for _ in range(self.settings.max_spurious + 1):
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
            res.solve_seconds += float(solver.wall_time)
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
            m.add_bool_or(self._nogood(m, leaves, [*self._orig_slots, *self._plaus_slots]))
        if res.status == "FEASIBLE" and self.settings.harvest:
            self._harvest(m, solver, res, leaves, deadline, race)
        res.seconds = time.perf_counter() - t0
        return res

    def _nogood(self, m: cp_model.CpModel, leaves: list[int], slots: list[int]) -> list:
        """Literals of which one must hold: some tree of ``slots`` leaves its leaf in
        ``leaves`` (slot order)."""
        return [
            m.get_bool_var_from_proto_index(
                int(self._slots[s].var_index[np.searchsorted(self._slots[s].leaves, leaves[s])])
            ).Not()
            for s in slots
        ]

    def _harvest(self, m, solver, res: PairResult, leaves: list[int], deadline, race) -> None:
        """``settings.harvest`` more separating samples of the pair into ``res.extra``:
        each solve excludes the original's leaf pattern of every sample before it, so each
        sample is a new margin row for the master. Points outside the region (rounding
        slack) are excluded and not kept. Stops at the first solve that finds nothing
        (INFEASIBLE here proves nothing: the nogoods cut the space), at the deadline, or
        when the pair's race is decided elsewhere."""
        tries = 0
        while len(res.extra) < self.settings.harvest and tries < 2 * self.settings.harvest:
            tries += 1
            m.add_bool_or(self._nogood(m, leaves, self._orig_slots))
            cap = self.settings.harvest_seconds
            if deadline is not None:
                cap = min(cap, deadline - time.perf_counter())
            if cap <= 0 or (race is not None and race.decided):
                return
            solver.parameters.max_time_in_seconds = cap
            status = solver.solve(m)
            res.solve_seconds += float(solver.wall_time)
            if status not in (cp_model.FEASIBLE, cp_model.OPTIMAL):
                return
            x = self._point(solver)
            leaves = self._leaves_at(x)
            self._check_leaves(solver, leaves)
            if self._in_region(res.y0, leaves):
                res.extra.append(x)

    def _new_solver(self):
        """A CP-SAT solver for one attempt: ``CpSolver`` here, or its Ray stand-in
        (:class:`~pace_cert.oracle.ray_backend.RaySolver`), which sends the model to a
        task and brings back the values of the order literals and leaf booleans."""
        if self._ray is None:
            return cp_model.CpSolver()
        order = [lit.index for lits in self._order for lit in lits]
        decode = np.concatenate([np.array(order, np.int64), *(s.var_index for s in self._slots)])
        return self._ray.solver(decode)

    def _hints(
        self, compressed: ScoreModel, pairs: list[tuple[int, int]]
    ) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]:
        """Per pair, a CP-SAT solution hint (proto indices, values): the screen's known
        point inside the region (label y0) where the compressed model comes closest to
        predicting y (:meth:`Screen.hint_points`). It starts the search next to where
        separating samples tend to be (docs/decisions/0002-race-schedule.md). A hint
        only steers the search; it changes no constraint and no status."""
        if self.hints is None:
            return {}
        by_point: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
        out = {}
        for pair, x in self.hints.hint_points(compressed, pairs).items():
            key = x.tobytes()
            if key not in by_point:
                by_point[key] = self._assignment(x)
            out[pair] = by_point[key]
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
