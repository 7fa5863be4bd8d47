"""Objective-based separation oracle (FIPE / OCEAN style), for benchmarking only.

The paper (§4, Result 1, appendix "Finer Analysis on the Generation of Separating
Samples") compares its *constraint-based* separation, which posts

    S'_y(x) - S'_y0(x) >= -E_req

as a constraint and asks CP-SAT for any feasible point, with the *objective-based*
separation of FIPE (Emine et al. 2025), which maximises the disagreement
``S'_y - S'_y0`` over the same region and reads a separating sample off the optimum.
:class:`ObjectiveSeparationOracle` is that baseline on the same CP-SAT model: identical
domain encoding, region constraints, integer scaling, representatives, spurious-point
check and nogood loop; only the separation condition moves from a constraint into the
objective. FIPE itself solved a MILP (Gurobi); here CP-SAT optimises the objective, so
that the comparison measures the formulation, not the solver.

It is *not* used to certify anything: the product accepts a pair as proved only on
CP-SAT status INFEASIBLE of the constraint model
(:class:`~pace_cert.oracle.cpsat.SeparationOracle`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace

import numpy as np
from ortools.sat.python import cp_model

from pace_cert.oracle.cpsat import SeparationOracle
from pace_cert.oracle.score_model import PairResult, RegionSpec, ScoreModel
from pace_cert.oracle.screen import Screen
from pace_cert.oracle.settings import OracleSettings
from pace_cert.region.domain import FeatureDomain
from pace_cert.region.scaling import ScaledCondition


@dataclass
class _Goal:
    """Per-pair state of the objective formulation (one per worker thread)."""

    comp_slots: list[int]  # identifies the separation condition among _post calls
    expr: cp_model.LinearExpr | None = None  # the maximised scaled expression sum a_t z
    sep: ScaledCondition | None = None
    solves: int = 0
    conflicts: int = 0
    branches: int = 0


class _Decided(Exception):
    """Raised from :meth:`ObjectiveSeparationOracle._point` when the best point found
    does not reach the separation threshold: the pair is settled without a sample."""

    def __init__(self, proved: bool) -> None:
        super().__init__("optimum below the separation threshold")
        self.proved = proved


class ObjectiveSeparationOracle(SeparationOracle):
    """Separation by maximising ``S'_y - S'_y0`` (scaled) over the region.

    FIPE-style baseline for the paper's Result 1; for benchmarking only. For each pair
    the separation condition that :class:`SeparationOracle` would post,
    ``sum_t a_t[leaf_t] >= rhs`` (``scale_condition(..., -E_req ..., strict=False)``),
    becomes the objective ``maximise sum_t a_t[leaf_t]`` and ``rhs`` the threshold:

    * CP-SAT INFEASIBLE (the region itself is empty) → ``INFEASIBLE``;
    * status OPTIMAL with best bound < ``rhs`` → ``INFEASIBLE`` (proof by the optimality
      bound: the constraint version is infeasible);
    * the optimum, or the time-limited incumbent, reaches ``rhs`` → the point is
      handled exactly as in the base class (representative, exact region check,
      nogood and re-solve if spurious) and a genuine one is returned ``FEASIBLE``;
    * time limit otherwise → ``UNKNOWN``.

    Certificates never rely on this class: the product proves a pair only on status
    INFEASIBLE of the constraint model. The statuses here agree with the constraint
    oracle's, which the tests check; the point returned is the one of maximal
    disagreement rather than the first one found, so the samples (and hence the number
    of rounds of a PACE loop) differ.
    """

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
        # _solve_pair keeps a per-thread goal: no races
        settings = replace(settings or OracleSettings(), schedule="parallel", backend="local")
        super().__init__(domain, original, region, seed=seed, settings=settings, hints=hints)
        self._local = threading.local()  # pairs are solved in parallel worker threads

    def _goal(self) -> _Goal | None:
        return getattr(self._local, "goal", None)

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
        """The base solve loop, with the separation condition as the objective."""
        t0 = time.perf_counter()
        goal = self._local.goal = _Goal(comp_slots)
        try:
            return super()._solve_pair(y0, y, comp, comp_slots, e_req, workers, deadline)
        except _Decided as stop:
            sep = goal.sep
            assert sep is not None
            region = [cond.error_bound for _, cond in self._region_conds[y0]]
            return PairResult(
                y0,
                y,
                "INFEASIBLE" if stop.proved else "UNKNOWN",
                seconds=time.perf_counter() - t0,
                conflicts=goal.conflicts,
                branches=goal.branches,
                spurious=goal.solves - 1,
                scale_exp=sep.scale_exp,
                error_bound=sep.error_bound,
                region_error_bound=max(region, default=0.0),
            )
        finally:
            self._local.goal = None

    def _post(
        self,
        m: cp_model.CpModel,
        slots: list[int],
        cond: ScaledCondition,
        links: str | None = None,
    ) -> None:
        """Region conditions as in the base class (``links`` as there); the separation
        one as the objective.

        The objective keeps every leaf's integer coefficient unshifted (CP-SAT handles
        the one-leaf-per-tree offsets itself), so its value is exactly the left-hand
        side that the constraint model compares with ``cond.rhs``.
        """
        goal = self._goal()
        if goal is None or slots is not goal.comp_slots:
            super()._post(m, slots, cond, links)
            return
        vars_: list[cp_model.IntVar] = []
        coefs: list[int] = []
        for slot, a in zip(slots, cond.coefs):
            nz = np.flatnonzero(a)
            index = self._slots[slot].var_index[nz]
            vars_.extend(m.get_bool_var_from_proto_index(int(i)) for i in index)
            coefs.extend(int(v) for v in a[nz])
        goal.expr = cp_model.LinearExpr.weighted_sum(vars_, coefs)
        goal.sep = cond
        m.maximize(goal.expr)

    def _point(self, solver: cp_model.CpSolver) -> np.ndarray:
        """The representative if the solution reaches the threshold, else settle the pair."""
        goal = self._goal()
        if goal is None or goal.sep is None or goal.expr is None:
            return super()._point(solver)
        goal.solves += 1
        goal.conflicts += int(solver.num_conflicts)
        goal.branches += int(solver.num_branches)
        threshold = goal.sep.rhs
        if int(solver.value(goal.expr)) >= threshold:
            return super()._point(solver)
        optimal = solver.response_proto.status == cp_model.OPTIMAL
        raise _Decided(proved=optimal and solver.best_objective_bound < threshold)
