"""The born-again protocol: ``pace-cert compress --mode tree`` on 10-tree, depth-3 forests.

Protocol of *Born-Again Tree Ensembles* (Vidal & Schiffer, ICML 2020): per dataset ten
random forests of 10 trees of depth 3 (p/2 candidate features per split), one per fold
of a ten-fold split, over data in 10 ordinal bins. Our forests (``--source sklearn``):
scikit-learn ``RandomForestClassifier(10, max_depth=3, max_features=0.5,
random_state=fold)`` on the nine other folds of ``StratifiedKFold(10, shuffle=True,
random_state=0)`` of the bundled dataset binned by ``pace_cert.zoo.bin_features``,
exported with skl2onnx (soft voting: the label is the argmax of the mean leaf
probabilities, as onnxruntime computes it). The born-again paper's own forests
(``--source ba --ba-trees DIR``, DIR a checkout of github.com/vidalt/BA-Trees): its
published forest files and training folds, each tree's leaf voting for its majority
class (hard voting), written to ONNX by pace-cert's writer; nothing of that repository
is copied here.

Each forest is compressed by the CLI in a fresh process (``--mode tree --time-limit T``,
the limit counted from process start) in the global region (eta = delta = 0) and at
eta = delta = 0.1, and the result is checked with ``pace-cert verify``. Per run: exit
code, the forest's leaves and the tree's leaves and depth, the proved leaf lower bound,
wall time, peak RSS, verify's verdict. The report gives per dataset and region the mean
leaves beside the born-again paper's published means (the exact born-again tree and the
post-pruned one). Resumable: rows already in the CSV are skipped (``--fresh`` starts
over).

    python -m benchmarks.born_again --time-limit 60 --out benchmarks/results/profiles
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.harness.report import git_revision
from benchmarks.procs import append_row, read_rows, run_process

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "pace_cert.cli.main"]
DATASETS = ("cancer", "compas", "fico", "diabetes", "seeds")
REGIONS = {"global": (0.0, 0.0), "eta-delta": (0.1, 0.1)}
BA_NAMES = {
    "cancer": "Breast-Cancer-Wisconsin",
    "compas": "COMPAS-ProPublica",
    "fico": "FICO",
    "diabetes": "Pima-Diabetes",
    "seeds": "Seeds",
}
#: the born-again paper's published means over its ten forests (Table 3 of the paper as
#: issue 68 quotes it): the exact tree of fewest leaves, its depth, and that tree
#: post-pruned on the training data (no guarantee)
BA_PUBLISHED = {
    "cancer": (890.1, 18.0, 35.9),
    "compas": (37.1, 8.9, 31.2),
    "fico": (39.2, 8.6, 15.8),
    "diabetes": (169.7, 15.0, 79.0),
    "seeds": (214.6, 13.8, 21.5),
}


@dataclass
class Row:
    key: str
    source: str
    dataset: str
    fold: int
    region: str
    time_limit: float
    exit_code: int
    trees_before: int
    leaves_before: int
    leaves_after: int
    depth_after: int
    leaves_bound: int | None
    complete: bool | None
    rounds: int | None
    wall: float
    peak_rss_mb: float
    verify: str
    verify_seconds: float
    note: str


def sklearn_forest(name: str, fold: int, folder: Path) -> tuple[Path, Path]:
    """Our protocol's forest for ``fold``: the ONNX file and its training CSV."""
    import onnx
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import StratifiedKFold

    from pace_cert.zoo import bin_features, export_onnx, load_dataset, write_csv

    X, y, names = load_dataset(name)
    X = bin_features(X)
    train, _test = list(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y))[fold]
    rf = RandomForestClassifier(10, max_depth=3, max_features=0.5, random_state=fold)
    rf.fit(X[train], y[train])
    folder.mkdir(parents=True, exist_ok=True)
    model, data = folder / "forest.onnx", folder / "train.csv"
    onnx.save(export_onnx(rf, X.shape[1]), model)
    write_csv(data, X[train], y[train], names)
    return model, data


