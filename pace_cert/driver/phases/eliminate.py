"""Step: certified backward elimination of original trees, anytime.

On domains too large to enumerate the L1 loop may not converge: its vertex weightings
are refuted by new separating samples round after round, and nothing is certified.
Elimination keeps the original's own weights instead (rescaled for voting ensembles so
that the vote share is kept), which stay close to the original function, and removes
trees a few at a time: the ``step`` trees whose removal keeps the smallest margin over
the samples largest (greedy, exact on the margin rows), certified by the faithful loop
(screen, then CP-SAT). A refuted removal leaves its separating samples behind, which
steer the next choice; after ``ROUNDS`` refutations the step halves, and at one tree
it keeps trying removals it has not tried while one meets every sample. CP-SAT gets
``search.eliminate_oracle_seconds`` per candidate: a removal it leaves undecided counts
as refuted (one such call took 222 of a 600 s spambase 100 run). Every certified
removal is offered at once, so the run has a smaller certified model early. Why, and
what else was measured: docs/decisions/0012-eliminate-on-large-domains.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Set

import numpy as np

from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.result import Offer
from pace_cert.driver.state import RunState
from pace_cert.driver.step import BaseStep
from pace_cert.master.max_margin import max_margin_in_box
from pace_cert.master.rows import MasterSolution
from pace_cert.model.ensemble import Ensemble
from pace_cert.plumbing.budget import Budget

ROUNDS = 3  # refutations of one step size before it halves
FREE_REMOVAL = "free-removal"  # the offer name of :class:`FreeRemoval`


def _scale(state: RunState, kept: np.ndarray) -> float:
    """Factor on the kept trees' weights: keeps a voting ensemble's total vote weight
    (its base is a threshold on the vote share), 1 for score ensembles."""
    w = state.original.weights
    return float(w.sum() / w[kept].sum()) if state.original.kind == "voting" else 1.0


def midranges(original: Ensemble) -> np.ndarray:
    """[n_trees, n_classes]: what a removed tree leaves in the class offsets. For score
    ensembles (max + min) / 2 of its weighted leaf values per class, which halves the
    largest change its removal makes to any class score; zeros for voting ensembles
    (their kept trees are rescaled instead, see :func:`_scale`)."""
    mid = np.zeros((original.n_trees, original.n_classes))
    if original.kind == "voting":
        return mid
    for t, (tree, w) in enumerate(zip(original.trees, original.weights, strict=True)):
        v = w * tree.value[tree.left == -1]
        mid[t] = (v.max(axis=0) + v.min(axis=0)) / 2
    return mid


def largest_changes(original: Ensemble) -> np.ndarray:
    """[n_trees] d_t >= 0 (score units): the largest change removing tree t, as
    elimination removes it, makes to any class-pair score difference S_a - S_b at any
    input: max(v_a - v_b) over its weighted leaves v for a voting ensemble (the kept
    trees' rescaling multiplies every difference by the same positive factor, so it
    changes no sign); max |v_a - v_b - (m_a - m_b)| for a score ensemble, m its
    :func:`midranges`, which stay in the offsets (m = 0 for voting ensembles)."""
    mid = midranges(original)
    out = np.zeros(original.n_trees)
    for t, (tree, w) in enumerate(zip(original.trees, original.weights, strict=True)):
        v = w * tree.value[tree.left == -1] - mid[t]  # [leaves, classes]
        diff = v[:, :, None] - v[:, None, :]
        out[t] = (
            max(float(diff.max()), 0.0) if original.kind == "voting" else float(np.abs(diff).max())
        )
    return out


def free_removal(original: Ensemble, c_o: float) -> list[int]:
    """Trees whose removal cannot change a label inside the region, whatever leaves
    they take: the trees of smallest :func:`largest_changes` d_t while their sum stays
    below 0.99 c_o minus twice the original's runtime guard. Every region point has
    S_y0 - S_k > c_o, so removing them leaves a margin above that slack at every point
    (before the float32 fold, which the certificate's proof then covers). When the
    trees can take their leaves freely, no larger removal with these weights is
    faithful; trees sharing features and thresholds can allow more, which
    :class:`Eliminate` then searches for."""
    d = largest_changes(original)
    order = np.argsort(d, kind="stable")
    room = 0.99 * c_o - 2 * original.runtime_guard
    fits = np.cumsum(d[order]) <= room
    return sorted(int(t) for t in order[fits])


def offsets_without(state: RunState, kept: list[int] | np.ndarray) -> np.ndarray:
    """Class offsets (class 0's at 0) of the original without the trees not in ``kept``:
    its base plus the removed trees' :func:`midranges`."""
    original = state.original
    gone = np.setdiff1d(np.arange(original.n_trees), np.asarray(kept, dtype=np.int64))
    base = original.base + midranges(original)[gone].sum(axis=0)
    return base - base[0]


def removal(
    state: RunState, A: np.ndarray, kept: list[int], step: int, skip: Set[int] = frozenset()
) -> list[int] | None:
    """Up to ``step`` trees of ``kept`` whose removal (one at a time, each time the one
    that keeps the smallest margin row largest) leaves every margin row positive; None
    when not even one can go. ``A``: margin rows of the original trees on the samples
    (offset columns last); trees in ``skip`` are never removed."""
    n = state.original.n_trees
    w = np.asarray(state.original.weights, np.float64)
    mid = midranges(state.original)
    mid_rows = A[:, n:] @ (mid - mid[:, :1])[:, 1:].T  # [rows, n_trees]: each tree's shift
    off = A[:, n:] @ offsets_without(state, kept)[1:]
    cur = list(kept)
    out: list[int] = []
    base = A[:, cur] @ w[cur]
    for _ in range(step):
        if len(cur) <= 1:
            break
        rest = base[:, None] - A[:, cur] * w[cur]  # row sums without each candidate
        scale = np.array([_scale(state, np.array([u for u in cur if u != t])) for t in cur])
        rows = rest * scale + off[:, None] + mid_rows[:, cur]
        low = rows.min(axis=0) if len(A) else np.ones(len(cur))
        low[[i for i, t in enumerate(cur) if t in skip]] = -np.inf
        j = int(np.argmax(low))
        if not low[j] > 0:
            break
        t = cur.pop(j)
        base = base - A[:, t] * w[t]
        off = off + mid_rows[:, t]
        out.append(t)
    return out or None


class _Master:
    """The elimination master: the trees left (``kept``) and how many to remove next."""

    def __init__(self, state: RunState, budget: Budget) -> None:
        self.state, self.budget = state, budget
        n = state.original.n_trees
        self.kept = list(range(n))
        self.step = max(1, n // 4)
        self.proposed: list[int] = []  # the trees the last solve kept
        # trees whose one-tree removal from ``kept`` met a sample only below the float32
        # guard: no further round can certify it, so it is not proposed again
        self.stuck: set[int] = set()
        # trees whose one-tree removal CP-SAT left undecided in its time: not proposed
        # again until a removal is certified
        self.undecided: set[int] = set()

    def solve(self, A: np.ndarray) -> MasterSolution | None:
        out = removal(self.state, A, self.kept, self.step, self.stuck | self.undecided)
        if out is None:
            return None
        original = self.state.original
        n = original.n_trees
        rest = np.array(sorted(set(self.kept) - set(out)))
        w0 = original.weights[rest] * _scale(self.state, rest)
        offsets = offsets_without(self.state, rest)
        tau = self.state.cfg.tuning.search.eliminate_box
        if tau > 0 and len(A):  # the best weights within tau of the rescaled original's
            box = max_margin_in_box(
                A[:, rest], A[:, n:] @ offsets[1:], (1 - tau) * w0, (1 + tau) * w0,
                budget=self.budget, seed=self.state.cfg.seed,
            )  # fmt: skip
            if box is not None and box[1] > 0:
                w0 = box[0]
        w = np.zeros(n)
        w[rest] = w0
        self.proposed = [int(t) for t in rest]
        return MasterSolution(w, offsets, float(len(rest)), None, False, "eliminate")


class Eliminate(BaseStep):
    """When the L1 loop did not certify (large domains): remove original trees,
    certified removal by removal, while the budget lasts. It runs after a certified
    merged original too: its candidates are merged the same way, so a removal certified
    on top of the merge is smaller still. (When the L1 loop certifies, the L0 loop that
    follows prunes.)"""

    name = "eliminate"

    def applies(self, state: RunState) -> bool:
        n = state.original.n_trees
        l1_certified = state.l1 is not None and state.l1.first_certified
        return n > 1 and not l1_certified and not state.screen.can_enumerate()

    def share(self, state: RunState) -> float:
        return state.cfg.tuning.search.eliminate_share * state.prune_scale()

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        learners = state.learners[: state.original.n_trees]
        master = _Master(state, budget)
        refuted: set[tuple[int, ...]] = set()  # one-tree removals refuted so far
        cap = state.cfg.tuning.search.eliminate_oracle_seconds or None
        while master.step >= 1 and not budget.expired():
            res = faithful_loop(
                state, "l0-eliminate", master.solve, learners, budget, max_rounds=ROUNDS,
                oracle_seconds=cap,
            )  # fmt: skip
            if res.certified and res.model is not None:
                master.kept, master.stuck, master.undecided = master.proposed, set(), set()
                state.say(f"[eliminate] certified {res.model.n_trees} trees (step {master.step})")
                yield Offer(res, "eliminate")
                continue
            if res.undecided and not budget.expired():
                gone, kept = len(master.kept) - len(master.proposed), len(master.kept)
                state.say(
                    f"[eliminate] CP-SAT left removing {gone} of its {kept} trees undecided"
                    + ("" if cap is None else f" in {cap:g} s")
                    + "; counted as refuted"
                )
            if master.step > 1:
                master.step //= 2
                continue
            if res.stuck or res.undecided:  # this removal cannot be certified: try the others
                gone = set(master.kept) - set(master.proposed)
                (master.stuck if res.stuck else master.undecided).update(gone)
                continue
            # one tree at a time: the refutations' samples steer the next choice, so
            # keep trying while some removal still meets every sample and is new
            proposal = tuple(master.proposed)
            if res.gave_up or proposal in refuted:
                kept, stuck, open_ = len(master.kept), len(master.stuck), len(master.undecided)
                skipped = [f"{stuck} met a sample only below the float32 guard"] if stuck else []
                skipped += [f"{open_} left undecided by CP-SAT"] if open_ else []
                below = f" ({'; '.join(skipped)})" if skipped else ""
                state.record_stop(
                    self.name,
                    f"no removal of one more of its {kept} trees meets every sample{below}"
                    if res.gave_up
                    else f"the removal of one more of its {kept} trees was refuted again",
                )
                break
            refuted.add(proposal)


class FreeRemoval(BaseStep):
    """Large domains: certify the original without its :func:`free_removal` trees, one
    CP-SAT round, before any master runs. The removal is safe by arithmetic, so the
    run holds a certified smaller model within seconds (a 10-class forest whose L1 and
    elimination rounds cost minutes each had none before its time ran out).
    :class:`Eliminate` still starts from all the trees: the trees of smallest d_t are
    not always the ones dependence lets go (RF 50 x depth 8 on diabetes: 48 trees from
    the free removal, 46 from all the trees)."""

    name = FREE_REMOVAL

    def applies(self, state: RunState) -> bool:
        return state.original.n_trees > 1 and not state.screen.can_enumerate()

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        original = state.original
        gone = free_removal(original, state.region.margin)
        if not gone or len(gone) >= original.n_trees:
            return
        kept = np.setdiff1d(np.arange(original.n_trees), gone)
        w = np.zeros(original.n_trees)
        w[kept] = original.weights[kept] * _scale(state, kept)
        sol = MasterSolution(w, offsets_without(state, kept), float(len(kept)), None, False,
                             FREE_REMOVAL)  # fmt: skip
        proposals = iter([sol])
        res = faithful_loop(
            state, "l0-free-removal", lambda _A: next(proposals, None),
            state.learners[: original.n_trees], budget, max_rounds=1,
        )  # fmt: skip
        if res.certified and res.model is not None:
            state.say(
                f"[free-removal] certified {res.model.n_trees} trees: {len(gone)} trees "
                "whose removal no input of the region can notice"
            )
            yield Offer(res, FREE_REMOVAL)
