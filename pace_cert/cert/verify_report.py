"""verify's answer (:class:`VerifyReport`) and the helpers that list its claims.
Split from :mod:`pace_cert.cert.verify`; like it, imports no compressor code."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class VerifyReport:
    """verify's answer. ``status``: verified (exit 0: every claim the certificate makes
    that verify checks holds, the proof included), refuted (1), inconclusive (2: verify's
    time limit stopped the proof, or the certificate itself is inconclusive and claims
    no compression). ``claims``: each statement of the certificate with ``checked``
    (re-done here), ``stated`` (taken as given; verify says so) or ``refuted``."""

    exit_code: int
    status: str  # verified | refuted | inconclusive
    message: str
    pairs: list[dict] = field(default_factory=list)
    counterexample: dict | None = None
    replayed: int = 0
    exhaustive_cells: int | None = None
    domain: dict | None = None  # the input domain proved over (stated bounds, features)
    region: dict | None = None  # eta, delta and the thresholds rebuilt from the models
    data_rows: int | None = None  # --data: rows replayed
    data_inside: int | None = None  # of them inside the region (domain included)
    data_outside_domain: int | None = None  # of them outside the stated domain (not covered)
    data_agreement: float | None = None  # --data: share of rows with equal onnxruntime labels
    data_missing: int | None = None  # --data: rows with missing values (outside every proof)
    feature_names: list[str] | None = None  # the certificate's names of the features
    data_missing_changed: int | None = None  # of them labelled differently by onnxruntime
    data_same_file: bool | None = None  # --data is the file compress read (same SHA-256)
    coverage: dict | None = None  # --data: where the rows lie (cert/coverage.py)
    probe_points: int | None = None  # --probe: random points near the data replayed
    probe_inside: int | None = None  # of them inside the region
    witnesses_checked: int | None = None  # boundary witnesses re-checked (size lower bound)
    witness_bound: int | None = None  # the bound they give: fewer trees cannot be faithful
    size_lower_bound: int | None = None  # the certificate's bound (>= witness_bound; the
    # rest, from compress's CP-SAT synthesis proofs, is not re-checked: claims say so)
    merged_trees_checked: int | None = None  # original trees named by learners, re-checked
    pruning_bound: int | None = None  # the certificate's pruning bound, re-checked here
    certificate_status: str | None = None  # what the certificate says: certified | inconclusive
    identical: bool = False  # the compressed file is the original, byte for byte
    claims: list[dict] = field(default_factory=list)  # {key, status, text}

    @property
    def verified(self) -> bool:
        return self.exit_code == 0

    def to_json(self) -> dict:
        """Stable keys: ``verified`` (bool), ``status``, ``certificate_status``,
        ``pairs``, ``claims`` (each ``{key, status: checked | stated | refuted, text}``)
        and the counts."""
        return {
            "verified": self.verified,
            "status": self.status,
            "exit_code": self.exit_code,
            "message": self.message,
            "certificate_status": self.certificate_status,
            "identical_models": self.identical,
            "pairs": self.pairs,
            "claims": self.claims,
            "counterexample": self.counterexample,
            "replayed_points": self.replayed,
            "exhaustive_cells": self.exhaustive_cells,
            "domain": self.domain,
            "region": self.region,
            "data_rows": self.data_rows,
            "data_inside_region": self.data_inside,
            "data_outside_domain": self.data_outside_domain,
            "data_agreement": self.data_agreement,
            "data_missing": self.data_missing,
            "data_missing_changed": self.data_missing_changed,
            "data_same_file": self.data_same_file,
            "coverage": self.coverage,
            "probe_points": self.probe_points,
            "probe_inside_region": self.probe_inside,
            "witnesses_checked": self.witnesses_checked,
            "witness_bound": self.witness_bound,
            "size_lower_bound": self.size_lower_bound,
            "merged_trees_checked": self.merged_trees_checked,
            "pruning_bound": self.pruning_bound,
        }


def claim(key: str, status: str, text: str) -> dict:
    return {"key": key, "status": status, "text": text}


def refuted(rep: VerifyReport, key: str, message: str, counterexample=None) -> VerifyReport:
    """``rep`` turned into a refutation of ``key``: the one claim listed (a refuted
    certificate is not read further, so no other claim is reported as checked)."""
    return VerifyReport(
        1,
        "refuted",
        message,
        rep.pairs,
        counterexample,
        rep.replayed,
        claims=[claim(key, "refuted", message)],
    )


def set_claim(rep: VerifyReport, key: str, status: str, text: str) -> None:
    for c in rep.claims:
        if c["key"] == key:
            c["status"], c["text"] = status, text
            return
    rep.claims.append(claim(key, status, text))
