"""The certificate of a compress run, built from the driver's result.

Every statement here is about the two models and the run; ``cert/claims.py`` checks the
ones verify can check against the two ONNX files.
"""

from __future__ import annotations

import numpy as np

from pace_cert import __version__
from pace_cert.cert.certificate import (
    BoundaryWitness,
    Certificate,
    Coverage,
    CpSatParameters,
    DataSummary,
    Deployment,
    DeploymentSize,
    HistoryPoint,
    LatencySetup,
    LeafWitnesses,
    Learner,
    PairCertificate,
    Plausibility,
    PruningBound,
    PruningCombo,
    PruningCut,
    Region,
    Scaling,
    SingleTree,
    Summary,
)
from pace_cert.cert.records import (
    SCALING_DERIVATION,
    SCALING_METHOD,
    label,
    model_summary,
    now_iso,
    solver_versions,
)
from pace_cert.deploy_size import Latency, Structure
from pace_cert.driver.result import CompressResult
from pace_cert.region.margins import eta_units
from pace_cert.region.scaling import BITS
from pace_cert.settings import CompressConfig


def build_certificate(
    r: CompressResult,
    cfg: CompressConfig,
    orig_path: str,
    orig_sha: str,
    comp_path: str,
    comp_sha: str,
    plaus: Plausibility | None,
    data,
    data_summary: DataSummary | None = None,
    coverage: Coverage | None = None,
    missing_labels: tuple[np.ndarray, np.ndarray] | None = None,
    deployment: Deployment | None = None,
) -> Certificate:
    """The certificate of result ``r`` (``data``: the training rows, a
    :class:`pace_cert.data.Dataset`; ``data_summary`` and ``coverage``: the CSV's hash
    and where its rows lie, see :mod:`pace_cert.cert.coverage`; ``missing_labels``:
    onnxruntime's labels (class indices) of the original and the compressed model on
    the rows with missing values, in row order; ``deployment``: both models' size in
    what deployment pays for, :func:`deployment_block`). History points carry no
    label of the candidate that met them: that model is gone, verify could not replay
    it."""
    classes = r.original.classes
    comp = r.compressed
    oracle = cfg.tuning.oracle
    by_pair: dict[tuple[int, int], list[HistoryPoint]] = {}
    for h in r.history:
        by_pair.setdefault((h.y0, h.y), []).append(
            HistoryPoint(
                phase=h.phase,  # type: ignore[arg-type]
                iteration=h.iteration,
                y0=label(classes, h.y0),
                y=label(classes, h.y),
                point=[float(v) for v in h.point],
                original_label=label(classes, h.original_label),
            )
        )
    k = r.original.n_classes
    proof = {(p.y0, p.y): p for p in r.proof}
    pairs = []
    for y0 in range(k):
        for y in range(k):
            if y == y0:
                continue
            p = proof.get((y0, y))
            pairs.append(
                PairCertificate(
                    y0=label(classes, y0),
                    y=label(classes, y),
                    status=p.status if p else "UNKNOWN",  # type: ignore[arg-type]
                    eta=cfg.eta,
                    delta=cfg.delta,
                    delta_abs=r.region.delta_abs,
                    scale_exp=p.scale_exp if p else 0,
                    rounding_bound=p.error_bound if p else 0.0,
                    region_rounding_bound=p.region_error_bound if p else 0.0,
                    compressed_margin=r.e_req,
                    seconds=p.seconds if p else 0.0,
                    conflicts=p.conflicts if p else 0,
                    branches=p.branches if p else 0,
                    spurious_excluded=p.spurious if p else 0,
                    history=by_pair.get((y0, y), []),
                )
            )
    X, y = data.X, data.y
    missing = np.isnan(X).any(axis=1)
    pred_o, pred_c = np.zeros(len(X), np.int64), np.zeros(len(X), np.int64)
    pred_o[~missing] = r.original.predict_index(X[~missing])
    pred_c[~missing] = comp.predict_index(X[~missing])
    missing_changes = None
    if missing.any() and missing_labels is not None:  # NaN: onnxruntime's labels
        pred_o[missing], pred_c[missing] = missing_labels
        missing_changes = int((missing_labels[0] != missing_labels[1]).sum())
    n_new = sum(o == "new" for o in comp.origin)
    n = comp.n_trees
    learners = [
        Learner(index=i, origin=o, weight=w, merged=m, original_trees=ot)  # type: ignore[arg-type]
        for i, (o, w, m, ot) in enumerate(
            zip(
                comp.origin,
                r.weights or [1.0] * n,
                r.merged or [1] * n,
                r.original_trees or [[] for _ in range(n)],
            )
        )
    ]
    lin = r.race_linearization
    race_lin = (
        str(lin[0])
        if len(set(lin)) == 1
        else f"from ({', '.join(map(str, dict.fromkeys(lin)))}): the pair's first attempt "
        f"the level that decided the last pair ({lin[0]} at first), later attempts the "
        "level it tried least"
    )
    return Certificate(
        tool_version=__version__,
        created=now_iso(),
        solvers=solver_versions(r.gurobi_used),
        cpsat=CpSatParameters(
            num_workers_per_pair={
                "race": f"1 (up to {oracle.max_attempts} attempts per pair: attempt k with seed "
                f"random_seed + k and linearization_level {race_lin})",
                "parallel": "max(1, threads // pairs)",
                "sequential": str(cfg.threads),
            }[r.schedule],
            random_seed=cfg.seed,
            schedule=r.schedule,
            time_limit_seconds=cfg.time_limit,
            presolve=dict(oracle.cpsat_params),
        ),
        seed=cfg.seed,
        threads=cfg.threads,
        original=model_summary(orig_path, orig_sha, r.original),
        compressed=model_summary(comp_path, comp_sha, comp),
        data=data_summary,
        learners=learners,
        region=Region(
            eta=cfg.eta,
            eta_units=eta_units(r.original),
            margin_scale=r.original.margin_scale,
            runtime_guard=r.original.runtime_guard,
            margin_threshold=r.region.margin,
            delta=cfg.delta,
            delta_abs=r.region.delta_abs,
            plausibility=plaus,
            domain=r.domain.describe(),
            samples_kept=r.samples_kept,
            samples_dropped=r.samples_dropped + int(missing.sum()),
            coverage=coverage,
            coverage_asked=cfg.coverage,
        ),
        scaling=Scaling(
            method=SCALING_METHOD,
            bits=BITS,
            compressed_margin=r.e_req,
            derivation=SCALING_DERIVATION,
        ),
        pairs=pairs,
        summary=Summary(
            certified=r.certified,
            status=r.status,  # type: ignore[arg-type]
            mode=cfg.mode,
            phase=r.phase,
            trees_before=r.original.n_trees,
            trees_after=comp.n_trees,
            leaves_before=r.original.n_leaves,
            leaves_after=comp.n_leaves,
            new_learner_share=n_new / comp.n_trees if comp.n_trees else 0.0,
            l1_values=r.l1_values,
            last_reduced_cost=r.reduced_costs[-1] if r.reduced_costs else None,
            reduced_costs=r.reduced_costs,
            pricing=r.pricing,  # type: ignore[arg-type]
            generation_stop=r.generation_stop,
            l0_big_m=r.big_m,
            l0_optimal=r.l0_optimal,
            size_lower_bound=r.size_bound,
            witness_bound=r.witness_bound,
            pruning_bound=pruning_bound(r),
            boundary_witnesses=[
                BoundaryWitness(
                    feature=w.feature,
                    x=[float(v) for v in w.x],
                    value_next=float(w.x_next[w.feature]),
                    label=label(r.original.classes, w.label),
                    label_next=label(r.original.classes, w.label_next),
                )
                for w in r.witnesses
            ],
            fidelity=float(np.mean(pred_o == pred_c)),
            missing_label_changes=missing_changes,
            accuracy_original=float(np.mean(pred_o == y)),
            accuracy_compressed=float(np.mean(pred_c == y)),
            seconds=r.seconds,
            stop_reason=None if r.stop is None else str(r.stop),
            time_limit_reached=None if r.stop is None else r.stop.time_limit,
            objective=cfg.objective,  # type: ignore[arg-type]
            learner_depth=cfg.learner_depth,
            single_tree=single_tree(r),
            deployment=deployment,
        ),
    )