def ba_forest(name: str, fold: int, ba_root: Path, folder: Path) -> tuple[Path, Path]:
    """The born-again paper's forest and training fold (1-based files ``RF{fold+1}``):
    each tree's leaf votes for its majority class, weight 1 (hard voting), written by
    pace-cert's writer with float32 thresholds."""
    import onnx

    from pace_cert.model.ensemble import Ensemble, Tree
    from pace_cert.model.onnx_graph import OnnxModelInfo
    from pace_cert.model.onnx_writer import ensemble_to_onnx
    from pace_cert.zoo import write_csv

    ba = BA_NAMES[name]
    res = ba_root / "src" / "resources"
    text = (res / "forests" / ba / f"{ba}.RF{fold + 1}.txt").read_text()
    k = int(re.search(r"NB_CLASSES: (\d+)", text).group(1))
    p = int(re.search(r"NB_FEATURES: (\d+)", text).group(1))
    trees = []
    for block in text.split("[TREE ")[1:]:
        lines = [ln.split() for ln in block.splitlines()[2:] if ln.strip()]
        n = len(lines)
        feat, left, right = (np.full(n, -1, np.int64) for _ in range(3))
        th, value = np.zeros(n, np.float32), np.zeros((n, k))
        for a in lines:
            i = int(a[0])
            if a[1] == "IN":
                left[i], right[i], feat[i], th[i] = int(a[2]), int(a[3]), int(a[4]), float(a[5])
            else:
                value[i, int(a[7])] = 1.0
        trees.append(Tree(feat, th, left, right, value))
    ens = Ensemble(tuple(trees), np.ones(len(trees)), np.zeros(k), np.arange(k), p, kind="margin")
    data = np.genfromtxt(res / "datasets" / ba / f"{ba}.train{fold + 1}.csv", delimiter=",",
                         names=True)  # fmt: skip
    names = list(data.dtype.names)
    table = np.array([list(r) for r in data], np.float64)
    folder.mkdir(parents=True, exist_ok=True)
    model, csv_path = folder / "forest.onnx", folder / "train.csv"
    info = OnnxModelInfo("input", "label", None, False)
    onnx.save(ensemble_to_onnx(ens, info), model)
    write_csv(csv_path, table[:, :-1], table[:, -1].astype(np.int64), names[:-1])
    return model, csv_path


def run_one(
    source: str, name: str, fold: int, region: str, limit: float, work: Path,
    ba_root: Path | None, threads: int,
) -> Row:  # fmt: skip
    eta, delta = REGIONS[region]
    folder = work / source / f"{name}-{fold}"
    if source == "ba":
        assert ba_root is not None
        model, data = ba_forest(name, fold, ba_root, folder)
    else:
        model, data = sklearn_forest(name, fold, folder)
    out = folder / f"out-{region}"
    cmd = [
        *CLI, "compress", str(model), "--data", str(data), "--out", str(out), "--mode", "tree",
        "--eta", str(eta), "--delta", str(delta), "--time-limit", str(limit),
        "--threads", str(threads), "--quiet", "--json",
    ]  # fmt: skip
    code, _out, err, wall, rss = run_process(cmd, timeout=3 * limit + 120)
    key = f"{source}-{name}-{fold}-{region}"
    cert_path = out / "certificate.json"
    if not cert_path.exists():
        note = err.strip().splitlines()[-1][:200] if err.strip() else ""
        return Row(key, source, name, fold, region, limit, code, 0, 0, 0, 0, None, None, None,
                   round(wall, 1), round(rss), "no certificate", 0.0, note)  # fmt: skip
    cert = json.loads(cert_path.read_text())
    s, tree = cert["summary"], cert["summary"].get("single_tree") or {}
    verify, vsec, note = "identical (original written)", 0.0, ""
    if cert["compressed"]["sha256"] != cert["original"]["sha256"]:
        vcmd = [*CLI, "verify", str(model), str(out / "compressed.onnx"), str(cert_path),
                "--json", "--threads", str(threads)]  # fmt: skip
        vcode, vout, verr, vsec, _ = run_process(vcmd, timeout=1800)
        try:
            verify = json.loads(vout)["status"]
        except (json.JSONDecodeError, KeyError):
            verify = f"verify exit {vcode}"
            note = verr.strip().splitlines()[-1][:200] if verr.strip() else ""
    if code != 0:
        note = note or (s.get("stop_reason") or "")[:200]
    return Row(
        key, source, name, fold, region, limit, code, s["trees_before"], s["leaves_before"],
        cert["compressed"]["leaves"] if code == 0 else 0,
        cert["compressed"]["max_depth"] if code == 0 else 0,
        tree.get("leaves_lower_bound"), tree.get("complete"), tree.get("rounds"),
        round(wall, 1), round(rss), verify, round(vsec, 1), note,
    )  # fmt: skip


