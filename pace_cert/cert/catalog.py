"""The catalog of what a certificate states, claim by claim, and what verify does with
each (checks it against the two models, or takes it as stated): verify's answer lists
it, the report's "what verify re-checks" table shows it. The checks are ``claims.py``'s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pace_cert.cert.certificate import Certificate
from pace_cert.cert.claims import in_bound_family, synthesis_part
from pace_cert.cert.words import minimal_pruning, pruning_of

Handling = Literal["checked", "stated"]


@dataclass(frozen=True)
class Claim:
    """One statement of a certificate and what ``verify`` does with it: ``checked``
    (recomputed from the two ONNX files, the plausibility artifact and, for the data,
    the same CSV; a contradiction refutes) or ``stated`` (a record or a parameter verify
    takes as given). ``key`` is stable (``verify --json``)."""

    key: str
    handling: Handling
    text: str


#: ``claim_catalog``'s default: whether the compressed model is a pruning is read
#: from the certificate's learners (the report, which has no models)
FROM_LEARNERS = "learners"


def claim_catalog(cert: Certificate, kept: list[int] | str | None = FROM_LEARNERS) -> list[Claim]:
    """What ``cert`` states, claim by claim, and how verify treats each (the report's
    "what verify re-checks" table; verify fills in what it found). ``kept``: the
    original trees the compressed model keeps when it is a pruning, None when it is not
    one (verify proves either from the two ONNX files:
    :func:`pace_cert.cert.checks.pruning_sources`); by default read from the learners."""
    s = cert.summary
    if kept == FROM_LEARNERS:
        kept = pruning_of(cert)
    identical = cert.compressed.sha256 == cert.original.sha256
    n_pairs = len(cert.pairs)
    n_hist = sum(len(p.history) for p in cert.pairs)
    depth = cert.original.max_depth
    out = [
        Claim(
            "status",
            "checked",
            f"{s.status}, consistent with the pairs"
            + ("; the compressed model is the original, byte for byte" if not s.certified else ""),
        )
    ]
    if s.certified:
        out.append(
            Claim(
                "faithfulness",
                "checked",
                "the two files are identical: onnxruntime returns the same label everywhere, "
                "nothing to prove"
                if identical
                else f"inside the region the compressed model's y0 score beats every other "
                f"class by more than E_req, so onnxruntime returns the original's label: "
                f"all {n_pairs} ordered pairs re-proved INFEASIBLE with fresh CP-SAT models",
            )
        )
    out += [
        Claim(
            "models",
            "checked",
            "SHA-256, trees, depth, leaves, classes, features, exporter pattern, family, "
            "estimators and folded input transform of both files; the compressed model "
            "keeps the original's input, outputs and label type",
        ),
        Claim(
            "region.parameters",
            "stated",
            "eta, delta, the plausibility artifact (its hash is checked), the feature domain "
            "and the seed: the parameters of the claim, which verify proves under",
        ),
        Claim(
            "region.constants",
            "checked",
            "eta units, margin scale, runtime guard, margin threshold c_o and delta_abs: "
            "recomputed from the original and the plausibility artifact",
        ),
        Claim(
            "pairs",
            "checked",
            f"{n_pairs} entries, one per ordered pair, under the region's eta, delta, delta_abs "
            "and E_req; "
            + ("each INFEASIBLE" if s.certified else "each UNKNOWN (no proof is kept)"),
        ),
    ]
    if s.certified:
        out.append(Claim("scaling", "checked", "E_req (scaling.compressed_margin): recomputed"))
    out += [
        Claim(
            "history.points",
            "checked",
            f"{n_hist} separating samples replayed through onnxruntime: inside the region "
            "both models agree and the original's label is the one stated",
        ),
        Claim(
            "history.completeness",
            "stated",
            "that these are all the separating samples the run added (a record of the run)",
        ),
    ]
    if s.witness_bound is not None:
        out.append(
            Claim(
                "size_lower_bound.witnesses",
                "checked",
                f"{len(s.boundary_witnesses)} boundary witnesses re-checked with onnxruntime: "
                f"no faithful model of fewer than {s.witness_bound} trees of depth <= {depth}",
            )
        )
    pb = s.pruning_bound
    if pb is not None:
        out.append(
            Claim(
                "size_lower_bound.pruning",
                "checked",
                f"no faithful pruning of the original (a subset of its trees, weights >= 0, "
                f"any class offsets) has fewer than {pb.value} trees: {len(pb.points)} region "
                f"points re-checked, {len(pb.cuts)} cuts' multipliers re-added exactly, the "
                "hitting-set bound re-proved by CP-SAT",
            )
        )
        if minimal_pruning(cert, kept):
            out.append(
                Claim(
                    "minimal_pruning",
                    "checked",
                    f"{s.trees_after} trees is minimal among prunings of the original: the "
                    "compressed model is a pruning (each tree a scaled copy of one original "
                    f"tree, compared in the two files) and the pruning bound is {pb.value}",
                )
            )
    synth = synthesis_part(cert)
    if synth is not None:
        out.append(
            Claim(
                "size_lower_bound.synthesis",
                "stated",
                f"no faithful model of fewer than {synth} trees of depth <= {depth}: from "
                "compress's CP-SAT synthesis proofs, which verify does not re-check",
            )
        )
    if (
        s.certified
        and s.size_lower_bound is not None
        and s.size_lower_bound >= s.trees_after
        and in_bound_family(cert)
    ):
        by_witnesses = (s.witness_bound or 0) >= s.trees_after
        out.append(
            Claim(
                "minimal",
                "checked" if by_witnesses else "stated",
                f"{s.trees_after} trees is minimal in the region: "
                + (
                    "the boundary witnesses prove it"
                    if by_witnesses
                    else "it rests on the synthesis proofs (stated)"
                ),
            )
        )
    out += _deployment_claims(cert)
    out += _single_tree_claims(cert)
    out += [
        Claim(
            "learners",
            "checked",
            "each compressed tree's origin, and the original trees it names share every "
            "split with it; an unmerged original tree scores weight times the original's "
            "leaves (weights of merged and new trees are stated)",
        ),
        Claim(
            "data.coverage",
            "stated",
            "where the training rows lie (inside, low confidence, implausible, tie band): "
            "verify --data re-counts them from the same file (same SHA-256)",
        ),
        Claim(
            "data.agreement",
            "stated",
            "fidelity and accuracies on the training rows (verify --data reports its own "
            "agreement under onnxruntime)",
        ),
        Claim(
            "run",
            "stated",
            "mode, phase, times, solver versions, CP-SAT settings, L1 values, reduced costs, "
            "pricing, generation stop, l0_optimal: a record of the run" + _ended_words(cert),
        ),
    ]
    if cert.summary.floor:
        out.append(
            Claim(
                "floor",
                "stated",
                "the floor table: the free-pattern estimate per coverage rung, said before "
                "the work (estimates, not bounds: nothing to re-check)",
            )
        )
    return out


def _single_tree_claims(cert: Certificate) -> list[Claim]:
    """Mode tree's statements about single trees (none in other modes): the leaf bound
    and a cap no tree met rest on compress's exact program, which verify does not run."""
    t = cert.summary.single_tree
    if t is None:
        return []
    out = []
    if t.leaves_lower_bound is not None:
        depth = "" if t.max_depth is None else f" of depth <= {t.max_depth}"
        out.append(
            Claim(
                "single_tree.leaves_lower_bound",
                "stated",
                f"no faithful decision tree{depth} has fewer than {t.leaves_lower_bound} "
                "leaves in the region: compress's exact program on every region cell, which "
                "verify does not re-run",
            )
        )
    if t.leaf_witnesses is not None:
        lw = t.leaf_witnesses
        out.append(
            Claim(
                "single_tree.leaf_witnesses",
                "checked",
                f"every faithful decision tree (any depth) has at least {lw.bound} leaves: "
                f"{lw.bound} region points, each same-label pair with a separator in its "
                f"bounding box ({len(lw.separators)} separators), re-checked with "
                "onnxruntime on the original and the region rebuilt here",
            )
        )
    if t.none_within_caps:
        out.append(
            Claim(
                "single_tree.none_within_caps",
                "stated",
                f"no tree within the caps: {t.none_within_caps} (compress's fit, not re-run)",
            )
        )
    return out


