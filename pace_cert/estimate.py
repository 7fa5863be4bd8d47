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
