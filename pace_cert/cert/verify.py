"""Independent re-proof of a certificate from the two ONNX files (SPEC §7).

Trusts nothing in the certificate but its stated parameters (eta, delta, binary and
integer features, bounds): both SHA-256s are recomputed, both ensembles are rebuilt from the
ONNX files, the plausibility region from its artifact, and fresh CP-SAT models are
solved (no object is shared with ``compress``). Every history point (and optionally the
data, random points near it, and every cell of small models) is replayed through
onnxruntime. The certificate's other statements are claims about the two files and are
checked against them (``claims.py``, learners, witnesses): one the models contradict
refutes it. Here: reading the files, rebuilding the models and the region, the --data
checks; the proof, the replays and the claims they need are ``verify_proof.py``'s.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from pace_cert.cert.certificate import Certificate
from pace_cert.cert.claims import (
    claim_problems,
    comparison_problems,
    deployment_problems,
    domain_arrays,
    structural_problems,
)
from pace_cert.cert.coverage import coverage, coverage_line
from pace_cert.cert.verify_proof import Context, cell_count, faithfulness
from pace_cert.cert.verify_report import VerifyReport, claim, refuted, set_claim
from pace_cert.errors import InputError
from pace_cert.model.onnx_reader import ensemble_from_model, load_onnx
from pace_cert.model.runtime import labels, loadable_session
from pace_cert.oracle.settings import BACKENDS, OracleSettings, ray_address_ok
from pace_cert.region.domain import build_domain
from pace_cert.region.margins import eta_units, region_margin
from pace_cert.region.masks import probe_points, region_mask

EXHAUSTIVE_LIMIT = 2_000_000


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


#: the first schema without history compressed labels
NO_HISTORY_LABELS = (1, 4)


def load_certificate(path: Path) -> Certificate:
    """The certificate at ``path`` (InputError when unreadable or invalid). Schema 1.3
    and older wrote a ``compressed_label`` per history point (the label of the round's
    candidate, a model no longer there); it is dropped here: verify cannot replay it
    (:func:`legacy_history_labels` tells whether there were any)."""
    return _load(path)[0]


def legacy_history_labels(path: Path) -> int:
    """How many history ``compressed_label`` fields an older certificate carried."""
    return _load(path)[1]


def _load(path: Path) -> tuple[Certificate, int]:
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(path, f"cannot read certificate ({e})") from None
    dropped = 0
    try:
        raw = json.loads(text)
    except json.JSONDecodeError:
        raw = None  # pydantic names the problem below
    if isinstance(raw, dict) and _version(raw.get("schema_version")) < NO_HISTORY_LABELS:
        for p in raw.get("pairs") or []:
            for h in (p.get("history") or []) if isinstance(p, dict) else []:
                if isinstance(h, dict) and "compressed_label" in h:
                    del h["compressed_label"]
                    dropped += 1
        text = json.dumps(raw)
    try:
        return Certificate.model_validate_json(text), dropped
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(path, f"not a valid certificate ({where}: {first['msg']})") from None


def _version(v: object) -> tuple[int, int]:
    try:
        major, minor = (int(x) for x in str(v).split(".")[:2])
    except ValueError:
        return (99, 99)  # not a version: treated as current (no field is dropped)
    return major, minor


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
    backend: str = "local",
    ray_address: str | None = None,
) -> VerifyReport:
    """Re-prove the certificate; the report names the input domain the proof covers and
    says, claim by claim, what was checked and what is only stated.

    ``backend``: where the pairs' CP-SAT solves run, "local" (threads of this process)
    or "ray" (Ray tasks on the cluster at ``ray_address``, else at ``RAY_ADDRESS``, else
    on a local Ray instance with ``threads`` + 1 CPUs); ``threads`` is the number of solves
    at once either way (the race adds one escalated twin). The answer does not depend on it.

    ``probe``: also replay this many random points near the ``data_path`` rows
    (:func:`pace_cert.region.probe_points`, seeded by the certificate's seed) through
    onnxruntime; one inside the region where the two models disagree refutes the
    certificate. Uses no solver: a check on the proof, not a second proof. When the two
    files are identical no solver runs at all: there is nothing to prove."""
    if threads < 1:
        raise InputError(None, f"--threads must be >= 1, got {threads}")
    if time_limit is not None and not time_limit > 0:  # NaN too
        raise InputError(None, f"--time-limit must be > 0, got {time_limit}")
    if probe < 0:
        raise InputError(None, f"--probe must be >= 0, got {probe}")
    if probe and data_path is None:
        raise InputError(None, "--probe needs --data (its points are drawn near the data rows)")
    if backend not in BACKENDS:
        raise InputError(None, f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if not ray_address_ok(ray_address):
        raise InputError(
            None,
            "--ray-address must be a Ray cluster address (host:port or ray://host:port), "
            f"got {ray_address!r}",
        )
    if ray_address is not None and backend != "ray":
        raise InputError(None, f"--ray-address must come with --backend ray, got {ray_address!r}")
    settings = OracleSettings(backend=backend, ray_address=ray_address)
    cert, dropped = _load(cert_path)
    rep = _prove(
        cert,
        cert_path,
        Path(original_path),
        Path(compressed_path),
        threads,
        time_limit,
        exhaustive,
        None if data_path is None else Path(data_path),
        probe,
        settings,
    )
    if dropped:
        rep.claims.append(
            claim(
                "history.compressed_labels",
                "stated",
                f"{dropped} history compressed labels (schema {cert.schema_version}): labels "
                "of intermediate candidates, which verify cannot replay; ignored",
            )
        )
    return rep


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
    settings: OracleSettings | None = None,
) -> VerifyReport:
    load_onnx(original_path)
    load_onnx(compressed_path)
    ob, cb = original_path.read_bytes(), compressed_path.read_bytes()
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
    forest = _plausibility(cert, Path(cert_path), compressed_path)
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
    problems += deployment_problems(cert, orig, comp, (len(ob), len(cb)))
    ceiling = None if forest is None else plausibility_ceiling(forest)
    if ceiling is not None and forest.delta_abs > ceiling:
        problems.append(
            f"region.delta_abs {forest.delta_abs!r} exceeds every plausibility score the "
            f"artifact can give ({ceiling!r}): the region is empty"
        )
    X_data, data_sha = None, None
    if data_path is not None:
        from pace_cert.data import read_csv

        target = cert.data.target if cert.data is not None else "target"
        # by name when the original records its feature names, else by position
        names = infos[0].feature_names
        X_data = read_csv(data_path, orig.classes, orig.n_features, target, names).X
        data_sha = _sha(data_path.read_bytes())
    # rows with missing values are in no region: replayed for the counts, not as probes
    X_full = X_data
    if X_data is not None:
        X_data = X_data[~np.isnan(X_data).any(axis=1)]
    X_probe = None if X_data is None else probe_points(X_data, probe, cert.seed)
    settings = OracleSettings() if settings is None else settings
    ctx = Context(cert, orig, comp, forest, domain, c_o, so, sc, ob == cb, settings)
    n_cells = cell_count(domain) if exhaustive and not ctx.identical else 0
    if n_cells > EXHAUSTIVE_LIMIT:  # before any solving
        raise InputError(None, f"--exhaustive: {n_cells} cells exceed {EXHAUSTIVE_LIMIT}")
    replay = None if X_data is None else np.vstack([X_data, X_probe])
    rep = faithfulness(ctx, threads, time_limit, exhaustive, replay)
    if problems and rep.exit_code != 1:  # a counterexample says more; else the claims
        rep = refuted(rep, "certificate", "certificate: " + "; ".join(problems[:3]))
    if X_full is not None:
        rep = _data_checks(ctx, rep, X_full, data_sha)
    rep.domain, rep.region = domain.describe(), stated
    rep.feature_names = cert.data.feature_names if cert.data is not None else None
    rep.certificate_status = cert.summary.status
    rep.identical = ctx.identical
    if probe:
        rep.probe_points = len(X_probe)
        rep.probe_inside = int(region_mask(orig, c_o, forest, X_probe, domain).sum())
    return rep


def _data_checks(ctx: Context, rep: VerifyReport, X: np.ndarray, data_sha: str) -> VerifyReport:
    """--data: the rows' counts and onnxruntime agreement; when the file is the one
    compress read (same SHA-256), its stated coverage is re-counted (a difference
    refutes)."""
    cert = ctx.cert
    cov = coverage(ctx.orig, X, ctx.c_o, ctx.forest, ctx.domain)
    same = cert.data is not None and cert.data.sha256 == data_sha
    stated = cert.region.coverage
    if rep.exit_code != 1 and same and stated is not None and stated != cov:
        diff = [
            f"{k} {getattr(stated, k)} (the file gives {getattr(cov, k)})"
            for k in type(cov).model_fields
            if getattr(stated, k) != getattr(cov, k)
        ]
        rep = refuted(rep, "data.coverage", "certificate: region.coverage " + "; ".join(diff))
    elif rep.exit_code != 1 and same and stated is not None:
        set_claim(
            rep,
            "data.coverage",
            "checked",
            f"where the {cov.rows} training rows lie, re-counted from the same file "
            f"(SHA-256): {coverage_line(cov, cert.region.eta, cert.region.delta)}",
        )
    elif rep.exit_code != 1 and cert.data is not None and not same:
        set_claim(
            rep,
            "data.coverage",
            "stated",
            "--data is not the file compress read (SHA-256 differs): the stated coverage "
            "is not re-counted",
        )
    rep = _comparison_checks(ctx, rep, X[~np.isnan(X).any(axis=1)], same)
    rep.data_rows = len(X)
    rep.data_inside = cov.inside
    rep.data_outside_domain = cov.outside_domain
    rep.data_same_file = same
    rep.coverage = cov.model_dump()
    rep.data_missing = cov.missing
    if ctx.identical:
        rep.data_agreement = 1.0
        rep.data_missing_changed = 0 if cov.missing else None
    else:
        same_label = labels(ctx.so, X) == labels(ctx.sc, X)
        rep.data_agreement = float(np.mean(same_label))
        missing = np.isnan(X).any(axis=1)
        rep.data_missing_changed = int((~same_label[missing]).sum()) if cov.missing else None
    return rep


def _comparison_checks(ctx: Context, rep: VerifyReport, X: np.ndarray, same: bool) -> VerifyReport:
    """--data: the stated mean comparisons per prediction re-counted on ``X`` (the rows
    without missing values) when the file is the one compress read (a difference
    refutes)."""
    dep = ctx.cert.summary.deployment
    if dep is None or rep.exit_code == 1:
        return rep
    if not same:
        set_claim(
            rep,
            "deployment.comparisons",
            "stated",
            "--data is not the file compress read (SHA-256 differs): the mean comparisons "
            "per prediction are not re-counted",
        )
        return rep
    problems = comparison_problems(ctx.cert, ctx.orig, ctx.comp, X)
    if problems:
        return refuted(rep, "deployment.comparisons", "certificate: " + "; ".join(problems[:3]))
    set_claim(
        rep,
        "deployment.comparisons",
        "checked",
        f"mean comparisons per prediction on the {len(X)} data rows without missing values "
        f"({dep.before.mean_comparisons:.1f} -> {dep.after.mean_comparisons:.1f}), "
        "re-counted from the same file (SHA-256)",
    )
    return rep
