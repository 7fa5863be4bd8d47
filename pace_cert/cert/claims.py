"""What a certificate states about the two models, checked against the models themselves.

``verify`` re-proves faithfulness from the ONNX files and the certificate's stated
parameters (eta, delta, the plausibility artifact, the domain). Everything else the
certificate says (sizes, classes, per-pair entries, region constants, the size lower
bound's consistency) is a claim about those files: a certificate whose claims the
models contradict is refuted (SPEC §7: a tampered certificate never passes), even when
the faithfulness proof itself goes through. Pure functions; messages name the field.
The catalog of every claim and what verify does with it is ``catalog.py``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from pace_cert.cert.certificate import Certificate
from pace_cert.cert.records import input_transform, label
from pace_cert.deploy_size import structure
from pace_cert.model.ensemble import Ensemble, family_of, float32_sum_guard
from pace_cert.model.onnx_reader import OnnxModelInfo
from pace_cert.region.margins import eta_units, required_margin

#: CP-SAT's random_seed is a 32-bit signed integer
MAX_SEED = 2**31 - 1


def domain_arrays(
    dom: object, n_features: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(binary mask, integer mask, lower, upper) from the certificate's ``region.domain``;
    ValueError naming the field when it does not describe ``n_features`` features (feature
    indices in range, bounds finite float32 lists of that length with lower <= upper)."""
    if not isinstance(dom, dict):
        raise ValueError("region.domain must be an object")
    masks = []
    for key in ("binary_features", "integer_features"):
        idx = dom.get(key, [])
        ok = isinstance(idx, list) and all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n_features for i in idx
        )
        if not ok:
            raise ValueError(f"region.domain.{key} must list feature indices in [0, {n_features})")
        mask = np.zeros(n_features, bool)
        mask[idx] = True
        masks.append(mask)
    bounds = dom.get("bounds")
    if bounds is None:
        return masks[0], masks[1], None, None
    if not isinstance(bounds, dict) or set(bounds) != {"lower", "upper"}:
        raise ValueError("region.domain.bounds must be null or {lower, upper}")
    arrays = []
    for key in ("lower", "upper"):
        v = bounds[key]
        if not isinstance(v, list) or len(v) != n_features:
            raise ValueError(f"region.domain.bounds.{key} must list {n_features} numbers")
        try:
            a = np.asarray(v, np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"region.domain.bounds.{key} must list numbers") from None
        with np.errstate(over="ignore"):
            a32 = a.astype(np.float32)
        if a.dtype != np.float64 or not np.isfinite(a32).all():
            raise ValueError(f"region.domain.bounds.{key} must be finite float32 values")
        arrays.append(a32)
    if np.any(arrays[0] > arrays[1]):
        raise ValueError("region.domain.bounds: a lower bound exceeds its upper bound")
    return masks[0], masks[1], arrays[0], arrays[1]


def structural_problems(cert: Certificate, n_features: int) -> list[str]:
    """Fields that must have a shape before anything is solved (bad input, exit 3)."""
    problems = []
    if not 0 <= cert.seed <= MAX_SEED:
        problems.append(f"seed {cert.seed} is outside [0, {MAX_SEED}]")
    for p in cert.pairs:
        if any(len(h.point) != n_features for h in p.history):
            problems.append(
                f"pair ({p.y0}, {p.y}): a history point does not have {n_features} values"
            )
            break
        if not all(float32_exact(h.point) for h in p.history):
            problems.append(
                f"pair ({p.y0}, {p.y}): a history point holds a value that is not a finite float32"
            )
            break
    return problems


def float32_exact(values: list[float]) -> bool:
    """Every value finite and exactly a float32 (a NaN, an inf or 1e308 is not)."""
    a = np.asarray(values, np.float64)
    if not np.isfinite(a).all():
        return False
    with np.errstate(over="ignore"):
        return bool(np.array_equal(a.astype(np.float32).astype(np.float64), a))


