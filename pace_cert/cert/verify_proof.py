"""verify's faithfulness part: the proof itself (fresh CP-SAT models per ordered label
pair; none when the two files are identical or the certificate claims none), the
onnxruntime replays (history points, data, every cell with ``--exhaustive``) and the claims
that need onnxruntime or the trees' splits (size bounds, learners, leaf witnesses), on
what ``verify.py`` rebuilt from the files. Imports no compressor code either."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from pace_cert.cert.catalog import claim_catalog
from pace_cert.cert.certificate import Certificate
from pace_cert.cert.checks import (
    checks_learners,
    counterexample,
    disagreements,
    leaf_witness_problems,
    learner_problems,
    plain_label,
    pruning_sources,
    witness_problems,
)
from pace_cert.cert.claims import pruning_bound_contradiction
from pace_cert.cert.pruning_check import check_pruning_bound
from pace_cert.cert.records import label
from pace_cert.cert.verify_report import VerifyReport, claim
from pace_cert.model.runtime import labels
from pace_cert.oracle.cpsat import SeparationOracle
from pace_cert.oracle.score_model import RegionSpec, ScoreModel
from pace_cert.oracle.screen import Screen
from pace_cert.oracle.settings import OracleSettings
from pace_cert.plumbing.budget import Budget
from pace_cert.region.margins import required_margin
from pace_cert.region.masks import region_mask

#: pair status when no proof is needed: the two files are the same bytes
IDENTICAL = "IDENTICAL"
#: pair status when the certificate claims no proof (inconclusive) and none is run
NOT_CLAIMED = "NOT CLAIMED"


@dataclass
class Context:
    """What verify rebuilt from the files (``verify._prove``), handed to the checks."""

    cert: Certificate
    orig: object
    comp: object
    forest: object
    domain: object
    c_o: float
    so: object
    sc: object
    identical: bool
    settings: OracleSettings  # the oracle's (its backend)


def faithfulness(
    ctx: Context,
    threads: int,
    time_limit: float | None,
    exhaustive: bool,
    X_data: np.ndarray | None,
) -> VerifyReport:
    """The proof (fresh CP-SAT models per pair; none when the two files are identical
    or the certificate claims none), the onnxruntime replays (history points,
    ``X_data``, every cell with ``exhaustive``) and the size-bound and learner claims
    that need onnxruntime or the trees' splits."""
    cert, orig, comp = ctx.cert, ctx.orig, ctx.comp
    forest, domain, c_o, so, sc = ctx.forest, ctx.domain, ctx.c_o, ctx.so, ctx.sc
    certified = cert.summary.certified
    kept = pruning_sources(orig, comp)  # from the two models, never from the learners
    catalog = {c.key: c for c in claim_catalog(cert, kept)}
    claims: list[dict] = []

    def check(key: str, text: str | None = None) -> None:
        c = catalog.get(key)
        claims.append(claim(key, c.handling if c else "checked", text or (c.text if c else "")))

    def refute(key: str, message: str, counterexample=None, n_cells=None) -> VerifyReport:
        return VerifyReport(
            1,
            "refuted",
            message,
            pairs,
            counterexample,
            replayed,
            n_cells,
            claims=[claim(key, "refuted", message)],
        )

    labels_of = [label(orig.classes, i) for i in range(orig.n_classes)]
    ordered = [(a, b) for a in range(orig.n_classes) for b in range(orig.n_classes) if a != b]
    replayed = 0
    if ctx.identical or not certified:
        status = IDENTICAL if ctx.identical else NOT_CLAIMED
        pairs = [
            {"y0": labels_of[a], "y": labels_of[b], "status": status, "seconds": 0.0}
            for a, b in ordered
        ]
        results = None
    else:
        pl_model = None if forest is None else ScoreModel.sum_of(forest.trees)
        region = RegionSpec(c_o, pl_model, None if forest is None else forest.delta_abs)
        original = ScoreModel.from_ensemble(orig)
        hints = Screen(domain, original, region, seed=cert.seed)  # every cell of a small domain
        oracle = SeparationOracle(
            domain, original, region, seed=cert.seed, settings=ctx.settings, hints=hints
        )
        results = oracle.separate(
            ScoreModel.from_ensemble(comp),
            required_margin(comp),
            threads=threads,
            budget=Budget.seconds(time_limit),
        )
        pairs = [
            {
                "y0": label(orig.classes, r.y0),
                "y": label(orig.classes, r.y),
                "status": r.status,
                "seconds": round(r.seconds, 4),
            }
            for r in results
        ]
        for r in results:
            if r.status == "FEASIBLE":
                x = r.point[None, :]
                lo, lc = labels(so, x)[0], labels(sc, x)[0]
                why = (
                    "the models disagree"
                    if lo != lc
                    else "the compressed margin is not above the rounding bound there"
                )
                return refute(
                    "faithfulness",
                    f"pair ({label(orig.classes, r.y0)}, {label(orig.classes, r.y)}): {why}",
                    counterexample(x[0], lo, lc),
                )
    # replay: history points (and data) inside the region must agree under onnxruntime
    hist = [h for p in cert.pairs for h in p.history]
    X = np.asarray([h.point for h in hist], np.float32).reshape(-1, orig.n_features)
    if X_data is not None:
        X = np.vstack([X, X_data])
    replayed = len(X)
    if not ctx.identical:  # identical files give identical labels: nothing to compare
        bad = disagreements(orig, c_o, forest, domain, X, so, sc)
        if bad is not None:
            return refute("history.points", "replayed point disagrees", bad)
    if hist:  # the original's label at each history point inside the region (there
        # onnxruntime's label is the IR's, which compress recorded), as stated
        Xh = X[: len(hist)]
        inside = region_mask(orig, c_o, forest, Xh, domain)
        got = [plain_label(v) for v in labels(so, Xh)]
        wrong = [i for i, h in enumerate(hist) if inside[i] and got[i] != h.original_label]
        if wrong:
            h = hist[wrong[0]]
            return refute(
                "history.points",
                f"history point of pair ({h.y0}, {h.y}) states original label "
                f"{h.original_label!r}, onnxruntime gives {got[wrong[0]]!r}",
            )
    check("history.points")
    check("history.completeness")
    problems = witness_problems(cert, orig, c_o, forest, domain, so)
    if problems:
        return refute("size_lower_bound.witnesses", "size lower bound: " + "; ".join(problems[:3]))
    for key in ("size_lower_bound.witnesses", "size_lower_bound.synthesis", "minimal"):
        if key in catalog:
            check(key)
    if (pb := cert.summary.pruning_bound) is not None:
        if why := pruning_bound_contradiction(cert, kept):
            return refute("size_lower_bound.pruning", "pruning bound: " + why)
        bc = check_pruning_bound(
            orig,
            lambda Z: region_mask(orig, c_o, forest, Z, domain),
            pb,
            lambda k: label(orig.classes, k),
            time_limit,
        )
        if bc.status == "refuted":
            return refute("size_lower_bound.pruning", bc.text)
        if bc.status == "checked":
            check("size_lower_bound.pruning", bc.text)
            if "minimal_pruning" in catalog:
                check("minimal_pruning")
        else:
            claims.append(claim("size_lower_bound.pruning", "stated", bc.text))
        rep_pruning_bound = pb.value if bc.status == "checked" else None
    else:
        rep_pruning_bound = None
    problems = learner_problems(cert, orig, comp)
    if problems:
        return refute("learners", "learners: " + "; ".join(problems[:3]))
    n_checked = sum(len(lr.original_trees) for lr in cert.learners)
    check(
        "learners",
        f"the {n_checked} original trees the certificate names share every split of the "
        "compressed tree naming them"
        if checks_learners(cert) and n_checked
        else None,
    )
    n_cells = None
    if exhaustive and not ctx.identical:
        n_cells = cell_count(domain)
        reps = [domain.reps[i][domain.allowed(i)] for i in range(orig.n_features)]
        grid = np.array(list(itertools.product(*reps)), np.float32).reshape(-1, orig.n_features)
        bad = disagreements(orig, c_o, forest, domain, grid, so, sc)
        if bad is not None:
            return refute("faithfulness", "a cell disagrees", bad, n_cells)
    for key in ("status", "models", "region.parameters", "region.constants", "pairs", "scaling"):
        if key in catalog:
            check(key)
    for key in ("deployment.structure", "deployment.comparisons", "deployment.latency"):
        if key in catalog:
            check(key)
    if problems := leaf_witness_problems(cert, orig, c_o, forest, domain, so):
        return refute("single_tree.leaf_witnesses", "leaf bound: " + "; ".join(problems[:3]))
    for key in (
        "single_tree.leaves_lower_bound",
        "single_tree.leaf_witnesses",
        "single_tree.none_within_caps",
    ):
        if key in catalog:
            check(key)
    for key in ("data.coverage", "data.agreement", "run"):
        check(key)
    if "floor" in catalog:
        check("floor")
    if results is not None and any(r.status != "INFEASIBLE" for r in results):
        return VerifyReport(
            2,
            "inconclusive",
            "time limit before every pair was proved",
            pairs,
            claims=[
                *claims,
                claim("faithfulness", "stated", "not re-proved: verify's time limit"),
            ],
        )
    if not certified:
        message = (
            "the certificate claims no compression: compress certified nothing smaller "
            "and the compressed model is the original, byte for byte (nothing to prove)"
        )
        rep = VerifyReport(2, "inconclusive", message, pairs, None, replayed)
    elif ctx.identical:
        message = "the compressed model is the original, byte for byte: nothing to prove"
        rep = VerifyReport(0, "verified", message, pairs, None, replayed)
    else:
        message = f"all {len(results)} pairs proved INFEASIBLE"
        rep = VerifyReport(0, "verified", message, pairs, None, replayed, n_cells)
    if certified:
        check("faithfulness")
        if n_cells is not None:
            claims[-1]["text"] += f"; every one of the {n_cells} cells replayed"
    order = list(catalog)
    rep.claims = sorted(claims, key=lambda c: order.index(c["key"]) if c["key"] in order else 99)
    if cert.summary.witness_bound is not None:
        rep.witnesses_checked = len(cert.summary.boundary_witnesses)
        rep.witness_bound = cert.summary.witness_bound
    rep.size_lower_bound = cert.summary.size_lower_bound
    rep.pruning_bound = rep_pruning_bound
    if checks_learners(cert):
        rep.merged_trees_checked = n_checked
    return rep


def cell_count(domain) -> int:
    """Cells of the domain an exhaustive replay visits (one representative each); an
    exact Python integer (numpy's int64 product wrapped negative on 7 features of ~1,000
    cells, passed the limit check and ran out of memory)."""
    return math.prod(int(domain.allowed(i).sum()) for i in range(domain.n_features))