def single_tree(r: CompressResult) -> SingleTree | None:
    """The certificate's form of mode tree's report (None in other modes)."""
    t = r.tree
    if t is None:
        return None
    return SingleTree(
        cells=t.cells,
        complete=t.complete,
        rounds=t.rounds,
        max_depth=t.max_depth,
        max_leaves=t.max_leaves,
        leaves_lower_bound=t.leaves_bound,
        none_within_caps=t.none_within_caps,
        fallback=t.fallback,
        leaf_witnesses=leaf_witnesses(t.leaf_witnesses, r.original.classes),
    )


def leaf_witnesses(found, classes) -> LeafWitnesses | None:
    """The certificate's form of a :class:`~pace_cert.learners.leaf_witnesses.
    LeafWitnessSet` (class indices as the original's labels; floats exact)."""
    if found is None or found.bound == 0:
        return None
    return LeafWitnesses(
        points=[[float(v) for v in row] for row in found.points],
        labels=[label(classes, int(k)) for k in found.labels],
        separators=[[float(v) for v in row] for row in found.separators],
        pairs=[[int(v) for v in row] for row in found.pairs],
        bound=found.bound,
    )


def deployment_block(
    sizes: tuple[Structure, Structure],
    onnx_bytes: tuple[int, int],
    latency: Latency | None,
    note: str | None = None,
) -> Deployment:
    """The certificate's ``summary.deployment`` from the two models' structure
    (original, compressed), their ONNX file sizes and the latency measurement (None:
    not measured, ``note`` says why)."""

    def size(i: int) -> DeploymentSize:
        s = sizes[i]
        return DeploymentSize(
            trees=s.trees,
            leaves=s.leaves,
            internal_nodes=s.internal_nodes,
            max_depth=s.max_depth,
            mean_comparisons=s.mean_comparisons,
            onnx_bytes=onnx_bytes[i],
            latency_us_batch1=None if latency is None else latency.batch1_us[i],
            latency_us_per_row_batch=None if latency is None else latency.per_row_us[i],
        )

    setup = None
    if latency is not None:
        order = (
            "one model: the two files are the same bytes, so its numbers stand for both"
            if latency.same_model
            else "interleaved after a warm-up: the two models' calls alternate, the order "
            "swapped at each row and each repeat"
        )
        setup = LatencySetup(
            onnxruntime=latency.onnxruntime,
            provider="CPUExecutionProvider",
            intra_op_threads=latency.threads,
            inter_op_threads=latency.threads,
            execution_mode="sequential",
            fetched="the label output only",
            order=order,
            batch1_calls=latency.calls,
            batch_rows=latency.batch_rows,
            batch_repeats=latency.repeats,
            seconds=round(latency.seconds, 3),
        )
        note = None
    return Deployment(
        rows=sizes[0].rows,
        before=size(0),
        after=size(1),
        latency_setup=setup,
        latency_note=note,
    )


def pruning_bound(r) -> PruningBound | None:
    """The certificate's form of the run's pruning lower bound (None: not computed)."""
    pb = r.pruning_bound
    if pb is None:
        return None
    return PruningBound(
        value=pb.value,
        points=[[float(v) for v in x] for x in pb.points],
        labels=[label(r.original.classes, int(k)) for k in pb.y0],
        cuts=[
            PruningCut(
                keep_one_of=list(c.keep_one_of),
                combos=[
                    PruningCombo(rows=[(int(i), int(k)) for i, k in rows], weight=float(w))
                    for rows, w in c.combos
                ],
            )
            for c in pb.result.cuts
        ],
        meets_points=pb.result.meets,
        seconds=round(pb.result.seconds, 3),
    )
