"""Step (mode tree): one decision tree, certified faithful in the region.

The faithful loop with a tree builder as its master: each round fits a tree pure on the
labelled forest cells (:mod:`pace_cert.learners.region_cells`: every region cell when
the domain can be enumerated; else the cells of the known region points, of the region
points found next to them, and of every separating sample so far) with
:func:`pace_cert.learners.region_tree.fit_cell_tree`, and the oracle certifies it or
returns separating samples, whose cells (and the region cells next to them) join the
next fit: counterexample-guided. The tree splits on the original's own thresholds, its
leaves one-hot; the certificate's proof is CP-SAT's, as for every other model.

Two passes: quick fits (the exact program only on small nodes, ``tree.first_boxes``)
until one certifies, then, with the time left, a fit with the exact program on every
node of at most ``tree.exact_boxes`` sub-boxes, certified the same way and kept when it
has fewer leaves.

When a fit is the exact program's at its root and its cells are exact region points on
a grid no finer than the original's (no plausibility thresholds), its leaf count is a
lower bound for every faithful tree within the depth cap: a faithful tree is pure on
those points, and any split of them is one of the original's cuts.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.result import Offer, PhaseResult, TreeReport
from pace_cert.driver.state import RunState
from pace_cert.driver.step import BaseStep
from pace_cert.learners.pool import fold
from pace_cert.learners.region_cells import (
    ForestGrid,
    LabelledCells,
    confident_cells,
    enumerable,
    flood_fill,
    region_cells,
    region_points,
)
from pace_cert.learners.region_tree import (
    CellTree,
    NoTreeWithinCaps,
    fit_cell_tree,
    refit_leaves,
)
from pace_cert.master.rows import MasterSolution
from pace_cert.model.ensemble import Ensemble
from pace_cert.model.onnx_graph import OnnxModelInfo
from pace_cert.model.onnx_reader import ensemble_from_model
from pace_cert.model.onnx_writer import tree_classifier_to_onnx
from pace_cert.plumbing.budget import Budget


def known_points(state: RunState) -> tuple[np.ndarray, np.ndarray]:
    """Region points known so far: the samples and the screening pool's points that are
    exactly inside the region (float32 rows, the original's class indices)."""
    state.ensure_pool()
    PX, _ = state.screen.pool_points()
    PX, Py = region_points(state.original, state.region.margin, state.plausibility, PX)
    return np.vstack([state.X, PX]), np.concatenate([state.y0, Py]).astype(np.int64)


def bound_holds(state: RunState, grid: ForestGrid) -> bool:
    """Whether a tree's fewest leaves on exact region cells bounds every faithful tree:
    every domain threshold is one of the original's (no plausibility cuts inside a
    forest cell), so every split of the points is one the exact program considers."""
    return all(np.isin(d, g).all() for d, g in zip(state.domain.thresholds, grid.thresholds))


class TreeSearch:
    """The labelled cells of one run and the fits on them (see the module docstring)."""

    def __init__(self, state: RunState, budget: Budget, max_depth: int | None) -> None:
        # ``budget``: the step's; each pass (:meth:`certify`) works within its own
        self.state, self.budget, self.max_depth = state, budget, max_depth
        cfg = state.cfg
        self.tuning = cfg.tuning.tree
        self.grid = ForestGrid.of(state.original)
        known = known_points(state)
        self.cells = region_cells(
            state.original,
            self.grid,
            state.domain,
            state.region.margin,
            state.plausibility,
            known,
            self.tuning.enum_cells,
            budget.expired,
        )
        self.flooded = 0  # samples whose neighbourhood was flooded already
        self.last: CellTree | None = None  # the last fit, refit leaf by leaf when incremental
        self.incremental = False
        self.provable = bound_holds(state, self.grid)
        self.report = TreeReport(
            complete=self.cells.complete, max_depth=max_depth, max_leaves=cfg.max_leaves
        )
        if not self.cells.complete:
            self._flood(known[0])
        self.flooded = len(state.X)  # the samples were among the known points
        state.say(
            f"[tree] {len(self.cells)} labelled cells of the original's threshold grid"
            + (" (every region cell)" if self.cells.complete else " (known region points)")
        )

    def _flood(self, X: np.ndarray) -> None:
        """Label the region cells next to those of the points ``X`` (not complete)."""
        s = self.state
        P, y = flood_fill(
            s.original, self.grid, s.domain, s.region.margin, s.plausibility, X,
            self.tuning.flood_points, self.budget.share(0.2).expired, known=self.cells,
        )  # fmt: skip
        self.cells.add_points(P, y)

    def fit(self, exact_boxes: int, cells: LabelledCells | None = None) -> CellTree | None:
        """A tree pure on the labelled cells (the samples' cells added, their
        neighbourhood flooded first), or on ``cells`` when given (a complete superset);
        None when none within the caps (the reason is recorded)."""
        s, cfg = self.state, self.state.cfg
        region = cells is None  # the run's cells: exact region points (a superset is not)
        if cells is None:
            if not self.cells.complete and len(s.X) > self.flooded:
                self._flood(s.X[self.flooded :])
            self.flooded = len(s.X)
            self.cells.add_points(s.X, s.y0)
            cells = self.cells
        else:
            cells.add_points(s.X, s.y0)
        coords, labels = cells.arrays()
        self.report.cells = len(labels)
        fit = {
            "exact_boxes": exact_boxes,
            "dense_cells": self.tuning.dense_cells,
            "choose_cut": self.grid.choose_cut,
            "stop": self.budget.expired,
        }
        try:
            if self.last is not None:  # a round added a few cells: refit their leaves only
                ct = refit_leaves(
                    self.last, coords, labels, s.original.n_classes, max_depth=self.max_depth,
                    **fit,
                )  # fmt: skip
            else:
                ct = fit_cell_tree(
                    coords, labels, s.original.n_classes, max_depth=self.max_depth, **fit
                )
        except NoTreeWithinCaps as e:
            proved = e.proved and self.provable and region
            self._none(("proved: " if proved else "") + str(e))
            return None
        provable = self.provable and region
        if ct.exact and provable and ct.n_leaves > (self.report.leaves_bound or 0):
            self.report.leaves_bound = ct.n_leaves
        if cfg.max_leaves is not None and ct.n_leaves > cfg.max_leaves:
            proved = ct.exact and provable
            self._none(
                f"{'proved: ' if proved else ''}the fewest leaves found is {ct.n_leaves}, "
                f"above --max-leaves {cfg.max_leaves}"
            )
            return None
        s.say(
            f"[tree] fit: {ct.n_leaves} leaves, depth {ct.depth} on {len(labels)} cells"
            + (" (fewest leaves: exact)" if ct.exact else "")
        )
        ct = self._guess_empty_leaves(ct, coords)
        if self.incremental:
            self.last = ct
        return ct

    def _none(self, why: str) -> None:
        self.report.none_within_caps = why
        self.state.record_stop("tree", f"no tree within the caps: {why}")

    def _guess_empty_leaves(self, ct: CellTree, coords: np.ndarray) -> CellTree:
        """Leaves that hold no labelled cell may take any label on the known cells; give
        each the original's label at a point in the middle of its box (the best guess
        for region cells not known yet)."""
        held = np.zeros(len(ct.feature), bool)
        held[ct.apply(coords)] = True
        top = np.array([len(t) for t in self.grid.thresholds])
        empty = {leaf: box for leaf, box in ct.leaf_boxes(top).items() if not held[leaf]}
        if not empty:
            return ct
        points = np.stack(
            [self.grid.point(self.state.domain, (lo + hi) // 2) for lo, hi in empty.values()]
        )
        labels = self.state.original.predict_index(points)
        return ct.relabel({leaf: int(k) for leaf, k in zip(empty, labels)})

    def model(self, ct: CellTree) -> Ensemble:
        """The cell tree as the model the oracle certifies and the writer writes: one
        TreeEnsembleClassifier (the cheapest graph at a batch of one row) as the reader
        reads it back, so the file is exactly the model certified; a single leaf (a
        constant) as regressor scores with one-hot leaves."""
        s = self.state
        K = s.original.n_classes
        tree = self.grid.tree(ct.feature, ct.cut, ct.left, ct.right, ct.label, K)
        model, _ = fold(
            [tree], np.ones(1), np.zeros(K), s.original.classes, ["new"], s.original.n_features,
            0.0,
        )  # fmt: skip
        if len(tree.leaves) < 2:
            return model
        strings = s.original.classes.dtype == object
        info = OnnxModelInfo("X", "label", None, bool(strings))
        back, _ = ensemble_from_model(tree_classifier_to_onnx(model, info))
        return back

    def superset(self) -> LabelledCells | None:
        """Every cell of the original's grid where it is confident, plausible or not
        (:func:`confident_cells`): a tree pure on them is faithful whatever the
        plausibility forest says; None when the grid is too large to enumerate."""
        s = self.state
        return confident_cells(
            s.original,
            self.grid,
            s.domain,
            s.region.margin,
            self.tuning.enum_cells,
            self.budget.expired,
        )

    def certify(
        self,
        exact_boxes: int,
        budget: Budget,
        cells: LabelledCells | None = None,
        incremental: bool = False,
    ) -> PhaseResult:
        """The faithful loop over fits with this exact-program limit (on ``cells`` when
        given, else on the run's labelled cells), its fits and floods within ``budget``;
        ``incremental``: after the first fit, each round refits only the leaves its new
        cells broke."""
        self.budget = budget
        self.last, self.incremental = None, incremental
        K = self.state.original.n_classes
        last: dict[str, Ensemble] = {}

        def solve(_A: np.ndarray) -> MasterSolution | None:
            ct = self.fit(exact_boxes, cells)
            if ct is None:
                return None
            last["model"] = self.model(ct)
            return MasterSolution(np.zeros(0), np.zeros(K), ct.n_leaves, None, ct.exact, "tree")

        res = faithful_loop(
            self.state, "tree", solve, [], budget, make=lambda _sol: (last["model"], [])
        )
        self.report.rounds += res.rounds
        if res.certified and res.model is not None:
            res.weights, res.offsets = [1.0], None
        return res


def cells_enumerable(state: RunState) -> bool:
    """Whether every cell that may hold a region point can be enumerated
    (:func:`~pace_cert.learners.region_cells.enumerable`): the tree then certifies."""
    grid = ForestGrid.of(state.original)
    return enumerable(grid, state.domain, state.cfg.tuning.tree.enum_cells)


class SingleTree(BaseStep):
    """Mode tree: always (after a start model, it may find a smaller tree), the depth
    capped by ``--max-depth``. In mode pace (``learner=True``): one learner of the
    generated family, its depth capped by ``state.learner_depth()``, after pruning on a
    share ``pace.tree_share`` of the time pruning left, when the original has more than
    one tree and the run asked for ``--learner-depth`` or ``--objective leaves``."""

    name = "tree"

    def __init__(self, learner: bool = False) -> None:
        self.learner = learner

    def applies(self, state: RunState) -> bool:
        """Mode tree: always. Mode pace: when the user chose the learner family or the
        leaves objective (the default run prunes as before), on a share of the time."""
        if not self.learner:
            return True
        cfg = state.cfg
        asked = cfg.learner_depth is not None or cfg.objective == "leaves"
        return asked and cfg.tuning.pace.tree_share > 0 and state.original.n_trees > 1

    def share(self, state: RunState) -> float:
        """Mode pace: ``pace.tree_share``. Mode tree: all the time when every cell that
        may hold a region point can be enumerated (the tree certifies), else all but
        ``tree.fallback_share``, which the pruning fallback gets when no tree certified."""
        if self.learner:
            return state.cfg.tuning.pace.tree_share
        tuning = state.cfg.tuning.tree
        keep = 1.0 - tuning.bound_share  # the leaf bound's time, after this step
        return keep if cells_enumerable(state) else keep * (1.0 - tuning.fallback_share)

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        if not self.learner and not cells_enumerable(state):
            state.say(
                "warning: the cells that may hold a region point are too many to enumerate "
                "(raw features): the tree is learnt from counterexamples and may not certify "
                "in the time; mode prune's steps get the rest if it does not. Try a coverage "
                "rung (pace-cert frontier, or a larger --eta), --max-depth / --max-leaves, or "
                "binned features"
            )
        cap = state.learner_depth() if self.learner else state.cfg.max_depth
        search = TreeSearch(state, budget, cap)
        if not self.learner:  # the certificate's single-tree block is mode tree's
            state.tree = search.report
        tuning = state.cfg.tuning.tree
        complete = search.cells.complete
        # counterexample-guided on the known cells; on half the time when a superset
        # of the region's cells can take over
        superset = None if complete else search.superset()
        first = search.certify(
            tuning.first_boxes,
            budget if superset is None else budget.share(0.5),
            incremental=True,
        )
        yield Offer(first, "tree")
        if superset is not None and not budget.expired():
            # a tree on every confident cell is faithful whatever the plausibility says:
            # the fallback when the known cells did not certify, else one more candidate
            # (its exact fit can beat a counterexample-guided one; the smaller is kept)
            state.say(f"[tree] every confident cell, plausible or not: {len(superset)} cells")
            boxes = tuning.first_boxes if not first.certified else tuning.exact_boxes
            wide = search.certify(boxes, budget.share(0.5), superset)
            yield Offer(wide, "tree")
            first = first if first.certified else wide
        if not first.certified or first.optimal or budget.expired():
            return  # no tree, or one the exact program found at its root
        if tuning.exact_boxes > tuning.first_boxes:
            yield Offer(search.certify(tuning.exact_boxes, budget), "tree")