def is_constant(ens: Ensemble) -> bool:
    """A compressed model without trees, which the writer writes as one tree that is a
    single zero leaf (compress counts no tree)."""
    return all(len(t.feature) == 1 and not t.value.any() for t in ens.trees)


def _required_margin(comp: Ensemble) -> float:
    """E_req as compress states it: ``pace.required_margin`` of the model it certified
    (for a constant model, no tree; the writer's zero leaf adds exactly 0)."""
    if not is_constant(comp):
        return required_margin(comp)
    return max(float32_sum_guard((), comp.base), 1e-30)


def _summary_of(ens: Ensemble) -> dict:
    """What ``model_summary`` states, as the reader sees the ONNX file (a constant
    model counted as no tree, as compress counts it)."""
    constant = is_constant(ens)
    return {
        "trees": 0 if constant else ens.n_trees,
        "max_depth": 0 if constant else ens.max_depth,
        "leaves": 0 if constant else ens.n_leaves,
        "classes": [label(ens.classes, i) for i in range(ens.n_classes)],
        "features": ens.n_features,
        "pattern": ens.pattern,
        "family": family_of(ens),
        "estimators": 0 if constant else ens.n_estimators,
        "input_transform": input_transform(ens),
    }


def counted(ens: Ensemble) -> Ensemble:
    """``ens`` as compress counts it: a constant model (the writer's one zero leaf)
    has no tree."""
    if not is_constant(ens):
        return ens
    return dataclasses.replace(ens, trees=(), weights=np.zeros(0), estimators=0, origin=())


#: the latency fields of summary.deployment's sizes (a measurement: stated)
LATENCY_FIELDS = ("latency_us_batch1", "latency_us_per_row_batch")


def deployment_problems(
    cert: Certificate, orig: Ensemble, comp: Ensemble, onnx_bytes: tuple[int, int]
) -> list[str]:
    """``summary.deployment`` against the two files (``onnx_bytes``: their sizes): the
    trees, leaves, internal nodes, depth and bytes of each; a mean comparisons per
    prediction between 0 and the sum of the trees' depths (the data re-counts it:
    :func:`comparison_problems`); latencies positive and finite or null, and stated
    with how they were measured. None stated (older certificates): nothing to check."""
    dep = cert.summary.deployment
    if dep is None:
        return []
    problems = []
    if dep.rows < 0:
        problems.append(f"summary.deployment.rows is {dep.rows}")
    measured = dep.latency_setup is not None
    for name, stated, ens, n_bytes in (
        ("before", dep.before, orig, onnx_bytes[0]),
        ("after", dep.after, comp, onnx_bytes[1]),
    ):
        where = f"summary.deployment.{name}"
        ens = counted(ens)
        size = structure(ens, np.zeros((0, ens.n_features), np.float32))
        actual = {
            "trees": size.trees,
            "leaves": size.leaves,
            "internal_nodes": size.internal_nodes,
            "max_depth": size.max_depth,
            "onnx_bytes": n_bytes,
        }
        for key, want in actual.items():
            if getattr(stated, key) != want:
                problems.append(f"{where}.{key} is {getattr(stated, key)!r}, the file gives {want}")
        ceiling = sum(t.depth for t in ens.trees)
        if not 0 <= stated.mean_comparisons <= ceiling:  # NaN too
            problems.append(
                f"{where}.mean_comparisons is {stated.mean_comparisons!r}: no prediction "
                f"makes fewer than 0 or more than {ceiling} comparisons (the sum of the "
                "trees' depths)"
            )
        for key in LATENCY_FIELDS:
            v = getattr(stated, key)
            if v is not None and not (math.isfinite(v) and v > 0):
                problems.append(f"{where}.{key} is {v!r}: a latency is positive and finite")
            if (v is not None) != measured:
                problems.append(
                    f"{where}.{key} is {v!r} but latency_setup is "
                    + ("stated" if measured else "null")
                )
    return problems