def _deployment_claims(cert: Certificate) -> list[Claim]:
    """What ``summary.deployment`` states (none in older certificates): the structure
    and bytes are checked, comparisons per prediction need the data, the latency is a
    measurement (stated)."""
    dep = cert.summary.deployment
    if dep is None:
        return []
    b, a = dep.before, dep.after
    if dep.latency_setup is None:
        latency = f"onnxruntime latency: {dep.latency_note or 'not measured'}"
    else:
        latency = (
            f"onnxruntime latency per row ({b.latency_us_per_row_batch:.3g} -> "
            f"{a.latency_us_per_row_batch:.3g} us over a batch of "
            f"{dep.latency_setup.batch_rows} rows, {b.latency_us_batch1:.3g} -> "
            f"{a.latency_us_batch1:.3g} us at a batch of 1): measured by compress on this "
            "machine, not re-checked"
        )
    return [
        Claim(
            "deployment.structure",
            "checked",
            f"trees, leaves, internal nodes ({b.internal_nodes} -> {a.internal_nodes}), "
            f"maximum depth ({b.max_depth} -> {a.max_depth}) and ONNX bytes "
            f"({b.onnx_bytes} -> {a.onnx_bytes}) of both models: recounted from the two files",
        ),
        Claim(
            "deployment.comparisons",
            "stated",
            f"mean comparisons per prediction on the {dep.rows} data rows without missing "
            f"values ({b.mean_comparisons:.1f} -> {a.mean_comparisons:.1f}): verify --data "
            "re-counts them from the same file (same SHA-256); without it only their range "
            "is checked",
        ),
        Claim("deployment.latency", "stated", latency),
    ]


def _ended_words(cert: Certificate) -> str:
    """How the run ended, when the certificate says (e.g. the process guard's stop:
    ``the run ended at step l0: SIGTERM ended the run during this step``)."""
    s = cert.summary
    if not s.stop_reason:
        return ""
    limit = "; the time limit was reached" if s.time_limit_reached else ""
    return f"; the run ended at step {s.stop_reason}{limit}"


def is_pruning(cert: Certificate) -> bool:
    """Whether the certificate's learners say the compressed model keeps original trees
    only, one each (no new or merged trees): a pruning, the family the pruning bound
    covers. compress's and the report's reading (their own record); verify decides
    from the two models instead."""
    return pruning_of(cert) is not None
