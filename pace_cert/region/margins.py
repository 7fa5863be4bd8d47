"""The margin constants of a certificate's region (score units).

* c_o (:func:`region_margin`): the original's winning margin that defines the
  confidence region, max(eta * sigma, the original's runtime guard);
* E_req (:func:`required_margin`): the margin by which the compressed model must beat
  every other class so that onnxruntime's float32 ArgMax returns the same label.
"""

from __future__ import annotations

import numpy as np

from pace_cert.model.ensemble import Ensemble


def required_margin(model: Ensemble) -> float:
    """E_req: the compressed model must beat every other class by more than this.

    It covers onnxruntime's float32 accumulation error of the score difference, so a
    strict exact margin > E_req makes ArgMax return y0 whatever the summation order.
    """
    return max(model.runtime_guard, 1e-30)


def own_margin(model: Ensemble, X: np.ndarray, y0: np.ndarray) -> np.ndarray:
    """Per row, the model's score of class index ``y0`` minus its best other score
    (float64, score units; > 0 iff the model predicts y0 there, ties aside)."""
    sc = model.scores(X)
    rows = np.arange(len(sc))
    own = sc[rows, y0].copy()
    sc[rows, y0] = -np.inf
    return own - sc.max(axis=1)


def region_margin(original: Ensemble, eta: float) -> float:
    """c_o in score units: max(eta * sigma, the original's runtime guard)."""
    return max(eta * original.margin_scale, original.runtime_guard)


def eta_units(original: Ensemble) -> str:
    """What eta measures for this original (the certificate's ``region.eta_units``)."""
    return "vote share" if original.kind == "voting" else "raw score"
