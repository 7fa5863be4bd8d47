"""The certificate fuzzer (issue #50): real certificates, every field mutated.

Certificates come from real runs (compress: a forest, AdaBoost with new trees, gradient
boosting, a 3-class forest, a StandardScaler pipeline; frontier: two rungs). For every
numeric field (a field is a JSON path with list indices as ``*``; its first instance is
mutated, and its last one too in the pruning bound) the fuzzer tries 0, -0, a
subnormal, +-1 ulp, +-1, +-huge, +-inf, NaN, a wrong type and a wrong length; for every
list: empty, first item duplicated, reordered, last item dropped; for every version
field: every older version.

The property, for every mutated certificate:

* verify never fails internally (exit 4): it answers verified, refuted, inconclusive or
  bad input (``InputError``, exit 3);
* no claim it reports ``checked`` is refuted by an independent check:
  ``size_lower_bound.pruning`` -- the certificate's own points, labelled by onnxruntime,
  admit no pruning of fewer trees meeting them strictly (brute force over subsets with
  an LP on small models, a SciPy MILP otherwise; a smaller pruning found is confirmed in
  exact rationals before it counts); ``minimal_pruning`` -- the compressed model is a
  pruning (its trees compared with the original's here), of exactly the bound's size.

``make test`` runs a fixed sample (:data:`FAST_CASES` per certificate);
``make test-slow`` the whole matrix. docs/soundness.md records the counts.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from pace_cert.errors import InputError

from .conftest import _once, _shared_root

#: mutations of a number (wrong_length: the number wrapped in a list)
NUMERIC = (
    "zero",
    "neg_zero",
    "subnormal",
    "ulp_up",
    "ulp_down",
    "plus_one",
    "minus_one",
    "huge",
    "neg_huge",
    "inf",
    "neg_inf",
    "nan",
    "wrong_type",
    "wrong_length",
)
#: mutations of a list
LISTS = ("empty", "duplicated", "reordered", "truncated")
#: every schema version before the current one
OLDER_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5")
#: the claims the independent check re-decides
INDEPENDENT = ("size_lower_bound.pruning", "minimal_pruning")
#: cases per certificate in the fast sample (besides the pinned ones below)
FAST_CASES = 5
#: pinned in the fast sample: the fields and edits of issue #50
PINNED = (
    ("summary.pruning_bound.cuts.*.combos.*.weight", "subnormal"),
    ("summary.pruning_bound.cuts.*.combos.*.weight", "huge"),
    ("summary.pruning_bound.cuts.*.combos.*.weight", "nan"),
    ("summary.pruning_bound.points.*", "duplicated"),
    ("summary.pruning_bound.points.*", "truncated"),
    ("summary.pruning_bound.value", "plus_one"),
    ("schema_version", "1.2"),
)


# ------------------------------------------------------------------ the corpus


@dataclass(frozen=True)
class Case:
    """One real certificate with its two models."""

    name: str
    original: Path
    compressed: Path
    certificate: Path


ETA_DELTA = ("--eta", "0.1", "--delta", "0.1")
CORPUS = ("rf-prune-delta", "ada-pace-delta", "gb-prune", "rf3-prune", "pipeline", "frontier")


@pytest.fixture(scope="session")
def corpus(compress_run, zoo_model, tmp_path_factory):
    """``corpus(name)`` -> :class:`Case`, each run once per session."""
    root = _shared_root(tmp_path_factory)
    runs = {
        "rf-prune-delta": ("compas", "rf", 20, 2, "--mode", "prune", *ETA_DELTA),
        "ada-pace-delta": ("compas", "ada", 10, 2, *ETA_DELTA),
        "gb-prune": ("compas", "gb", 10, 2, "--mode", "prune"),
        "rf3-prune": ("seeds", "rf", 6, 2, "--mode", "prune", "--eta", "0.1"),
    }  # fmt: skip

    def case(name: str) -> Case:
        if name in runs:
            r = compress_run(*runs[name])
            assert r.exit_code in (0, 2), (r.stdout, r.stderr)
            return Case(name, r.model, r.out / "compressed.onnx", r.out / "certificate.json")
        if name == "pipeline":
            d = _once(root, "fuzz-pipeline", _pipeline_run)
            return Case(
                name,
                d / "model.onnx",
                d / "out" / "compressed.onnx",
                d / "out" / "certificate.json",
            )
        model, data = zoo_model("seeds", "rf", 6, 2)
        d = _once(root, "fuzz-frontier", lambda d: _frontier_run(d, model, data))
        rung = d / "out" / "eta0.2"
        return Case(name, model, rung / "compressed.onnx", rung / "certificate.json")

    return case


def _pipeline_run(d: Path) -> None:
    from sklearn.preprocessing import StandardScaler

    from pace_cert import zoo
    from pace_cert.app import run_compress
    from pace_cert.settings import CompressConfig

    from . import booster_models as bm

    X, y, names = zoo.load_dataset("seeds")
    X = X.astype(np.float32).astype(np.float64)
    _, model = bm.pipeline(X.astype(np.float32), y, [StandardScaler()], zoo.make_model("rf", 6, 2))
    (d / "model.onnx").write_bytes(model.SerializeToString())
    zoo.write_csv(d / "train.csv", X, y, names)
    cfg = CompressConfig.of(mode="prune", eta=0.2, time_limit=60, threads=1)
    res = run_compress(d / "model.onnx", d / "train.csv", d / "out", cfg)
    assert res.exit_code in (0, 2)


def _frontier_run(d: Path, model: Path, data: Path) -> None:
    from typer.testing import CliRunner

    from pace_cert.cli.main import app

    args = ["frontier", str(model), "--data", str(data), "--out", str(d / "out")]
    flags = ["--eta", "0.1,0.2", "--delta", "0", "--mode", "prune", "--time-limit", "120"]
    res = CliRunner().invoke(app, [*args, *flags, "--threads", "1", "--quiet"])
    assert res.exit_code == 0, res.output


# ------------------------------------------------------------------ the matrix


Path_ = tuple  # a JSON path: keys and list indices


def _walk(d, path: Path_ = ()) -> Iterator[tuple[Path_, object]]:
    yield path, d
    if isinstance(d, dict):
        for k, v in d.items():
            yield from _walk(v, (*path, k))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            yield from _walk(v, (*path, i))


def field_of(path: Path_) -> str:
    return ".".join("*" if isinstance(p, int) else str(p) for p in path)


def _is_number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def matrix(cert: dict) -> list[tuple[Path_, str]]:
    """Every (instance path, mutation) of the full matrix: per field, its first
    instance, and its last one too under ``summary.pruning_bound``; numbers, lists and
    version fields."""
    firsts: dict[tuple[str, str], list[Path_]] = {}
    for path, v in _walk(cert):
        if not path:
            continue
        if _is_number(v):
            kind = "number"
        elif isinstance(v, list):
            kind = "list"
        elif path[-1] == "schema_version":
            kind = "version"
        else:
            continue
        firsts.setdefault((field_of(path), kind), []).append(path)
    out = []
    for (_f, kind), paths in firsts.items():
        both = paths[0][:2] == ("summary", "pruning_bound")
        for path in dict.fromkeys([paths[0], paths[-1]] if both else [paths[0]]):
            muts = {"number": NUMERIC, "list": LISTS, "version": OLDER_VERSIONS}[kind]
            out += [(path, m) for m in muts]
    return out


def mutated(cert: dict, path: Path_, mutation: str) -> dict:
    d = copy.deepcopy(cert)
    parent = d
    for p in path[:-1]:
        parent = parent[p]
    v = parent[path[-1]]
    parent[path[-1]] = _mutate(v, mutation)
    return d


def _mutate(v, m: str):
    if isinstance(v, list):
        return {
            "empty": [],
            "duplicated": [*v, *v[:1]],
            "reordered": v[::-1],
            "truncated": v[:-1],
        }[m]
    if m in OLDER_VERSIONS:
        return m
    if m == "zero":
        return 0 if isinstance(v, int) else 0.0
    f = float(v)
    return {
        "neg_zero": -0.0,
        "subnormal": 5e-324,
        "ulp_up": math.nextafter(f, math.inf),
        "ulp_down": math.nextafter(f, -math.inf),
        "plus_one": v + 1,
        "minus_one": v - 1,
        "huge": 1.7e308,
        "neg_huge": -1.7e308,
        "inf": math.inf,
        "neg_inf": -math.inf,
        "nan": math.nan,
        "wrong_type": "x",
        "wrong_length": [v],
    }[m]


def fast_sample(cert: dict, name: str) -> list[tuple[Path_, str]]:
    """The pinned cases present in ``cert`` and ``FAST_CASES`` drawn (seeded by the
    certificate's name) from the rest of its matrix."""
    full = matrix(cert)
    pinned = [(p, m) for p, m in full if (field_of(p), m) in PINNED]
    pinned = list({(field_of(p), m): (p, m) for p, m in pinned}.values())
    rest = [c for c in full if c not in pinned]
    return pinned + random.Random(name).sample(rest, min(FAST_CASES, len(rest)))


# ------------------------------------------------------------------ the independent check


def _labels_by_onnxruntime(model: Path, X: np.ndarray) -> list:
    import onnxruntime as ort

    s = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    out = s.run(None, {s.get_inputs()[0].name: X})[0]
    return [v.decode() if isinstance(v, bytes) else (v.item() if hasattr(v, "item") else v)
            for v in out]  # fmt: skip


def _exact_meets(H, y0, S, w, beta) -> bool:
    """Every margin row strictly positive, in rationals."""
    if not (np.isfinite(w).all() and np.isfinite(beta).all() and np.all(w >= 0)):
        return False
    n, _T, K = H.shape
    for i in range(n):
        for k in range(K):
            if k == y0[i]:
                continue
            v = Fraction(float(beta[y0[i]])) - Fraction(float(beta[k]))
            for j, t in enumerate(S):
                v += Fraction(float(w[j])) * (
                    Fraction(float(H[i, t, y0[i]])) - Fraction(float(H[i, t, k]))
                )
            if v <= 0:
                return False
    return True


def _rows(H, y0, S):
    n, _T, K = H.shape
    A, B = [], []
    for i in range(n):
        for k in range(K):
            if k != y0[i]:
                A.append(H[i, S, y0[i]] - H[i, S, k])
                b = np.zeros(K)
                b[y0[i]], b[k] = 1.0, -1.0
                B.append(b)
    return np.array(A).reshape(len(A), len(S)), np.array(B).reshape(len(B), K)


def _lp_meets(H, y0, S) -> bool:
    """Some w >= 0 on S and offsets meet every row strictly, confirmed exactly."""
    from scipy.optimize import linprog

    S = list(S)
    A, B = _rows(H, y0, S)
    if not len(A):
        return True
    scale = np.where(np.abs(A).max(axis=0) > 0, np.abs(A).max(axis=0), 1.0) if S else np.ones(0)
    K = H.shape[2]
    M = np.hstack([-(A / scale), -B, np.ones((len(A), 1))])
    c = np.r_[np.zeros(len(S) + K), -1.0]
    bounds = [(0, 1)] * len(S) + [(-1, 1)] * K + [(None, 1)]
    r = linprog(c, A_ub=M, b_ub=np.zeros(len(A)), bounds=bounds, method="highs")
    if r.status != 0 or not -r.fun > 0:
        return False
    return _exact_meets(H, y0, S, np.maximum(r.x[: len(S)], 0) / scale, r.x[len(S) : len(S) + K])


def smaller_pruning(H: np.ndarray, y0: np.ndarray, below: int) -> int | None:
    """The size of a pruning of fewer than ``below`` trees meeting every point strictly
    (confirmed exactly), or None when none is found: brute force over the subsets of
    size ``below - 1`` when there are at most 200 of them, else a SciPy MILP."""
    T = H.shape[1]
    if below <= 0:
        return None
    if below - 1 > T:
        return T if _lp_meets(H, y0, range(T)) else None
    if math.comb(T, below - 1) <= 200:
        for S in itertools.combinations(range(T), below - 1):
            if _lp_meets(H, y0, S):
                return below - 1
        return None
    from scipy.optimize import Bounds, LinearConstraint, milp

    K = H.shape[2]
    A, B = _rows(H, y0, list(range(T)))
    scale = np.where(np.abs(A).max(axis=0) > 0, np.abs(A).max(axis=0), 1.0)
    # x = [w (T), z (T), beta (K)]: rows >= 1e-7, w <= z, min sum z
    rows = LinearConstraint(np.hstack([A / scale, np.zeros((len(A), T)), B]), 1e-7, np.inf)
    link = LinearConstraint(np.hstack([np.eye(T), -np.eye(T), np.zeros((T, K))]), -np.inf, 0)
    lo, hi = np.r_[np.zeros(2 * T), -np.ones(K)], np.r_[np.ones(2 * T), np.ones(K)]
    r = milp(np.r_[np.zeros(T), np.ones(T), np.zeros(K)], constraints=[rows, link],
             integrality=np.r_[np.zeros(T), np.ones(T), np.zeros(K)], bounds=Bounds(lo, hi),
             options={"time_limit": 30})  # fmt: skip
    if r.x is None:
        return None
    S = [t for t in range(T) if r.x[T + t] > 0.5]
    if len(S) < below and _lp_meets(H, y0, S):
        return len(S)
    return None


def _same_splits(a, b) -> bool:
    return all(
        np.array_equal(np.asarray(getattr(a, f)), np.asarray(getattr(b, f)))
        for f in ("feature", "left", "right")
    ) and np.array_equal(
        np.where(a.left < 0, 0, a.threshold).astype(np.float32),
        np.where(b.left < 0, 0, b.threshold).astype(np.float32),
    )


def is_a_pruning(orig, comp) -> bool:
    """Each compressed tree (times its weight) is a >= 0 times an original tree with the
    same splits, within float32 rounding (the test's own comparison)."""
    for i, tc in enumerate(comp.trees):
        vc = comp.weights[i] * tc.value[tc.left < 0]
        ok = False
        for to in orig.trees:
            if to.value.shape != tc.value.shape or not _same_splits(to, tc):
                continue
            vo = to.value[to.left < 0]
            a = float(np.sum(vc * vo) / np.sum(vo * vo)) if np.any(vo) else 0.0
            if a >= 0 and np.allclose(vc, a * vo, rtol=1e-6, atol=1e-30):
                ok = True
                break
        if not ok:
            return False
    return True


def claim_is_refuted(case: Case, d: dict, key: str) -> str | None:
    """Why the independent check refutes claim ``key`` of certificate ``d`` (None:
    it does not)."""
    from pace_cert.cert.pruning_check import leaf_table
    from pace_cert.model.onnx_reader import read_ensemble

    orig, _ = read_ensemble(case.original)
    pb = d["summary"]["pruning_bound"]
    try:
        X = np.array(pb["points"], np.float64).reshape(len(pb["points"]), orig.n_features)
        value = int(pb["value"])
    except (TypeError, ValueError, OverflowError):
        return "checked a malformed pruning bound"
    v = pb["value"]  # JSON 3.0 or -0.0 reads as an integer, as pydantic reads it
    if isinstance(v, bool) or not (isinstance(v, int) or float(v).is_integer()):
        return "checked a malformed pruning bound"
    if not np.isfinite(X).all():
        return "checked a malformed pruning bound"
    X32 = X.astype(np.float32)
    if not np.array_equal(X32.astype(np.float64), X):
        return "checked points that are not float32"
    got = _labels_by_onnxruntime(case.original, X32) if len(X) else []
    if got != list(pb["labels"]):
        return "checked labels onnxruntime does not give"
    classes = [c.item() if hasattr(c, "item") else c for c in orig.classes]
    y0 = np.array([list(map(str, classes)).index(str(v)) for v in got], np.int64)
    H = leaf_table(orig.trees, X32)
    if key == "minimal_pruning":
        comp, _ = read_ensemble(case.compressed)
        if not is_a_pruning(orig, comp):
            return "called a model that is not a pruning minimal among prunings"
        if d["summary"]["trees_after"] != value:
            return "minimal among prunings with trees_after != bound"
    smaller = smaller_pruning(H, y0, value)
    if smaller is not None:
        return f"a pruning of {smaller} trees meets the points, the bound says {value}"
    return None


# ------------------------------------------------------------------ the property


def fuzz(case: Case, cases: list[tuple[Path_, str]], tmp: Path) -> tuple[dict, list[str]]:
    """Run verify on every mutated certificate; (outcome counts, property violations)."""
    from pace_cert.cert.verify import run_verify

    cert = json.loads(case.certificate.read_text())
    counts = {"cases": 0, "bad input": 0, "refuted": 0, "verified": 0, "inconclusive": 0}
    failures = []
    for path, m in cases:
        d = mutated(cert, path, m)
        tmp.mkdir(parents=True, exist_ok=True)
        where = tmp / "certificate.json"
        where.write_text(json.dumps(d))
        # verify reads the plausibility artifact beside the compressed model, not here
        what = f"{case.name}: {field_of(path)} [{path}] {m}"
        counts["cases"] += 1
        try:
            rep = run_verify(case.original, case.compressed, where, threads=1)
        except InputError as e:
            counts["bad input"] += 1
            if not str(e).strip():
                failures.append(f"{what}: bad input without a message")
            continue
        except Exception as e:  # exit 4
            failures.append(f"{what}: internal error {type(e).__name__}: {e}")
            continue
        counts[rep.status] += 1
        for c in rep.claims:
            if c["status"] != "checked" or c["key"] not in INDEPENDENT:
                continue
            if why := claim_is_refuted(case, d, c["key"]):
                failures.append(f"{what}: {c['key']} reported checked but {why}")
    return counts, failures


def _run(corpus, name: str, tmp_path: Path, full: bool) -> dict:
    case = corpus(name)
    cert = json.loads(case.certificate.read_text())
    cases = matrix(cert) if full else fast_sample(cert, name)
    counts, failures = fuzz(case, cases, tmp_path / "fuzz")
    assert not failures, "\n".join(failures[:20])
    return counts


@pytest.mark.parametrize("name", CORPUS)
def test_fuzz_sample_never_crashes_nor_checks_a_false_claim(corpus, name, tmp_path):
    counts = _run(corpus, name, tmp_path, full=False)
    assert counts["cases"] >= FAST_CASES


@pytest.mark.slow
@pytest.mark.parametrize("name", CORPUS)
def test_fuzz_full_matrix(corpus, name, tmp_path, tmp_path_factory):
    counts = _run(corpus, name, tmp_path, full=True)
    # the counts docs/soundness.md records (xdist hides a worker's stdout)
    out = _shared_root(tmp_path_factory) / f"fuzz-counts-{name}.json"
    out.write_text(json.dumps(counts))


def test_the_matrix_covers_every_field_kind(corpus):
    """Numbers, lists and the version field of the pruning bound and the certificate."""
    cert = json.loads(corpus("rf-prune-delta").certificate.read_text())
    fields = {field_of(p) for p, _m in matrix(cert)}
    for f in (
        "summary.pruning_bound.value",
        "summary.pruning_bound.points.*.*",
        "summary.pruning_bound.cuts.*.combos.*.weight",
        "summary.pruning_bound.cuts.*.combos.*.rows.*.*",
        "summary.pruning_bound.cuts.*.keep_one_of",
        "schema_version",
        "region.eta",
        "summary.trees_after",
    ):
        assert f in fields, f
