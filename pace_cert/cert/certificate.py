"""The JSON certificate (SPEC §6): pydantic models, builder and schema export.

``python -m pace_cert.cert.certificate schemas/certificate.schema.json`` (``make schema``)
regenerates the schema; a test fails when the committed file drifts from the models.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from pace_cert.model.ensemble import family_of

SCHEMA_VERSION = "1.5"  # 1.1: summary.size_lower_bound; 1.2: boundary witnesses (optional);
# 1.3: learners' merged / original_trees, history phase "merge", summary.phase "merge";
# 1.4: history points without compressed_label (the label of an intermediate candidate,
# which verify cannot replay), data (the training CSV's hash), region.coverage;
# 1.5: original/compressed family, estimators and input_transform (a Pipeline's
# Scaler/Imputer folded into the split thresholds)
Label = int | str


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Solvers(_Strict):
    ortools: str
    highspy: str
    gurobipy: str | None = None


class CpSatParameters(_Strict):
    num_workers_per_pair: str = Field(description="CP-SAT workers per solve of a pair")
    random_seed: int
    schedule: str | None = Field(
        default=None,
        description="how the threads are spread over the pairs: race (single-worker "
        "solves, several seeds per pair, the first decisive one kept) or sequential",
    )
    time_limit_seconds: float | None
    presolve: dict = Field(default_factory=dict, description="CP-SAT parameters set by pace-cert")


class FoldedThreshold(_Strict):
    """One split threshold of the exported trees and the raw-input split it became."""

    feature: int
    threshold: float = Field(
        description="the exported trees' float32 threshold on the transformed feature "
        "(split: transformed x <= threshold, after normalising the split mode)"
    )
    raw_threshold: float | None = Field(
        description="float32 t on the model input: transformed x <= threshold exactly when "
        "x <= t (how = same) or x > t (how = swapped), for every non-NaN float32 x; "
        "null when the split is constant"
    )
    how: Literal["same", "swapped", "always-left", "always-right"]


class InputTransform(_Strict):
    """Per-feature monotone transforms between the input and the trees (a Pipeline's
    Imputer of NaN and Scaler), folded into the split thresholds: both models' trees
    read the raw input."""

    ops: list[str] = Field(description="the transforms, in input order")
    folded: list[FoldedThreshold] = Field(
        description="every distinct (feature, threshold) of the exported trees: the raw "
        "float32 boundary found by search over float32 and confirmed with onnxruntime on "
        "both of its sides"
    )


class ModelSummary(_Strict):
    path: str = Field(description="path as given on the command line")
    sha256: str
    trees: int
    max_depth: int
    leaves: int
    classes: list[Label]
    features: int
    pattern: str = Field(description="exporter pattern recognised by the reader")
    family: str | None = Field(
        default=None,
        description="model family as recognised (schema 1.5; null in older certificates)",
    )
    estimators: int | None = Field(
        default=None,
        description="trained estimators: equals trees except for multi-class gradient "
        "boosting, where one estimator is one tree per class (100 estimators x 3 classes = "
        "300 trees) (schema 1.5; null in older certificates)",
    )
    input_transform: InputTransform | None = Field(
        default=None,
        description="transforms between the input and the trees folded into the split "
        "thresholds (schema 1.5); null when the trees read the input as it is",
    )


class Learner(_Strict):
    index: int = Field(description="tree index in the compressed model")
    origin: Literal["original", "new"]
    weight: float = Field(
        description="master weight folded into this tree's leaf values (summed over the "
        "learners merged into it)"
    )
    merged: int = Field(
        default=1,
        description="learners (original or new) whose weighted leaf values this tree sums: "
        "they share every split, so one tree scores every input as they do together",
    )
    original_trees: list[int] = Field(
        default_factory=list,
        description="indices (0-based, in the original model) of the original trees among "
        "the learners merged into this tree",
    )


class Plausibility(_Strict):
    path: str = Field(description="artifact file name, next to the compressed model")
    sha256: str
    n_estimators: int
    max_samples: int
    seed: int


class Coverage(_Strict):
    """Where the training rows lie with respect to the region. Every row is counted once,
    in the first of these that applies: outside the domain, in the tie band, low
    confidence, implausible; the rest are inside (``inside`` equals ``samples_kept``)."""

    rows: int = Field(description="training rows (the data file's data rows)")
    inside: int = Field(description="rows inside the region")
    outside_domain: int = Field(description="rows outside the stated feature domain")
    tie_band: int = Field(
        description="rows where the original's own margin is at most runtime_guard (its "
        "float32 noise floor): outside every region, eta = 0 included"
    )
    low_confidence: int = Field(
        description="rows above the tie band whose original margin is at most "
        "margin_threshold (eta)"
    )
    implausible: int = Field(
        description="rows with margin above margin_threshold but A(x) < delta_abs"
    )


class Region(_Strict):
    eta: float
    eta_units: Literal["vote share", "raw score"]
    margin_scale: float = Field(description="sigma: score difference per unit of eta")
    runtime_guard: float = Field(
        description="bound on onnxruntime's float32 error of the original's score differences"
    )
    margin_threshold: float = Field(
        description="c_o = max(eta*sigma, runtime_guard): the original beats every other class "
        "by more than this (score units) inside the region"
    )
    delta: float
    delta_abs: float | None
    plausibility: Plausibility | None
    domain: dict
    samples_kept: int = Field(description="training rows inside the region")
    samples_dropped: int = Field(description="training rows outside it (incl. exact ties)")
    coverage: Coverage | None = Field(
        default=None,
        description="the training rows by where they lie (schema 1.4; null in older certificates)",
    )


class Scaling(_Strict):
    method: str
    bits: int
    compressed_margin: float = Field(
        description="E_req: the compressed model's y0 score exceeds every other class by more "
        "than this; covers onnxruntime's float32 accumulation error"
    )
    derivation: str


class HistoryPoint(_Strict):
    phase: Literal["merge", "l1", "l0", "boost", "refit", "start"]
    iteration: int
    y0: Label
    y: Label
    point: list[float] = Field(description="float32 values, exact when parsed as float32")
    original_label: Label


class PairCertificate(_Strict):
    y0: Label
    y: Label
    status: Literal["INFEASIBLE", "FEASIBLE", "UNKNOWN"]
    eta: float
    delta: float
    delta_abs: float | None
    scale_exp: int = Field(description="the separation condition was scaled by 2**scale_exp")
    rounding_bound: float = Field(description="E_cp of the separation condition, score units")
    region_rounding_bound: float
    compressed_margin: float
    seconds: float
    conflicts: int
    branches: int
    spurious_excluded: int = Field(
        description="points inside the rounding slack but outside the region, excluded by nogoods"
    )
    history: list[HistoryPoint]


class BoundaryWitness(_Strict):
    feature: int = Field(description="the one feature (0-based) where x and x_next differ")
    x: list[float] = Field(description="float32 values, exact when parsed as float32")
    value_next: float = Field(
        description="x_next = x with this (larger, float32) value of the feature"
    )
    label: Label = Field(description="the original's label at x")
    label_next: Label = Field(description="the original's label at x_next (not label)")


class Summary(_Strict):
    certified: bool
    status: Literal["certified", "inconclusive"]
    mode: str
    phase: str = Field(
        description="phase whose model was kept: merge (the original, trees sharing every "
        "split merged, possibly without trees that split no witnessed gap), free-removal "
        "(the original without trees no region input can notice), l1, l0, "
        "l0-grow, l0-reweighted, eliminate, boost, l0-enriched, refit, synth, l0-enriched-grow, "
        "l0-enriched-reweighted, l1-generated or start (the model of a frontier's "
        "enclosing rung, certified again in this region)"
    )
    trees_before: int
    trees_after: int
    leaves_before: int
    leaves_after: int
    new_learner_share: float
    l1_values: list[float]
    last_reduced_cost: float | None
    reduced_costs: list[float] = Field(
        default_factory=list, description="best reduced cost found at each pricing round"
    )
    pricing: Literal["none", "exact", "heuristic"]
    generation_stop: str
    l0_big_m: float | None
    l0_optimal: bool | None = Field(
        description="true when an L0 loop certified a model whose support was proved "
        "optimal on its samples (so no weighting of the pool with fewer learners meets "
        "those samples by a margin that float32 inference resolves) and the kept "
        "model has that many learners; false when an L0 problem was solved but that is "
        "not established (time-limited solves, or a larger fallback: l1, l0-grow, l0-reweighted, "
        "boost); null when no L0 problem was solved. When a big-M MILP took part "
        "(l0_big_m not null), the proof may be the MILP's, which only rules out smaller "
        "weightings whose weights stay below l0_big_m"
    )
    size_lower_bound: int | None = Field(
        default=None,
        description="no faithful model of fewer trees of depth <= the original's max_depth "
        "exists in the region, whatever its thresholds, leaf values and weights; when it "
        "equals trees_after the compressed model is the smallest of its family. The larger "
        "of witness_bound and (pace mode, depth <= 2) the synthesis proofs: CP-SAT proved "
        "(INFEASIBLE) that no set of fewer trees splits the samples collected (training rows "
        "in the region and separating samples) into cells of one original label; verify "
        "does not re-check those. null when not computed",
    )
    witness_bound: int | None = Field(
        default=None,
        description="ceil(len(boundary_witnesses) / (2**max_depth - 1)) (at most "
        "2048 witnesses are kept): each witness pair "
        "needs a split of its feature at a threshold in [x_i, x_next_i), the witnesses of a "
        "feature have disjoint such intervals, and a tree of depth <= d has at most "
        "2**d - 1 splits. verify re-checks every witness with onnxruntime. null when no "
        "witness was found",
    )
    boundary_witnesses: list[BoundaryWitness] = Field(
        default_factory=list,
        description="pairs of region points differing in one feature that the original "
        "labels differently; the evidence for witness_bound",
    )
    fidelity: float = Field(description="agreement with the original on the data given")
    accuracy_original: float
    accuracy_compressed: float
    seconds: float


class DataSummary(_Strict):
    """The training CSV the run read (``--data``): verify ``--data`` re-counts the
    coverage when given the same file."""

    path: str = Field(description="path as given on the command line")
    sha256: str = Field(description="SHA-256 of the file's bytes")
    rows: int
    target: str = Field(description="the label column (--target)")


class Certificate(_Strict):
    schema_version: str = SCHEMA_VERSION
    tool: str = "pace-cert"
    tool_version: str
    created: str
    solvers: Solvers
    cpsat: CpSatParameters
    seed: int
    threads: int
    input_semantics: str = (
        "float32 inputs, NaN excluded; labels as onnxruntime computes them from the ONNX files"
    )
    original: ModelSummary
    compressed: ModelSummary
    data: DataSummary | None = Field(
        default=None, description="the training CSV (schema 1.4; null in older certificates)"
    )
    learners: list[Learner]
    region: Region
    scaling: Scaling
    pairs: list[PairCertificate]
    summary: Summary


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def solver_versions(gurobi_used: bool = False) -> Solvers:
    def v(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return Solvers(
        ortools=v("ortools") or "?",
        highspy=v("highspy") or "?",
        gurobipy=v("gurobipy") if gurobi_used else None,
    )


def label(classes: np.ndarray, i: int) -> Label:
    c = classes[int(i)]
    return str(c) if isinstance(c, str | np.str_) else int(c)


def input_transform(ens) -> InputTransform | None:
    """The certificate's record of ``ens.input_folding`` (None without one)."""
    fold = ens.input_folding
    if fold is None:
        return None
    return InputTransform(
        ops=list(fold.ops),
        folded=[
            FoldedThreshold(
                feature=s.feature, threshold=s.threshold, raw_threshold=s.raw, how=s.how
            )
            for s in fold.splits
        ],
    )


