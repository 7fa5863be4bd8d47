"""Independent re-proof of a certificate from the two ONNX files (SPEC §7).

Trusts nothing in the certificate but its stated parameters (eta, delta, binary and
integer features, bounds): both SHA-256s are recomputed, both ensembles are rebuilt from the
ONNX files, the plausibility region from its artifact, and fresh CP-SAT models are
solved (no object is shared with ``compress``). Every history point (and optionally the
data, random points near it, and every cell of small models) is replayed through
onnxruntime. The certificate's other statements are claims about the two files and are
checked against them (``claims.py``, learners, witnesses): one the models contradict
refutes it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from pace_cert.budget import Budget
from pace_cert.cert.certificate import Certificate, label
from pace_cert.cert.claims import claim_problems, domain_arrays, is_constant, structural_problems
from pace_cert.errors import InputError
from pace_cert.model.ensemble import LEAF, structure_key
from pace_cert.model.onnx_reader import ensemble_from_model, load_onnx
from pace_cert.model.runtime import labels, loadable_session
from pace_cert.oracle.cpsat import SeparationOracle
from pace_cert.oracle.score_model import RegionSpec, ScoreModel
from pace_cert.oracle.screen import Screen
from pace_cert.region.domain import build_domain
from pace_cert.region.margins import eta_units, region_margin, required_margin
from pace_cert.region.masks import probe_points, region_mask
from pace_cert.region.witness import Witness, check_witnesses
from pace_cert.region.witness import size_bound as witness_size_bound

EXHAUSTIVE_LIMIT = 2_000_000


@dataclass
class VerifyReport:
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
    probe_points: int | None = None  # --probe: random points near the data replayed
    probe_inside: int | None = None  # of them inside the region
    witnesses_checked: int | None = None  # boundary witnesses re-checked (size lower bound)
    witness_bound: int | None = None  # the bound they give: fewer trees cannot be faithful
    size_lower_bound: int | None = None  # the certificate's bound (>= witness_bound; the
    # rest, from compress's CP-SAT synthesis proofs, is not re-checked)
    merged_trees_checked: int | None = None  # original trees named by learners, re-checked

    def to_json(self) -> dict:
        return {
            "status": self.status,
            "exit_code": self.exit_code,
            "message": self.message,
            "pairs": self.pairs,
            "counterexample": self.counterexample,
            "replayed_points": self.replayed,
            "exhaustive_cells": self.exhaustive_cells,
            "domain": self.domain,
            "region": self.region,
            "data_rows": self.data_rows,
            "data_inside_region": self.data_inside,
            "data_outside_domain": self.data_outside_domain,
            "probe_points": self.probe_points,
            "probe_inside_region": self.probe_inside,
            "witnesses_checked": self.witnesses_checked,
            "witness_bound": self.witness_bound,
            "size_lower_bound": self.size_lower_bound,
            "merged_trees_checked": self.merged_trees_checked,
        }


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_certificate(path: Path) -> Certificate:
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(path, f"cannot read certificate ({e})") from None
    try:
        return Certificate.model_validate_json(text)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(path, f"not a valid certificate ({where}: {first['msg']})") from None


def _plausibility(cert: Certificate, cert_path: Path, comp_path: Path):
    reg = cert.region
    if reg.delta <= 0:
        return None
    if reg.plausibility is None:
        raise InputError(cert_path, "delta > 0 but names no plausibility artifact")
    name = reg.plausibility.path
    if Path(name).name != name or name in ("", ".", ".."):
        raise InputError(
            cert_path, f"plausibility artifact must be a plain file name, got {name!r}"
        )
    p = comp_path.parent / name
    try:
        blob = p.read_bytes()
    except OSError:
        raise InputError(
            p, "plausibility artifact not found next to the compressed model"
        ) from None
    if _sha(blob) != reg.plausibility.sha256:
        raise InputError(p, "plausibility artifact does not match the certificate (sha256)")
    from pace_cert.region.plausibility import from_json_dict

    try:
        forest = from_json_dict(json.loads(blob))
    except (ValueError, json.JSONDecodeError) as e:
        raise InputError(p, f"invalid plausibility artifact ({e})") from None
    if forest.delta != reg.delta or forest.delta_abs != reg.delta_abs:
        raise InputError(p, "plausibility artifact disagrees with the certificate's delta")
    return forest


def plausibility_ceiling(forest) -> float:
    """An upper bound on A(x) = sum over the forest's trees of x's leaf value: each
    tree's largest leaf value, summed. A threshold delta_abs above it leaves no input
    in the region, which no delta-quantile of training scores can do."""
    return float(sum(float(t.value[t.leaves].max()) for t in forest.trees))


def run_verify(
    original_path: Path,
    compressed_path: Path,
    cert_path: Path,
    *,
    threads: int = 2,
    time_limit: float | None = None,
    exhaustive: bool = False,
    data_path: Path | None = None,
    probe: int = 0,
) -> VerifyReport:
    """Re-prove the certificate; the report names the input domain the proof covers.

    ``probe``: also replay this many random points near the ``data_path`` rows
    (:func:`pace_cert.region.probe_points`, seeded by the certificate's seed) through
    onnxruntime; one inside the region where the two models disagree refutes the
    certificate. Uses no solver: a check on the proof, not a second proof."""
    if threads < 1:
        raise InputError(None, f"--threads must be >= 1, got {threads}")
    if time_limit is not None and not time_limit > 0:  # NaN too
        raise InputError(None, f"--time-limit must be > 0, got {time_limit}")
    if probe < 0:
        raise InputError(None, f"--probe must be >= 0, got {probe}")
    if probe and data_path is None:
        raise InputError(None, "--probe needs --data (its points are drawn near the data rows)")
    cert = load_certificate(cert_path)
    return _prove(
        cert,
        cert_path,
        original_path,
        compressed_path,
        threads,
        time_limit,
        exhaustive,
        data_path,
        probe,
    )


def _prove(
    cert: Certificate,
    cert_path: Path,
    original_path: Path,
    compressed_path: Path,
    threads: int,
    time_limit: float | None,
    exhaustive: bool,
    data_path: Path | None,
    probe: int = 0,
) -> VerifyReport:
    load_onnx(original_path)
    load_onnx(compressed_path)
    ob, cb = Path(original_path).read_bytes(), Path(compressed_path).read_bytes()
    if _sha(ob) != cert.original.sha256:
        raise InputError(original_path, "does not match the certificate (sha256 differs)")
    if _sha(cb) != cert.compressed.sha256:
        raise InputError(compressed_path, "does not match the certificate (sha256 differs)")
    from pace_cert.model.onnx_reader import UnsupportedModel

    models, infos, sessions = [], [], []
    for path, blob in ((original_path, ob), (compressed_path, cb)):
        import onnx

        try:
            ens, info = ensemble_from_model(onnx.load_from_string(blob))
        except UnsupportedModel as e:
            raise InputError(path, f"unsupported model: {e}") from None
        sessions.append(loadable_session(blob, path))  # before any proof
        models.append(ens)
        infos.append(info)
    orig, comp = models
    so, sc = sessions
    if list(map(str, orig.classes)) != list(map(str, comp.classes)):
        raise InputError(compressed_path, "class labels differ from the original's")
    if orig.n_features != comp.n_features:
        raise InputError(compressed_path, "input width differs from the original's")

    eta = cert.region.eta
    if not np.isfinite(eta) or eta < 0 or (orig.kind == "voting" and eta >= 1):
        raise InputError(cert_path, f"certificate states an invalid eta ({eta})")
    if not 0.0 <= cert.region.delta <= 1.0:
        raise InputError(cert_path, f"certificate states an invalid delta ({cert.region.delta})")
    problems = structural_problems(cert, orig.n_features)
    if problems:
        raise InputError(cert_path, "; ".join(problems))
    forest = _plausibility(cert, Path(cert_path), Path(compressed_path))
    try:
        binary, integer, lower, upper = domain_arrays(cert.region.domain, orig.n_features)
    except ValueError as e:
        raise InputError(cert_path, str(e)) from None
    trees = [*orig.trees, *comp.trees, *(forest.trees if forest else [])]
    try:
        domain = build_domain(trees, orig.n_features, binary, lower, upper, integer)
    except ValueError as e:
        raise InputError(cert_path, f"region.domain: {e}") from None
    c_o = region_margin(orig, cert.region.eta)
    delta_abs = None if forest is None else forest.delta_abs
    stated = {
        "eta": eta,
        "eta_units": eta_units(orig),
        "margin_threshold": c_o,
        "delta": cert.region.delta,
        "delta_abs": delta_abs,
    }
    problems = claim_problems(cert, orig, comp, *infos, c_o, delta_abs)
    ceiling = None if forest is None else plausibility_ceiling(forest)
    if ceiling is not None and forest.delta_abs > ceiling:
        problems.append(
            f"region.delta_abs {forest.delta_abs!r} exceeds every plausibility score the "
            f"artifact can give ({ceiling!r}): the region is empty"
        )
    X_data = None
    if data_path is not None:
        from pace_cert.data import read_csv

        X_data = read_csv(data_path, orig.classes, orig.n_features).X.astype(np.float32)
    X_probe = None if X_data is None else probe_points(X_data, probe, cert.seed)
    n_cells = _cell_count(domain) if exhaustive else 0
    if n_cells > EXHAUSTIVE_LIMIT:  # before any solving
        raise InputError(None, f"--exhaustive: {n_cells} cells exceed {EXHAUSTIVE_LIMIT}")
    replay = None if X_data is None else np.vstack([X_data, X_probe])
    rep = _faithfulness(
        cert, orig, comp, forest, domain, c_o, (so, sc), threads, time_limit, exhaustive, replay
    )
    if problems and rep.exit_code != 1:  # a counterexample says more; else the claims
        rep = VerifyReport(1, "refuted", "certificate: " + "; ".join(problems[:3]), rep.pairs)
    rep.domain, rep.region = domain.describe(), stated
    if X_data is not None:
        rep.data_rows = len(X_data)
        rep.data_inside = int(region_mask(orig, c_o, forest, X_data, domain).sum())
        rep.data_outside_domain = int((~domain.contains(X_data)).sum())
    if probe:
        rep.probe_points = len(X_probe)
        rep.probe_inside = int(region_mask(orig, c_o, forest, X_probe, domain).sum())
    return rep


def _faithfulness(
    cert: Certificate,
    orig,
    comp,
    forest,
    domain,
    c_o: float,
    sessions,
    threads: int,
    time_limit: float | None,
    exhaustive: bool,
    X_data: np.ndarray | None,
) -> VerifyReport:
    """The proof (fresh CP-SAT models per pair), the onnxruntime replays (history
    points, ``X_data``, every cell with ``exhaustive``) and the size-bound and learner
    claims that need onnxruntime or the trees' splits."""
    so, sc = sessions
    pl_model = None if forest is None else ScoreModel.sum_of(forest.trees)
    region = RegionSpec(c_o, pl_model, None if forest is None else forest.delta_abs)
    original = ScoreModel.from_ensemble(orig)
    hints = Screen(domain, original, region, seed=cert.seed)  # every cell of a small domain
    oracle = SeparationOracle(domain, original, region, seed=cert.seed, hints=hints)
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
            return VerifyReport(
                1,
                "refuted",
                f"pair ({label(orig.classes, r.y0)}, {label(orig.classes, r.y)}): {why}",
                pairs,
                _counterexample(x[0], lo, lc),
            )
    # replay: history points (and data) inside the region must agree under onnxruntime
    pts = [h.point for p in cert.pairs for h in p.history]
    X = np.asarray(pts, np.float32).reshape(-1, orig.n_features)
    if X_data is not None:
        X = np.vstack([X, X_data])
    bad = _disagreements(orig, c_o, forest, domain, X, so, sc)
    if bad is not None:
        return VerifyReport(1, "refuted", "replayed point disagrees", pairs, bad, len(X))
    hist = [h for p in cert.pairs for h in p.history]
    if hist:  # the original's label at each history point inside the region (there
        # onnxruntime's label is the IR's, which compress recorded), as stated
        Xh = X[: len(hist)]
        inside = region_mask(orig, c_o, forest, Xh, domain)
        got = [_plain(v) for v in labels(so, Xh)]
        wrong = [i for i, h in enumerate(hist) if inside[i] and got[i] != h.original_label]
        if wrong:
            h = hist[wrong[0]]
            why = (
                f"history point of pair ({h.y0}, {h.y}) states original label {h.original_label!r}"
            )
            return VerifyReport(
                1, "refuted", f"{why}, onnxruntime gives {got[wrong[0]]!r}", pairs, None, len(X)
            )
    problems = _witness_problems(cert, orig, c_o, forest, domain, so)
    if problems:
        return VerifyReport(
            1, "refuted", "size lower bound: " + "; ".join(problems[:3]), pairs, None, len(X)
        )
    problems = _learner_problems(cert, orig, comp)
    if problems:
        return VerifyReport(
            1, "refuted", "learners: " + "; ".join(problems[:3]), pairs, None, len(X)
        )
    n_cells = None
    if exhaustive:
        n_cells = _cell_count(domain)
        reps = [domain.reps[i][domain.allowed(i)] for i in range(orig.n_features)]
        grid = np.array(list(itertools.product(*reps)), np.float32).reshape(-1, orig.n_features)
        bad = _disagreements(orig, c_o, forest, domain, grid, so, sc)
        if bad is not None:
            return VerifyReport(1, "refuted", "a cell disagrees", pairs, bad, len(X), n_cells)
    if any(r.status != "INFEASIBLE" for r in results):
        return VerifyReport(2, "inconclusive", "time limit before every pair was proved", pairs)
    rep = VerifyReport(
        0, "verified", f"all {len(results)} pairs proved INFEASIBLE", pairs, None, len(X), n_cells
    )
    if cert.summary.witness_bound is not None:
        rep.witnesses_checked = len(cert.summary.boundary_witnesses)
        rep.witness_bound = cert.summary.witness_bound
    rep.size_lower_bound = cert.summary.size_lower_bound
    if _checks_learners(cert):
        rep.merged_trees_checked = sum(len(lr.original_trees) for lr in cert.learners)
    return rep


def _cell_count(domain) -> int:
    """Cells of the domain an exhaustive replay visits (one representative each); an
    exact Python integer (numpy's int64 product wrapped negative on 7 features of ~1,000
    cells, passed the limit check and ran out of memory)."""
    return math.prod(int(domain.allowed(i).sum()) for i in range(domain.n_features))


def _checks_learners(cert: Certificate) -> bool:
    """Certificates from schema 1.3 on name each learner's original trees; an older
    version number does not switch the check off when the learners name trees anyway
    (the version is a claim like any other)."""
    if any(lr.original_trees or lr.merged != 1 for lr in cert.learners):
        return True
    try:
        major, minor = (int(v) for v in cert.schema_version.split(".")[:2])
    except ValueError:
        return True
    return (major, minor) >= (1, 3)


def _learner_problems(cert: Certificate, orig, comp) -> list[str]:
    """Check what ``learners`` states against the two models: one entry per compressed
    tree, in order; each original tree named at most once and sharing every split with
    the compressed tree that names it (merged trees sum learners of one shape); an
    ``original`` tree merges only original trees, a ``new`` one at least one learner
    that is not an original tree. Weights are not checkable from the models alone."""
    if not _checks_learners(cert):
        return []
    lrs = cert.learners
    if not lrs and is_constant(comp):
        return []  # a constant model: the writer's one zero leaf stands for no trees
    if [lr.index for lr in lrs] != list(range(comp.n_trees)):
        return [f"{len(lrs)} entries for {comp.n_trees} compressed trees (or out of order)"]
    problems: list[str] = []
    seen: set[int] = set()
    for lr in lrs:
        named = list(lr.original_trees)
        if any(not 0 <= t < orig.n_trees for t in named) or len(set(named)) != len(named):
            problems.append(f"tree {lr.index} names original trees out of range or twice")
            continue
        if seen & set(named):
            problems.append(f"tree {lr.index} names original trees another tree names")
        seen |= set(named)
        if lr.merged < max(1, len(named)):
            problems.append(f"tree {lr.index} merges {lr.merged} learners but names {len(named)}")
        if lr.origin == "original" and (not named or lr.merged != len(named)):
            problems.append(f"tree {lr.index} is marked original but not all its learners are")
        if lr.origin == "new" and lr.merged == len(named):
            problems.append(f"tree {lr.index} is marked new but names only original trees")
        key = structure_key(comp.trees[lr.index])
        for t in named:
            if structure_key(orig.trees[t]) != key:
                problems.append(f"tree {lr.index} does not share every split of original tree {t}")
                break
        else:
            i = lr.index
            if (
                lr.merged == 1
                and len(named) == 1
                and not _scaled_copy(
                    comp.trees[i], float(comp.weights[i]), orig.trees[named[0]], lr.weight
                )
            ):
                problems.append(
                    f"tree {lr.index}'s leaf values are not weight {lr.weight!r} times "
                    f"original tree {named[0]}'s"
                )
    return problems


def _scaled_copy(tree, tree_weight: float, original, weight: float) -> bool:
    """Whether ``tree`` (weighted by ``tree_weight`` in its model: 1 in pace-cert's
    output, the estimator weight when compress fell back to the original) scores each
    leaf ``weight`` times ``original``'s value, up to one float32 rounding (how ``fold``
    writes an unmerged original learner); the two share every split, so their leaves
    are at the same positions."""
    if not weight > 0:
        return False
    leaves = tree.left == LEAF
    want = weight * original.value[leaves]
    err = np.abs(tree_weight * tree.value[leaves] - want)
    return bool(np.all(err <= 2.0**-23 * np.abs(want) + 1e-300))


def _witness_problems(cert: Certificate, orig, c_o, forest, domain, so) -> list[str]:
    """Re-check the boundary witnesses behind ``summary.witness_bound``: onnxruntime on
    the original, the region rebuilt here, and the bound they give."""
    s = cert.summary
    if s.witness_bound is None and not s.boundary_witnesses:
        return []
    n = orig.n_features
    if any(len(w.x) != n or not 0 <= w.feature < n for w in s.boundary_witnesses):
        return [f"a witness does not have {n} features or names another feature"]

    def moved(w) -> np.ndarray:
        x = np.asarray(w.x, np.float32).copy()
        x[w.feature] = np.float32(w.value_next)
        return x

    ws = [
        Witness(
            w.feature,
            np.asarray(w.x, np.float32),
            moved(w),
            str(w.label),
            str(w.label_next),
        )
        for w in s.boundary_witnesses
    ]

    def onnx_labels(Z: np.ndarray) -> np.ndarray:
        return np.array([v.decode() if isinstance(v, bytes) else str(v) for v in labels(so, Z)])

    problems = check_witnesses(ws, onnx_labels, lambda Z: region_mask(orig, c_o, forest, Z, domain))
    want = witness_size_bound(len(ws), orig.max_depth)
    if not problems and s.witness_bound != want:
        problems.append(f"witness_bound {s.witness_bound}, the {len(ws)} witnesses give {want}")
    return problems


def _disagreements(orig, c_o, forest, domain, X, so, sc) -> dict | None:
    if len(X) == 0:
        return None
    inside = region_mask(orig, c_o, forest, X, domain)
    if not inside.any():
        return None
    Xi = X[inside]
    lo, lc = labels(so, Xi), labels(sc, Xi)
    diff = np.flatnonzero(lo != lc)
    if len(diff) == 0:
        return None
    i = int(diff[0])
    return _counterexample(Xi[i], lo[i], lc[i])


def _plain(v):
    """An onnxruntime label as the certificate writes labels (int or str)."""
    if isinstance(v, bytes):
        return v.decode()
    return v.item() if hasattr(v, "item") else v


def _counterexample(x: np.ndarray, lo, lc) -> dict:
    return {
        "point": [float(v) for v in x],
        "original_label": _plain(lo),
        "compressed_label": _plain(lc),
    }