def comparison_problems(
    cert: Certificate, orig: Ensemble, comp: Ensemble, X: np.ndarray
) -> list[str]:
    """``summary.deployment``'s rows and mean comparisons per prediction, re-counted on
    ``X`` (the rows without missing values of the file compress read)."""
    dep = cert.summary.deployment
    if dep is None:
        return []
    problems = []
    if dep.rows != len(X):
        problems.append(f"summary.deployment.rows is {dep.rows}, the file has {len(X)}")
    for name, stated, ens in (("before", dep.before, orig), ("after", dep.after, comp)):
        got = structure(counted(ens), X).mean_comparisons
        if not _same(stated.mean_comparisons, got):
            problems.append(
                f"summary.deployment.{name}.mean_comparisons is "
                f"{stated.mean_comparisons!r}, the file's rows give {got!r}"
            )
    return problems


#: summary keys older certificates (schema < 1.5) do not state (null): not compared then
SINCE_1_5 = ("family", "estimators")


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


def claim_problems(
    cert: Certificate,
    orig: Ensemble,
    comp: Ensemble,
    orig_info: OnnxModelInfo,
    comp_info: OnnxModelInfo,
    c_o: float,
    delta_abs: float | None,
) -> list[str]:
    """Claims of ``cert`` the two models (and the region rebuilt from them: margin
    threshold ``c_o``, plausibility threshold ``delta_abs``) contradict."""
    problems: list[str] = []
    for name, stated, ens in (
        ("original", cert.original, orig),
        ("compressed", cert.compressed, comp),
    ):
        for key, actual in _summary_of(ens).items():
            if key in SINCE_1_5 and getattr(stated, key) is None:
                continue
            if getattr(stated, key) != actual:
                problems.append(
                    f"{name}.{key} is {getattr(stated, key)!r}, the model has {actual!r}"
                )
    for key in ("input_name", "label_name", "scores_name", "label_is_string"):
        if getattr(comp_info, key) != getattr(orig_info, key):
            problems.append(
                f"the compressed model's {key} is {getattr(comp_info, key)!r}, "
                f"the original's {getattr(orig_info, key)!r}"
            )
    s = cert.summary
    for key, want in (
        ("trees_before", cert.original.trees),
        ("trees_after", cert.compressed.trees),
        ("leaves_before", cert.original.leaves),
        ("leaves_after", cert.compressed.leaves),
    ):
        if getattr(s, key) != want:
            problems.append(f"summary.{key} is {getattr(s, key)}, the models give {want}")
    if s.certified != (s.status == "certified"):
        problems.append(f"summary.certified is {s.certified} but summary.status is {s.status!r}")
    if not s.certified and cert.compressed.sha256 != cert.original.sha256:
        problems.append(
            "summary.status is inconclusive but the compressed model is not the original "
            "(sha256 differs): an inconclusive run writes the original unchanged"
        )
    problems += _bound_problems(cert)
    reg = cert.region
    units = eta_units(orig)
    for key, stated, actual in (
        ("margin_scale", reg.margin_scale, orig.margin_scale),
        ("runtime_guard", reg.runtime_guard, orig.runtime_guard),
        ("margin_threshold", reg.margin_threshold, c_o),
    ):
        if not _same(stated, actual):
            problems.append(f"region.{key} is {stated!r}, the original gives {actual!r}")
    if reg.eta_units != units:
        problems.append(f"region.eta_units is {reg.eta_units!r}, the original's are {units!r}")
    e_req = _required_margin(comp)
    if s.certified and not _same(cert.scaling.compressed_margin, e_req):  # else not computed
        problems.append(
            f"scaling.compressed_margin is {cert.scaling.compressed_margin!r}, "
            f"the compressed model needs {e_req!r}"
        )
    if (reg.delta > 0) != (delta_abs is not None) or not _same(reg.delta_abs, delta_abs):
        problems.append(
            f"region.delta_abs is {reg.delta_abs!r}, the plausibility artifact's {delta_abs!r}"
        )
    problems += _pair_problems(cert, orig)
    return problems


