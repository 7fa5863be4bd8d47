"""The faithful loop (paper Figure 1's inner loop), shared by every phase.

    solve the master on the samples -> fold the weights into the float32 candidate
    -> screen it with numpy -> CP-SAT separation per ordered label pair
    -> add the separating samples, and repeat until every pair is proved INFEASIBLE.

A phase supplies the master (``solve``: the margin matrix -> a solution, or None when
it has no candidate, e.g. none within a size budget) and, optionally, how a solution
becomes a candidate (``make``). Only a round in which CP-SAT proves every pair
certifies; a screen finds samples, never proofs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pace_cert.driver.result import HistoryEntry, PhaseResult
from pace_cert.driver.state import RunState
from pace_cert.master.highs import OutOfTime
from pace_cert.master.rows import MasterSolution
from pace_cert.model.ensemble import Ensemble, Tree
from pace_cert.oracle.score_model import PairResult, ScoreModel
from pace_cert.plumbing.budget import Budget
from pace_cert.region.margins import own_margin, required_margin

Solve = Callable[[np.ndarray], "MasterSolution | None"]
Make = Callable[[MasterSolution], tuple[Ensemble, list[int]]]
#: the master's next likely candidates around a refuted solution (margin rows, solution)
Family = Callable[[np.ndarray, MasterSolution], list[MasterSolution]]


def faithful_loop(
    state: RunState,
    phase: str,
    solve: Solve,
    learners: list[Tree],
    budget: Budget,
    *,
    certify: bool = True,
    make: Make | None = None,
    screen: bool = True,
    max_rounds: int | None = None,
    family: Family | None = None,
    oracle_seconds: float | None = None,
) -> PhaseResult:
    """Solve, separate, add samples, repeat until every pair is proved.

    ``make`` turns a master solution into the candidate to certify and the learners
    it keeps (default: :meth:`RunState.candidate`, the weights folded into the learners).

    Every round first screens the candidate with numpy (every cell of a small domain,
    else a pool of points inside the region); CP-SAT runs only when the screen finds
    nothing, and its points grow the pool. With ``certify=False`` the screen alone is
    used and the loop ends, uncertified, when it finds nothing: used for intermediate
    L1 models of the generation phase, which are never output. ``screen=False``
    skips the screen (CP-SAT only): for a candidate expected to be faithful.
    ``max_rounds`` (default the master tuning's): solves before giving up uncertified.
    ``oracle_seconds``: CP-SAT's time per round at most (None: the budget's); a round
    it leaves undecided ends the loop uncertified with ``undecided`` set.
    A ``solve`` returning None ends the loop uncertified (``gave_up``); one raising
    :class:`~pace_cert.master.highs.OutOfTime` (its LP stopped at the budget's end)
    ends it uncertified as time running out does.
    """
    cfg = state.cfg
    search = cfg.tuning.search
    rounds = cfg.tuning.master.max_rounds if max_rounds is None else max_rounds
    scr = state.screen
    if screen:
        state.ensure_pool()
    screenable = screen and (scr.can_enumerate() or scr.pool_size() > 0)
    screen_only = not certify and screenable
    first: list[float] = []

    def done(res: PhaseResult) -> PhaseResult:
        res.first_objective = first[0] if first else None
        return res

    for it in range(1, rounds + 1):
        A = state.matrix(learners)  # this round's margin rows (samples added after)
        try:
            sol = solve(A)
        except OutOfTime:  # a master LP stopped at the budget's end
            state.record_stop(phase, "its share of the time ran out")
            return done(PhaseResult.nothing(it))
        if sol is None:
            state.record_stop(phase, "its master found no candidate meeting the samples")
            return done(PhaseResult.nothing(it, gave_up=True))
        if it == 1:
            first.append(sol.objective)
        cand, keep = state.candidate(sol, learners) if make is None else make(sol)
        if budget.expired():
            state.record_stop(phase, "its share of the time ran out")
            return done(PhaseResult.nothing(it))
        sm, e_req = ScoreModel.from_ensemble(cand), required_margin(cand)
        results = scr.screen(sm, e_req, search.enumeration_per_pair) if screen else []
        if not results and screen_only:
            res = PhaseResult(None, [], it, False, sol.objective, sol.optimal, screened=True)
            return done(res)
        climbed = False
        if not results and screen and search.climb_steps and not scr.can_enumerate():
            results = scr.climb(
                sm, e_req, search.enumeration_per_pair, steps=search.climb_steps, budget=budget
            )
            climbed = bool(results)
        if not results:
            results = state.oracle.separate(
                sm, e_req, threads=cfg.threads, budget=budget.cap(oracle_seconds),
                until_found=search.lazy_proofs,
            )  # fmt: skip
        found = [r for r in results if r.status == "FEASIBLE"]
        found += [PairResult(r.y0, r.y, "FEASIBLE", x) for r in found for x in r.extra]
        proved = sum(r.status == "INFEASIBLE" for r in results)
        if found and (climbed or any(r.seconds > 0 for r in results)):  # new ground
            found += scr.widen([r.point for r in found], sm, e_req, search.neighbours)
        if found and family is not None and search.family_size and screenable:
            found += _screen_family(state, family(A, sol), learners, make)
        how = (
            f"{len(found)} separating samples by {'climbing' if climbed else 'screening'}"
            if found and not proved and all(r.seconds == 0.0 for r in results)
            else f"pairs proved {proved}/{len(results)}"
        )
        state.say(
            f"[{phase}] round {it}: {cand.n_trees} trees, objective {sol.objective:.6g}, "
            f"{how}, samples {len(state.X)}"
        )
        if not found:
            certified = proved == len(results)
            if not certified:
                state.record_stop(
                    phase,
                    f"CP-SAT settled {proved} of {len(results)} label pairs in the time it had",
                )
            return done(
                PhaseResult(
                    cand if certified else None,
                    results,
                    it,
                    certified,
                    sol.objective,
                    sol.optimal,
                    [float(sol.weights[t]) for t in keep],
                    list(keep),
                    sol.offsets,
                    undecided=not certified,
                )
            )
        if _record(state, phase, it, found) == 0:
            # every separating sample is already a row: the master's weights meet
            # these rows in its own arithmetic only (LP tolerance, or a margin below
            # the float32 guard E_req of the folded model). Solving again gives the
            # same weights, so stop this loop uncertified instead of cycling.
            A = state.matrix(learners)
            low = float((A @ np.r_[sol.weights, sol.offsets[1:]]).min()) if len(A) else 1.0
            on_found = own_margin(
                cand, np.array([r.point for r in found]), np.array([r.y0 for r in found])
            )
            state.say(
                f"[{phase}] round {it}: the {len(found)} separating samples are all rows "
                f"already (smallest master row {low:.3g}, candidate margin on them "
                f"{float(on_found.min()):.3g}, float32 guard "
                f"{e_req:.3g}, status {sol.status}); stopping"
            )
            state.record_stop(
                phase,
                f"its master's smallest margin on the samples ({low:.3g}) is below the "
                f"float32 guard of its model ({e_req:.3g}): the oracle can only return "
                "samples it has already, so it cannot certify",
            )
            res = PhaseResult(None, [], it, False, sol.objective, sol.optimal, stuck=True)
            return done(res)
    state.record_stop(phase, f"{rounds} rounds without a certified model")
    return done(PhaseResult.nothing(rounds))


def _screen_family(
    state: RunState, alts: list[MasterSolution], learners: list[Tree], make: Make | None
) -> list:
    """Separating samples the screen finds for the candidates ``alts`` (never proofs)."""
    search = state.cfg.tuning.search
    found = []
    for alt in alts[: search.family_size]:
        cand, _keep = state.candidate(alt, learners) if make is None else make(alt)
        sm, e_req = ScoreModel.from_ensemble(cand), required_margin(cand)
        found += [
            r
            for r in state.screen.screen(sm, e_req, search.enumeration_per_pair)
            if r.status == "FEASIBLE"
        ]
    return found


def _record(state: RunState, phase: str, it: int, found: list) -> int:
    """Add the separating samples ``found`` (PairResults) to the samples and the
    history; returns how many were new (not in a sample's cell already)."""
    points = np.array([r.point for r in found], np.float32)
    by_original = state.original.predict_index(points)
    new = 0
    for r, yo in zip(found, by_original):
        if not state.add_sample(r.point, int(yo)):
            continue
        new += 1
        state.history.append(
            HistoryEntry(
                phase.split("-")[0],  # l0-reweighted samples are L0-phase samples
                it,
                r.y0,
                r.y,
                r.point,
                int(yo),
            )
        )
    return new
