"""The small commands: ``report`` (HTML page of a certificate), ``inspect`` (what a
model file holds) and ``demo`` (the whole job on a bundled dataset)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pace_cert.cli.common import DebugOpt, JsonOpt, print_json, run_command


def report(
    certificate: Annotated[
        Path,
        typer.Argument(
            help="certificate.json written by compress, or frontier.json written by frontier "
            "(then each rung's page is written beside OUT and linked)."
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", help="The HTML file to write (one self-contained file).")
    ] = Path("report.html"),
    debug: DebugOpt = False,
) -> None:
    """Write a self-contained HTML report of CERTIFICATE for an auditor: models and
    hashes, region and coverage, sizes and bound, proofs, history, what verify checks."""

    def body() -> int:
        from pace_cert.frontier.report import write_any_report

        for page in write_any_report(certificate, out):
            typer.echo(f"wrote {page}")
        return 0

    run_command(body, debug)


def inspect(
    model: Annotated[Path, typer.Argument(help="An ONNX tree-ensemble classifier.")],
    data: Annotated[
        Path | None,
        typer.Option(
            "--data", help="A CSV whose header names the features (e.g. the training CSV)."
        ),
    ] = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Family, estimators and trees, depth, leaves, classes, features, the detected
    exporter pattern and any input transform folded into the splits; a model of one tree
    (e.g. compress --mode tree) is printed as its rules."""

    def body() -> int:
        from pace_cert.model.ensemble import family_of
        from pace_cert.model.onnx_reader import read_ensemble

        ens, info = read_ensemble(model)
        fold = ens.input_folding
        d: dict[str, Any] = {
            "model": str(model),
            "family": family_of(ens),
            "pattern": ens.pattern,
            "estimators": ens.n_estimators,
            "trees": ens.n_trees,
            "max_depth": ens.max_depth,
            "leaves": ens.n_leaves,
            "classes": [c.item() if hasattr(c, "item") else c for c in ens.classes],
            "features": ens.n_features,
            "kind": ens.kind,
            "input": info.input_name,
            "label_output": info.label_name,
            "input_transform": None
            if fold is None
            else {"ops": list(fold.ops), "folded_thresholds": len(fold.splits)},
        }
        rules = None
        if ens.n_trees == 1:  # one tree: its rules, the features named by --data's header
            from pace_cert.model.tree_text import tree_rules

            names = list(info.feature_names) if info.feature_names is not None else None
            if data is not None:
                names = _feature_names(data, ens.n_features, names)
            rules = tree_rules(ens.trees[0], ens.classes, names)
        if as_json:
            print_json({**d, "rules": rules})
            return 0
        for k, v in d.items():
            if k == "estimators" and ens.n_estimators != ens.n_trees:
                per = ens.n_trees // ens.n_estimators
                v = f"{v} (x {per} classes: one tree per class and round = {ens.n_trees} trees)"
            if k == "input_transform":
                if fold is None:
                    continue
                v = (
                    f"{' -> '.join(fold.ops)}, folded into {len(fold.splits)} split "
                    "thresholds: the trees read the raw input"
                )
            typer.echo(f"{k:>15}: {v}")
        if rules is not None:
            typer.echo("")
            for line in rules:
                typer.echo(line)
        return 0

    run_command(body, debug)


def _feature_names(path: Path, n_features: int, recorded: list[str] | None) -> list[str]:
    """The model's feature names (``recorded``, when the model records them: the header
    must hold every one of them, else InputError naming them), else the first
    ``n_features`` column names of a CSV's header (InputError when it cannot be read or
    is too short)."""
    from pace_cert.errors import InputError

    try:
        with open(path) as f:
            header = f.readline().strip().split(",")
    except OSError as e:
        raise InputError(path, f"cannot read the CSV header ({e.strerror or e})") from None
    header = [h.strip() for h in header]
    if recorded is not None:
        missing = [c for c in recorded if c not in header]
        if missing:
            raise InputError(path, f"the header lacks the model's features {missing[:8]} "
                             "(columns are matched by name)")  # fmt: skip
        return recorded
    if len(header) < n_features:
        raise InputError(path, f"the header names {len(header)} columns, the model reads "
                         f"{n_features} features")  # fmt: skip
    return header[:n_features]


def demo(
    out: Annotated[Path, typer.Option(help="Where to write the demo files.")] = Path("demo-out"),
    dataset: Annotated[str, typer.Option(help="Bundled dataset.")] = "compas",
    trees: Annotated[int, typer.Option(help="Random-forest size.")] = 50,
    depth: Annotated[int, typer.Option(help="Tree depth.")] = 2,
    eta: Annotated[float, typer.Option(help="Confidence level.")] = 0.1,
    delta: Annotated[float, typer.Option(help="Plausibility level.")] = 0.1,
    mode: Annotated[str, typer.Option(help="pace, prune or generate.")] = "pace",
    debug: DebugOpt = False,
) -> None:
    """The whole job on a bundled dataset: train, export, compress, verify, summarise."""

    def body() -> int:
        from pace_cert.demo import run_demo

        return run_demo(out, dataset, trees, depth, eta, delta, mode, typer.echo)

    run_command(body, debug)