def _pair_problems(cert: Certificate, orig: Ensemble) -> list[str]:
    """One entry per ordered pair of distinct labels, stated under the region's eta,
    delta and delta_abs and the scaling's E_req; a certified certificate proves each."""
    labels = [label(orig.classes, i) for i in range(orig.n_classes)]
    want = [(a, b) for a in labels for b in labels if a != b]
    got = [(p.y0, p.y) for p in cert.pairs]
    if sorted(map(repr, got)) != sorted(map(repr, want)):
        return [f"pairs: {len(got)} entries, not one per ordered pair of the {len(labels)} labels"]
    problems = []
    reg = cert.region
    for p in cert.pairs:
        where = f"pair ({p.y0}, {p.y})"
        if cert.summary.certified and p.status != "INFEASIBLE":
            problems.append(f"{where} is {p.status} in a certified certificate")
        if p.eta != reg.eta or p.delta != reg.delta or not _same(p.delta_abs, reg.delta_abs):
            problems.append(f"{where} states another eta, delta or delta_abs than the region")
        if not _same(p.compressed_margin, cert.scaling.compressed_margin):
            problems.append(f"{where} states another compressed margin than the scaling")
        if any(h.y0 != p.y0 or h.y != p.y for h in p.history):
            problems.append(f"{where} holds history points of another pair")
        if not cert.summary.certified and p.status != "UNKNOWN":
            problems.append(
                f"{where} is {p.status} in an inconclusive certificate (no proof is kept)"
            )
        if any(h.original_label not in labels for h in p.history):
            problems.append(f"{where} holds history labels the models do not have")
    return problems


def in_bound_family(cert: Certificate) -> bool:
    """Whether the compressed model is one of the models the size lower bound speaks
    of: trees of depth at most the original's (a deeper tree, e.g. mode tree's, is not
    bound by it)."""
    return cert.compressed.max_depth <= cert.original.max_depth


def synthesis_part(cert: Certificate) -> int | None:
    """The part of ``summary.size_lower_bound`` above the witness bound: the trees only
    compress's CP-SAT synthesis proofs stand for (None: there is none)."""
    s = cert.summary
    if s.size_lower_bound is None or s.size_lower_bound <= (s.witness_bound or 0):
        return None
    return s.size_lower_bound


def _bound_problems(cert: Certificate) -> list[str]:
    """The size lower bound against what the models and the run record allow: at least
    its witness bound; at most the certified size and the original's size (the original
    is faithful to itself); a part above the witness bound only where compress runs its
    synthesis proofs (mode pace, original of depth <= 2)."""
    s, problems = cert.summary, []
    b = s.size_lower_bound
    if b is None:
        return problems
    if s.witness_bound is not None and b < s.witness_bound:
        problems.append("summary.size_lower_bound is below its own witness_bound")
    if s.certified and b > cert.compressed.trees and in_bound_family(cert):
        problems.append(
            f"summary.size_lower_bound {b} exceeds the certified model's "
            f"{cert.compressed.trees} trees"
        )
    if b > cert.original.trees:
        problems.append(
            f"summary.size_lower_bound {b} exceeds the original's {cert.original.trees} "
            "trees (the original is a faithful model of itself)"
        )
    if synthesis_part(cert) is not None and (s.mode != "pace" or cert.original.max_depth > 2):
        problems.append(
            f"summary.size_lower_bound {b} exceeds the witness bound, but synthesis proofs "
            f"run only in mode pace on originals of depth <= 2 (mode {s.mode}, depth "
            f"{cert.original.max_depth})"
        )
    return problems


def pruning_bound_contradiction(cert: Certificate, kept: list[int] | None) -> str | None:
    """Why the pruning bound contradicts the certified model (None: it does not): a
    certified pruning keeping fewer distinct original trees than the bound is a
    faithful pruning the bound says cannot exist."""
    s, pb = cert.summary, cert.summary.pruning_bound
    if pb is None or not s.certified or kept is None or pb.value <= len(set(kept)):
        return None
    return (
        f"summary.pruning_bound.value {pb.value} exceeds the {len(set(kept))} original "
        "trees the certified model keeps (it is a pruning of the original, compared in the "
        "two files): the two claims contradict each other"
    )
