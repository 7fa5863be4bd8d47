"""The JSON certificate (SPEC §6): its pydantic models and the schema export, where
``python -m pace_cert.cert.certificate schemas/certificate.schema.json`` (``make schema``)
regenerates the schema; a test fails when the committed file drifts from the models."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1.8"  # 1.1: summary.size_lower_bound; 1.2: boundary witnesses (optional);
# 1.3: learners' merged / original_trees, history phase "merge", summary.phase "merge";
# 1.4: history points without compressed_label (the label of an intermediate candidate,
# which verify cannot replay), data (the training CSV's hash), region.coverage;
# 1.5: original/compressed family, estimators and input_transform (a Pipeline's
# Scaler/Imputer folded into the split thresholds); 1.6: summary.pruning_bound (points,
# cuts and multipliers verify re-checks), summary.stop_reason and
# summary.time_limit_reached (optional), data.feature_names, region.coverage.missing
# (rows with NaN) and summary.missing_label_changes; 1.7: mode "tree" (history phase
# "tree", summary.single_tree), summary.objective and summary.learner_depth, and
# summary.deployment (both models' size in trees, leaves, internal nodes, depth,
# comparisons per prediction, ONNX bytes and measured onnxruntime latency), all optional;
# 1.8: data.columns_matched_by (name or position), summary.single_tree.fallback and .leaf_witnesses,
# region.coverage_asked (--coverage)
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
    in the first of these that applies: missing values, outside the domain, in the tie
    band, low confidence, implausible; the rest are inside (``inside`` equals
    ``samples_kept``)."""

    rows: int = Field(description="training rows (the data file's data rows)")
    inside: int = Field(description="rows inside the region")
    missing: int = Field(
        default=0,
        description="rows with a missing value (NaN, an empty cell) in a feature: outside "
        "every proof (NaN is in no region); the region is built from the other rows "
        "(schema 1.6; 0 in older certificates, which refused such rows)",
    )
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
    coverage_asked: float | None = Field(
        default=None,
        description="--coverage: the share of the training rows asked for, in %; eta was "
        "derived from the rows to hold at least that share by margin (schema 1.8); null when "
        "eta was given",
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
    phase: Literal["merge", "l1", "l0", "boost", "refit", "start", "tree"]
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


class PruningCombo(_Strict):
    """Margin rows added up with one non-negative weight. A row ``[i, k]`` is "the
    original's label at point i beats class k" (k is a class index, not the label);
    the rows of one combo form a closed walk over the classes (every class is won as
    often as it is beaten), so any class offsets cancel in their sum."""

    rows: list[tuple[int, int]] = Field(description="[point index, other class index] pairs")
    weight: float = Field(description="the rows' multiplier, >= 0")


class PruningCut(_Strict):
    """A Farkas certificate: the combos' weighted row sums give every tree outside
    ``keep_one_of`` a coefficient <= 0, so no non-negative weighting of those trees (with
    any class offsets) meets every row with a positive margin; a faithful pruning keeps
    one of ``keep_one_of``."""

    keep_one_of: list[int] = Field(description="original tree indices (0-based)")
    combos: list[PruningCombo]


class PruningBound(_Strict):
    """A lower bound on the size of every faithful pruning of the original, checkable
    from the two files: every point is re-checked to lie in the region with the stated
    original label, every cut's multipliers are re-added exactly, and CP-SAT re-proves
    that no set of fewer than ``value`` trees meets every cut."""

    value: int = Field(
        description="every model that keeps fewer original trees (each tree's leaf values "
        "scaled by one factor >= 0, any class offsets) gives some point below another "
        "label: no such model is faithful in the region"
    )
    points: list[list[float]] = Field(
        description="region points, float32 values exact when parsed as float32"
    )
    labels: list[Label] = Field(description="the original's label at each point")
    cuts: list[PruningCut]
    meets_points: int | None = Field(
        default=None,
        description="size of a pruning whose LP weights meet every point (the bound is the "
        "exact minimum on the points when equal to value); stated, not re-checked",
    )
    seconds: float = Field(description="time compress spent on the bound")


class LeafWitnesses(_Strict):
    """Region points no faithful decision tree can put two of in one leaf (schema 1.8):
    points of different labels, and for each pair of one label a separator in their
    bounding box, in the region, with another label. ``bound`` = len(points) leaves."""

    points: list[list[float]] = Field(description="float32 values, exact when parsed as float32")
    labels: list[Label] = Field(description="the original's label at each point")
    separators: list[list[float]] = Field(description="float32 points, as the points")
    pairs: list[list[int]] = Field(
        description="[i, j, s]: points i < j share a label; separator s lies in their box, "
        "in the region, and the original labels it otherwise"
    )
    bound: int = Field(description="len(points): leaves every faithful decision tree has")


class FloorRung(_Strict):
    """One row of the floor table (schema 1.8): an estimate said before the work."""

    coverage: float | None = Field(
        description="% of the training rows the region holds by margin (null: the region asked for)"
    )
    eta: float = Field(description="the region's confidence level, in eta_units")
    trees_at_least: int = Field(
        description="the free-pattern estimate: no faithful pruning is expected to keep "
        "fewer trees if the trees' leaves combine freely (an estimate, not a bound: trees "
        "that share splits, binned features and the plausibility bound go below it)"
    )


class SingleTree(_Strict):
    """What mode tree learned about single trees in the region (schema 1.7)."""

    cells: int = Field(
        description="cells of the original's threshold grid the last tree was fit on (each "
        "holds a region point, labelled with the original's label there)"
    )
    complete: bool = Field(
        description="true when those were every cell with a region point (the domain was "
        "enumerated); else the known region points and the separating samples"
    )
    rounds: int = Field(description="rounds of fit-and-separate")
    max_depth: int | None = Field(description="the depth cap asked for (null: none)")
    max_leaves: int | None = Field(description="the leaf cap asked for (null: none)")
    leaves_lower_bound: int | None = Field(
        description="stated, not re-checked by verify: no decision tree of depth <= max_depth "
        "with fewer leaves is faithful in the region (the exact program's fewest leaves on "
        "exact region points, on a grid with no plausibility cut inside the original's "
        "cells); equal to the compressed model's leaves when it is the smallest. null when "
        "not proved"
    )
    none_within_caps: str | None = Field(
        default=None,
        description="why no tree within the caps was certified ('proved: ...' when the "
        "exact program showed that none exists); null when one was",
    )
    leaf_witnesses: LeafWitnesses | None = Field(
        default=None,
        description="checked by verify: every decision tree faithful in the region has at "
        "least leaf_witnesses.bound leaves (region points pairwise separated: no leaf of "
        "an axis-aligned tree holds two of them); any depth, δ > 0 and raw features "
        "included (schema 1.8); null when none was found",
    )
    fallback: Literal["prune"] | None = Field(
        default=None,
        description="'prune' when no single tree was certified and mode prune's steps ran "
        "in the time left: the compressed model is then the best certified pruning, not "
        "one tree (schema 1.8); null otherwise",
    )


class DeploymentSize(_Strict):
    """One model's size in what deployment pays for (schema 1.7)."""

    trees: int = Field(description="trees, counted as in the model summary")
    leaves: int = Field(description="leaves over all trees")
    internal_nodes: int = Field(description="split nodes over all trees")
    max_depth: int = Field(description="splits on the longest root-to-leaf path of any tree")
    mean_comparisons: float = Field(
        description="split comparisons per prediction (summed over the trees: the split "
        "nodes on the path to the row's leaf, as onnxruntime walks each tree), mean over "
        "deployment.rows data rows. Counted on pace-cert's reading of the trees: for a "
        "model whose input transform was folded into the thresholds (a Pipeline's "
        "Scaler/Imputer), on the folded trees, where a split constant on every input is "
        "gone"
    )
    onnx_bytes: int = Field(description="size of the ONNX file as written, bytes")
    latency_us_batch1: float | None = Field(
        description="measured by compress on this machine, not re-checked: median "
        "onnxruntime wall time of one call on a single row, microseconds "
        "(deployment.latency_setup says how); null when not measured"
    )
    latency_us_per_row_batch: float | None = Field(
        description="measured by compress on this machine, not re-checked: median "
        "onnxruntime wall time of one call on latency_setup.batch_rows rows at once, "
        "divided by those rows, microseconds per row; null when not measured"
    )


class LatencySetup(_Strict):
    """How compress measured the latency (measured on this machine, not re-checked)."""

    onnxruntime: str = Field(description="onnxruntime version")
    provider: str = Field(description="execution provider")
    intra_op_threads: int
    inter_op_threads: int
    execution_mode: str = Field(description="onnxruntime execution mode")
    fetched: str = Field(description="the outputs each call fetches")
    order: str = Field(description="how the two models' calls were ordered")
    batch1_calls: int = Field(description="single-row calls per model (rows spread evenly)")
    batch_rows: int = Field(
        description="rows of one batch call: all deployment.rows, or their first rows when "
        "a whole batch did not fit in the measurement's time"
    )
    batch_repeats: int = Field(description="batch calls per model (the median is kept)")
    seconds: float = Field(description="wall time of the whole measurement")


class Deployment(_Strict):
    """Both models' size in what deployment pays for (schema 1.7): trees, leaves,
    internal nodes, depth, comparisons per prediction and ONNX bytes (verify re-checks
    them; comparisons with --data and the same file) and onnxruntime latency (a
    measurement by compress on this machine, which verify does not re-check)."""

    rows: int = Field(
        description="the --data rows without missing values: mean_comparisons is the mean "
        "over them, and the latency is measured on them"
    )
    before: DeploymentSize = Field(description="the original model")
    after: DeploymentSize = Field(description="the compressed model as written")
    latency_setup: LatencySetup | None = Field(
        default=None, description="how the latency was measured; null when it was not"
    )
    latency_note: str | None = Field(
        default=None, description="why the latency was not measured (null when it was)"
    )


class Summary(_Strict):
    certified: bool
    status: Literal["certified", "inconclusive"]
    mode: str
    phase: str = Field(
        description="phase whose model was kept: merge (the original, trees sharing every "
        "split merged, possibly without trees that split no witnessed gap), free-removal "
        "(the original without trees no region input can notice), l1, l0, "
        "l0-grow, l0-reweighted, l0-shrink, eliminate, shrink, boost, l0-enriched, refit, synth, "
        "l0-enriched-grow, l0-enriched-reweighted, l0-enriched-shrink, l1-generated, l0-bound "
        "(a support the pruning bound's aimed search certified), collapse (objective leaves: "
        "splits of the best model collapsed, its leaves re-fitted), tree (one decision tree: "
        "mode tree, or in mode pace one learner of the learner depth) or start (the model of a "
        "frontier's enclosing rung, certified again in this region)"
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
        "l0-shrink, boost); null when no L0 problem was solved. When a big-M MILP took part "
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
    pruning_bound: PruningBound | None = Field(
        default=None,
        description="a lower bound on faithful prunings of the original (subsets of its "
        "trees, non-negative weights, any class offsets), with the points, cuts and "
        "multipliers verify re-checks (schema 1.6); null when not computed",
    )
    boundary_witnesses: list[BoundaryWitness] = Field(
        default_factory=list,
        description="pairs of region points differing in one feature that the original "
        "labels differently; the evidence for witness_bound",
    )
    fidelity: float = Field(
        description="agreement with the original on the data given (rows with missing "
        "values included, labelled by onnxruntime)"
    )
    missing_label_changes: int | None = Field(
        default=None,
        description="of the data rows with missing values (region.coverage.missing), those "
        "onnxruntime labels differently with the compressed model: NaN is outside the "
        "proof (schema 1.6; null when the data has no such rows)",
    )
    accuracy_original: float
    accuracy_compressed: float
    seconds: float
    stop_reason: str | None = Field(
        default=None,
        description="why the run ended, in plain words: the plan step that decided it, a "
        "colon, and its reason (schema 1.6; null in a certificate written while the run "
        "went on, and in older certificates)",
    )
    time_limit_reached: bool | None = Field(
        default=None,
        description="true when the time limit ended the run (it did not end by itself): a "
        "longer run may certify a smaller model (schema 1.6; null as for stop_reason)",
    )
    objective: Literal["trees", "leaves"] | None = Field(
        default=None,
        description="what the search minimised first: trees (then leaves) or leaves (then "
        "trees) (schema 1.7; null in older certificates: trees)",
    )
    learner_depth: int | None = Field(
        default=None,
        description="the depth of generated learners, as asked for (null: the original's "
        "depth, or no learner generated) (schema 1.7)",
    )
    floor: list[FloorRung] | None = Field(
        default=None,
        description="what each guarantee can buy at best, said before the work: the "
        "free-pattern estimate in the region asked and at the coverage rungs 100, 99, 95, "
        "90 and 80 % (estimates, stated; schema 1.8; null in mode tree and older "
        "certificates)",
    )
    single_tree: SingleTree | None = Field(
        default=None,
        description="mode tree: what the single-tree step learned (schema 1.7; null in "
        "other modes)",
    )
    deployment: Deployment | None = Field(
        default=None,
        description="both models' size in trees, leaves, internal nodes, depth, "
        "comparisons per prediction, ONNX bytes and measured latency (schema 1.7; null in "
        "older certificates)",
    )


class DataSummary(_Strict):
    """The training CSV the run read (``--data``): verify ``--data`` re-counts the
    coverage when given the same file."""

    path: str = Field(description="path as given on the command line")
    sha256: str = Field(description="SHA-256 of the file's bytes")
    rows: int
    target: str = Field(description="the label column (--target)")
    feature_names: list[str] | None = Field(
        default=None,
        description="the CSV's feature columns in model order: the names of the features "
        "that the region and the witnesses give by index (schema 1.6; null in older "
        "certificates)",
    )
    columns_matched_by: Literal["name", "position"] | None = Field(
        default=None,
        description="how the data's columns were matched to the model's features: 'name' "
        "when the model records its feature names (a fitted estimator's feature_names_in_, "
        "kept in the ONNX metadata pace_cert.feature_names) and the columns were matched "
        "to them by name, exactly; 'position' when the model records none and the columns "
        "were taken in order (schema 1.8; null in older certificates)",
    )


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


def write_schema(path: str | Path) -> None:
    schema = Certificate.model_json_schema()
    Path(path).write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":  # pragma: no cover - exercised by `make schema`
    write_schema(sys.argv[1] if len(sys.argv) > 1 else "schemas/certificate.schema.json")
    print("schema written")
