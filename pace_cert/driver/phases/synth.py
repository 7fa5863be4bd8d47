"""Steps (PACE, originals of depth <= 2): CP-SAT synthesis of fewer trees, and the
lower-bound proofs it gives.

For k = bound, bound + 1, ... up to ``max_size``, CP-SAT (``pace_cert/learners/synth.py``)
proposes k trees of depth <= 2 whose joint partition holds one original label per cell
on the samples; the refit loop fits their leaf values and the oracle certifies them or
adds separating samples, and CP-SAT proposes again. When CP-SAT proves that no k trees
are pure on the samples, no model of k such trees is faithful in the region (any k-tree
model, whatever its leaf values, predicts one label per cell): the size lower bound
becomes k + 1 and k grows.

:class:`SynthBound` runs the proofs alone right after pruning (each capped at
``pace.bound_seconds`` and a tenth of the time left): a pruned model as small as the
bound is minimal and ends the run. :class:`Synth` runs last with candidates (each
solve capped at ``pace.synth_seconds``; a solve stopped at its cap is asked again once
with all the time left).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from pace_cert.driver.phases.refit import refit_loop
from pace_cert.driver.result import Offer, PhaseResult
from pace_cert.driver.state import RunState
from pace_cert.driver.step import BaseStep
from pace_cert.learners import synth
from pace_cert.plumbing.budget import Budget


def synthesize_trees(
    state: RunState, max_size: int, budget: Budget, propose: bool = True
) -> PhaseResult:
    """The first certified synthesised model (uncertified if none in time); raises
    ``state.size_bound`` with every proof. ``propose=False``: proofs only -- ends at
    the first k for which CP-SAT finds a pure set or stops at its cap."""
    cfg = state.cfg
    k_cls = state.original.n_classes
    depth = min(2, max(1, state.original.max_depth))
    th = state.domain.thresholds
    t0 = time.perf_counter()
    size = state.size_bound or 1
    exclude: list = []
    hint = None
    retry: float | None = None  # the time left, after a solve stopped at its cap
    while size <= max_size:
        left = budget.left()
        if left is not None and left <= 0:
            break
        cells = state.domain.cell_index(state.X)
        # proofs alone are a side step before the other phases: a tenth of the time left
        limit = cfg.tuning.pace.synth_seconds if propose else cfg.tuning.pace.bound_seconds
        cap = limit if left is None else min(left if propose else left / 10, limit)
        cap, retry = (cap if retry is None else retry), None
        res = synth.synthesize(
            cells, state.y0, k_cls, size, depth,
            time_limit=cap, threads=cfg.tuning.pace.synth_threads or cfg.threads,
            seed=cfg.seed, exclude=exclude, hint=hint,
        )  # fmt: skip
        if res.status == "too-large":  # larger sizes are larger still
            state.say(
                f"[synth] {size} trees of depth {depth} on {len(state.X)} samples: too large "
                "a model to build; not tried"
            )
            break
        if res.status == "infeasible":
            state.raise_bound(size + 1)
            state.say(
                f"[synth] no {size} tree{'s' if size > 1 else ''} of depth {depth} "
                f"label-pure on the {len(state.X)} samples ({res.seconds:.1f} s): a "
                f"faithful model of this family has at least {size + 1} trees"
            )
            size, exclude, hint = size + 1, [], None
            continue
        if not propose:
            break
        if res.status != "found" or not res.shapes:
            left = budget.left()
            if left is None or left <= cap + 1.0:
                state.say(f"[synth] {size} trees: CP-SAT stopped at {res.seconds:.0f} s")
                break
            # nothing runs after this phase: give the same question all the time left
            state.say(
                f"[synth] {size} trees: CP-SAT stopped at {res.seconds:.0f} s; "
                f"again with the {left:.0f} s left"
            )
            retry = left
            continue
        before = len(state.X)
        trees = [synth.shape_tree(s, th, k_cls) for s in res.shapes]
        out = refit_loop(state, trees, k_cls, budget) if trees else None
        if out is not None and out.certified:
            state.say(
                f"[synth] certified {out.model.n_trees} trees ({time.perf_counter() - t0:.0f} s)"
            )
            return out
        if len(state.X) == before:  # no leaf values meet the samples: ask for others
            exclude.append(res.shapes)
        hint = res.shapes
    return PhaseResult.nothing()


def _synth_on(state: RunState) -> bool:
    size = state.best_size()
    return (
        state.cfg.tuning.pace.synth_size > 0
        and state.original.max_depth <= 2
        and size is not None
        and size > 1
    )


class SynthBound(BaseStep):
    """Right after pruning: proofs of a lower bound on the size (no candidates)."""

    name = "synth-bound"
    bookkeeping = True  # proofs only: never the reason a run ends

    def applies(self, state: RunState) -> bool:
        return _synth_on(state)

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        size = state.best_size()
        assert size is not None
        synthesize_trees(state, size - 1, budget, propose=False)
        return iter(())


class Synth(BaseStep):
    """Last: synthesis of fewer trees than the best, while time is left."""

    name = "synth"

    def applies(self, state: RunState) -> bool:
        return _synth_on(state) and not state.budget.expired()

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        size = state.best_size()
        assert size is not None
        max_size = min(state.cfg.tuning.pace.synth_size, size - 1)
        yield Offer(synthesize_trees(state, max_size, budget), "synth")