def report(rows: list[dict], command: str, commit: str) -> str:
    """The Markdown report: per (source, dataset, region) the mean leaves of the forests
    and of the certified trees beside the born-again paper's means, then every run."""
    lines = [
        "# Born-again protocol: `--mode tree` on 10-tree, depth-3 forests",
        "",
        f"- command: `{command}`",
        f"- commit: {commit}",
        f"- date (UTC): {datetime.now(UTC).strftime('%Y-%m-%d %H:%M')}",
        "- born-again columns: the paper's published means over its own ten forests "
        "(exact tree of fewest leaves; that tree post-pruned on training data, no guarantee)",
        "",
        "| source | dataset | region | certified | forest leaves | tree leaves (mean) | "
        "x exact BA | proved minimal | depth | max wall s | BA exact | BA post-pruned |",
        "|" + "---|" * 12,
    ]
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["source"], r["dataset"], r["region"]), []).append(r)
    for (source, name, region), sub in sorted(groups.items()):
        ok = [r for r in sub if r["exit_code"] == "0" and r["verify"] == "verified"]
        exact, _depth, pruned = BA_PUBLISHED[name]
        mean = statistics.mean(int(r["leaves_after"]) for r in ok) if ok else float("nan")
        minimal = sum(r["leaves_bound"] not in ("", None) and r["leaves_bound"] == r["leaves_after"]
                      for r in ok)  # fmt: skip
        lines.append(
            f"| {source} | {name} | {region} | {len(ok)}/{len(sub)} | "
            f"{statistics.mean(int(r['leaves_before']) for r in sub):.1f} | {mean:.1f} | "
            f"{mean / exact:.2f} | {minimal}/{len(ok)} | "
            f"{statistics.mean(int(r['depth_after']) for r in ok) if ok else float('nan'):.1f} | "
            f"{max(float(r['wall']) for r in sub):.1f} | {exact} | {pruned} |"
        )
    head = ("run", "exit", "leaves", "depth", "bound", "complete", "rounds", "wall s", "RSS MB",
            "verify", "note")  # fmt: skip
    lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join([
            r["key"], r["exit_code"], f"{r['leaves_before']} -> {r['leaves_after']}",
            r["depth_after"], r["leaves_bound"] or "-", r["complete"] or "-", r["rounds"] or "-",
            r["wall"], r["peak_rss_mb"], r["verify"], r["note"],
        ]) + " |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.born_again", description=__doc__)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/profiles")
    ap.add_argument("--name", default="born-again")
    ap.add_argument("--work", type=Path, default=ROOT / ".bench-born-again")
    ap.add_argument("--source", choices=("sklearn", "ba"), default="sklearn")
    ap.add_argument("--ba-trees", type=Path, default=None, help="checkout of vidalt/BA-Trees")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--regions", default=",".join(REGIONS))
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="", help="regex on run keys")
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    if args.source == "ba" and args.ba_trees is None:
        ap.error("--source ba needs --ba-trees DIR")
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path = args.out / f"{args.name}.csv"
    if args.fresh and csv_path.exists():
        csv_path.unlink()
    command = "python -m benchmarks.born_again " + " ".join(argv or sys.argv[1:])
    if not args.report_only:
        done = {r["key"] for r in read_rows(csv_path)}
        for name in args.datasets.split(","):
            for fold in range(args.folds):
                for region in args.regions.split(","):
                    key = f"{args.source}-{name}-{fold}-{region}"
                    if key in done or (args.only and not re.search(args.only, key)):
                        continue
                    row = run_one(args.source, name, fold, region, args.time_limit, args.work,
                                  args.ba_trees, args.threads)  # fmt: skip
                    append_row(csv_path, row)
                    print(
                        f"{key}: exit {row.exit_code}, leaves {row.leaves_before} -> "
                        f"{row.leaves_after}, {row.wall:.1f} s, {row.verify}",
                        flush=True,
                    )
    (args.out / f"{args.name}.md").write_text(
        report(read_rows(csv_path), command, git_revision(ROOT))
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
