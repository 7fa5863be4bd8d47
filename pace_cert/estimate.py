"""An estimate before the work: the free-pattern floor of a pruning (decision 0014).

Removing a set R of trees (the others rescaled, a score ensemble's removed trees leaving
their leaf midranges in the offsets) changes every class-pair score difference by at
most sum_{t in R} d_t (:func:`~pace_cert.driver.phases.eliminate.largest_changes`).
Every region point wins by more than c_o, so removals under c_o are faithful; when the
trees' leaves combine freely (raw features, independent splits) no larger removal is,
and no reweighting helps. ``n - r*`` is then what a faithful pruning keeps at least. It
is an estimate, not a proof: trees that share features and thresholds, binned or binary
features and the plausibility region let certified models go below it. Milliseconds:
it needs the model and eta only.
"""

from __future__ import annotations

from dataclasses import dataclass

from pace_cert.driver.phases.eliminate import free_removal
from pace_cert.model.ensemble import Ensemble
from pace_cert.region.margins import eta_units, region_margin


@dataclass(frozen=True)
class Estimate:
    """``floor`` of ``trees`` trees: what a faithful pruning keeps at least if the
    trees' leaves combined freely, in the confidence region of ``eta`` (``units``)."""

    trees: int
    floor: int
    eta: float
    units: str

    def line(self) -> str:
        """The estimate in words."""
        where = "the global region" if self.eta == 0 else f"eta {self.eta:g} ({self.units})"
        return (
            f"estimate: if the trees' leaves combine freely (raw features), no faithful "
            f"pruning in {where} keeps fewer than {self.floor} of the {self.trees} trees "
            "(free-pattern floor; trees that share splits can go below it)"
        )


def free_pattern_estimate(ensemble: Ensemble, eta: float) -> Estimate:
    """The free-pattern floor of ``ensemble`` at confidence ``eta``."""
    c_o = region_margin(ensemble, eta)
    removable = len(free_removal(ensemble, c_o))
    return Estimate(ensemble.n_trees, ensemble.n_trees - removable, eta, eta_units(ensemble))


def placement(trees_after: int | None, pruning_bound: int | None, est: Estimate) -> str:
    """One line placing a result between the proved bound, the estimate and the
    original (``trees_after`` None: nothing smaller certified)."""
    parts = []
    if pruning_bound is not None:
        parts.append(f"proved pruning bound {pruning_bound}")
    got = est.trees if trees_after is None else trees_after
    parts.append(f"certified {got}" + (" (the original)" if trees_after is None else ""))
    parts.append(f"free-pattern estimate {est.floor}")
    parts.append(f"original {est.trees}")
    return "place: " + " | ".join(parts) + " (trees)"


#: the coverage rungs of the floor table (% of the training rows held by margin), as the
#: frontier's default ladder and a step below it
FLOOR_RUNGS = (100.0, 99.0, 95.0, 90.0, 80.0)
#: an estimate keeping at least this share of the trees leaves little room to prune
LITTLE_ROOM = 0.9


@dataclass(frozen=True)
class FloorRow:
    """One row of the floor table: the region holding ``coverage`` % of the training
    rows by margin (None: the region asked for) has confidence ``eta``; the free-pattern
    estimate keeps at least ``floor`` of ``trees`` trees there (an estimate, not a
    bound)."""

    coverage: float | None
    eta: float
    floor: int
    trees: int

    @property
    def little_room(self) -> bool:
        return self.floor >= LITTLE_ROOM * self.trees


def floor_table(ensemble: Ensemble, X, eta: float, rungs=FLOOR_RUNGS) -> list[FloorRow]:
    """What each guarantee can buy at best, before the work: the asked region (first
    row) and the coverage rungs ``rungs`` (% of the rows ``X`` held by margin, eta by
    :func:`pace_cert.frontier.ladder.eta_for_share`), each with its free-pattern
    estimate. Milliseconds: the model's scores on ``X`` and one estimate a rung."""
    from pace_cert.frontier.ladder import eta_for_share

    n = ensemble.n_trees
    rows = [FloorRow(None, eta, free_pattern_estimate(ensemble, eta).floor, n)]
    for q in rungs:
        e = eta_for_share(ensemble, X, q / 100.0)
        rows.append(FloorRow(q, e, free_pattern_estimate(ensemble, e).floor, n))
    return rows


def room_line(rows: list[FloorRow]) -> str | None:
    """When the asked region leaves little room (its estimate keeps at least 90 % of
    the trees): say so, with the largest coverage rung that would leave room (None when
    the asked region leaves room)."""
    asked = rows[0]
    if not asked.little_room:
        return None
    room = next((r for r in rows[1:] if r.eta > asked.eta and not r.little_room), None)
    head = (
        f"little room: in the region asked, no faithful pruning is expected below "
        f"{asked.floor} of the {asked.trees} trees (estimate)"
    )
    if room is None:
        return head + (
            f"; no coverage rung down to {rows[-1].coverage:g} % leaves room either: try "
            "--mode tree, or binned features"
        )
    return head + (
        f"; the region holding {room.coverage:g} % of the training rows (--coverage "
        f"{room.coverage:g}, eta {room.eta:g}) would leave room: estimate {room.floor} trees"
    )


def floor_lines(rows: list[FloorRow], units: str) -> list[str]:
    """The floor table in words: one line per row, then the room line if any."""
    out = [f"floor (free-pattern estimates, not bounds; eta in {units}):"]
    for r in rows:
        where = "asked" if r.coverage is None else f"{r.coverage:g} % of rows"
        out.append(f"  {where:>14}: eta {r.eta:<8g} at least {r.floor} of {r.trees} trees")
    if line := room_line(rows):
        out.append(line)
    return out


def recorded_room_line(cert) -> str | None:
    """:func:`room_line` of the floor table a certificate records (``summary.floor``;
    None without one)."""
    rungs = cert.summary.floor
    if not rungs:
        return None
    n = cert.original.trees
    return room_line([FloorRow(r.coverage, r.eta, r.trees_at_least, n) for r in rungs])