def model_summary(path: str, sha: str, ens) -> ModelSummary:
    return ModelSummary(
        path=str(path),
        sha256=sha,
        trees=ens.n_trees,
        max_depth=ens.max_depth,
        leaves=ens.n_leaves,
        classes=[label(ens.classes, i) for i in range(ens.n_classes)],
        features=ens.n_features,
        pattern=ens.pattern,
        family=family_of(ens),
        estimators=ens.n_estimators,
        input_transform=input_transform(ens),
    )


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


SCALING_METHOD = (
    "per condition: s = 2**p with sum of per-tree max |coefficient| * s in (2**47, 2**48]; "
    "coefficients rounded to nearest (error <= 1 unit each incl. float64 error); "
    "right-hand sides rounded outward with exact rationals so the integer set is a superset"
)
SCALING_DERIVATION = (
    "E_req = 2 * gamma_(n+1) * (sum_t max_leaf |v_t| + max |base|), gamma_m = m u/(1-m u), "
    "u = 2**-24, n = trees: onnxruntime's float32 error on each of two class scores, any order"
)


def bound_line(summary: Summary, depth: int) -> str:
    """One line (with newline) on ``summary.size_lower_bound`` for a certified result of
    an original of depth ``depth``; empty when there is no bound."""
    b = summary.size_lower_bound
    if b is None or not summary.certified:
        return ""
    what = "minimal" if b >= summary.trees_after else "lower bound"
    how = (
        f" ({len(summary.boundary_witnesses)} boundary witnesses)"
        if summary.witness_bound is not None and summary.witness_bound >= b
        else ""
    )
    return (
        f"{what}: no faithful model of fewer than {b} trees of depth <= {depth} in the "
        f"region{how}\n"
    )


def write_schema(path: str | Path) -> None:
    schema = Certificate.model_json_schema()
    Path(path).write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":  # pragma: no cover - exercised by `make schema`
    write_schema(sys.argv[1] if len(sys.argv) > 1 else "schemas/certificate.schema.json")
    print("schema written")
