"""The harness's records: one configuration (:class:`Config`), one CSV row
(:class:`Result`), where results go, and the CSV's reading and writing."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path

MODES = ("prune", "generate", "pace")
DONE_STATUSES = ("certified", "inconclusive")  # a resumed run skips these, reruns the rest
RESULTS = Path(__file__).resolve().parents[1] / "results"
PROFILES_OUT = RESULTS / "profiles"  # the paper's profiles (harness, oracle_compare, scaling)
STUDIES_OUT = RESULTS / "studies"  # one-off studies (benchmarks/studies/)


@dataclass(frozen=True)
class Config:
    """One benchmark run: what to train and how to compress it."""

    dataset: str
    family: str  # rf | ada
    n_estimators: int
    depth: int
    mode: str  # prune | generate | pace
    eta: float
    delta: float
    seed: int

    @property
    def key(self) -> str:
        return (
            f"{self.family}-{self.dataset}-n{self.n_estimators}-d{self.depth}-{self.mode}"
            f"-eta{self.eta:g}-delta{self.delta:g}-s{self.seed}"
        )

    @property
    def group(self) -> tuple:
        """Everything but the seed: the unit over which the tables average."""
        return (
            self.dataset,
            self.family,
            self.n_estimators,
            self.depth,
            self.mode,
            self.eta,
            self.delta,
        )


@dataclass
class Result:
    """One CSV row. Sizes are those of the returned ensemble (the original if uncertified)."""

    key: str
    dataset: str
    family: str
    n_estimators: int
    depth: int
    mode: str
    eta: float
    delta: float
    seed: int
    status: str  # certified | inconclusive | not-implemented | error
    S: int | None = None  # trees in the returned ensemble
    P: float | None = None  # % of those trees with origin "new"
    T: float | None = None  # wall seconds of compress()
    trees_before: int | None = None
    leaves_before: int | None = None
    leaves_after: int | None = None
    fidelity: float | None = None  # test rows: compressed IR == original (onnxruntime)
    accuracy: float | None = None  # test rows: compressed IR == label
    original_accuracy: float | None = None  # test rows: original (onnxruntime) == label
    samples_kept: int | None = None  # training rows inside the region
    samples_dropped: int | None = None
    separating_samples: int | None = None
    phase: str = ""  # l1 | l0: which phase produced the returned ensemble
    l0_optimal: bool | None = None
    size_bound: int | None = None  # pace, depth <= 2: no faithful model of fewer trees (synth)
    pruning_bound: int | None = None  # no faithful pruning keeps fewer trees (verify re-checks)
    t_final: float | None = None  # seconds into compress() when the returned size was certified
    pricing: str = ""  # none | exact | heuristic
    pricing_rounds: int | None = None
    generation_stop: str = ""
    hit_time_limit: bool | None = None
    time_limit: float | None = None
    onnx_checks: str = ""  # which onnxruntime agreement checks ran (all passed)
    error: str = ""
    finished: str = ""

    @classmethod
    def for_config(cls, cfg: Config, status: str, **values) -> Result:
        return cls(key=cfg.key, **asdict(cfg), status=status, finished=now(), **values)

    @property
    def config(self) -> Config:
        return Config(
            self.dataset,
            self.family,
            self.n_estimators,
            self.depth,
            self.mode,
            self.eta,
            self.delta,
            self.seed,
        )

    def to_row(self) -> dict[str, str]:
        return {k: "" if v is None else str(v) for k, v in asdict(self).items()}

    @classmethod
    def from_row(cls, row: dict[str, str]) -> Result:
        return cls(**{f.name: _parse(row.get(f.name, ""), str(f.type)) for f in fields(cls)})


def _parse(text: str, type_name: str) -> object:
    """Inverse of ``str()`` for the field types used in :class:`Result`."""
    base = type_name.replace(" | None", "")
    if text == "":
        return "" if base == "str" else None
    if base == "int":
        return int(text)
    if base == "float":
        return float(text)
    if base == "bool":
        return text == "True"
    return text


def now() -> str:
    """The current UTC time, to the second (ISO 8601)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def reached_time_limit(r: Result) -> bool:
    """Did the run stop because of its time limit (rather than by converging)?"""
    if r.time_limit is None or r.T is None:
        return False
    return (
        0.95 * r.time_limit <= r.T
        or r.status == "inconclusive"
        or "time limit" in r.generation_stop
    )


# ------------------------------------------------------------------------ csv io


def read_results(path: Path) -> dict[str, Result]:
    """Rows of an existing CSV by key; a later row for the same key wins."""
    if not path.exists():
        return {}
    with open(path, newline="") as f:
        return {row["key"]: Result.from_row(row) for row in csv.DictReader(f)}


def append_result(path: Path, result: Result) -> None:
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[fl.name for fl in fields(Result)])
        if new:
            writer.writeheader()
        writer.writerow(result.to_row())
        f.flush()
        os.fsync(f.fileno())


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_results(path: Path, results: Iterable[Result]) -> None:
    """Rewrite the CSV with one row per key (compacts rows replaced by reruns)."""
    header = [fl.name for fl in fields(Result)]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        for r in results:
            writer.writerow(r.to_row())
    os.replace(tmp, path)
