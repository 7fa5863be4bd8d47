"""Training data: CSV with a header row, feature columns in the model's input order and
a target column holding labels the model knows. Every problem is an InputError (exit 3)
that names the file, the row and the column.

A feature cell that is empty or reads as NaN (``nan``, ``NaN``) is a missing value: the
row is kept (NaN in X) and lies outside every proof (NaN is excluded from every
region); the target must be present in every row, and +-inf stays bad input."""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pace_cert.errors import InputError

#: the largest magnitude of a data value: 2**120, where pace-cert's float32 overflow
#: guard begins (soundness.md section 4). Float32 reaches 3.4e38, but a value this close
#: to overflow is a missing-value sentinel or a unit error, not a measurement, and it
#: would stretch ``--bounds data`` and the plausibility forest over the whole line.
MAX_ABS_VALUE = 2.0**120


@dataclass(frozen=True)
class Dataset:
    X: np.ndarray  # float32 [n, n_features]
    y: np.ndarray  # class indices into the model's classes, int64 [n]
    feature_names: list[str]

    @property
    def complete(self) -> np.ndarray:
        """bool [n]: rows without a missing value (the only rows the region is built from)."""
        return ~np.isnan(self.X).any(axis=1)

    @property
    def n_missing(self) -> int:
        """Rows with at least one missing value (NaN)."""
        return int((~self.complete).sum())


def read_csv(
    path: str | Path,
    classes: np.ndarray,
    n_features: int,
    target: str = "target",
    columns: Sequence[str] | None = None,
) -> Dataset:
    """Read and validate TRAIN.csv against a model with ``classes`` and ``n_features``.
    ``columns``: the feature columns by header name, in model order (the names the
    model records, or another CSV's, e.g. the training CSV's for a test CSV): the
    file's feature columns are matched to them by name, exactly, in any order; a column
    missing or not among them is named. None: the columns are taken by position."""
    p = Path(path)
    try:
        with open(p, newline="") as f:
            reader = csv.reader(f)
            rows = [(reader.line_num, r) for r in reader]  # (file line where it ends, cells)
    except FileNotFoundError:
        raise InputError(p, "file not found") from None
    except IsADirectoryError:
        raise InputError(p, "is a directory, expected a CSV file") from None
    except UnicodeDecodeError:
        raise InputError(p, "not a text CSV file") from None
    except OSError as e:
        raise InputError(p, f"cannot read file ({e.strerror})") from None
    except csv.Error as e:
        raise InputError(p, f"malformed CSV ({e})") from None
    if not rows:
        raise InputError(p, "empty file (expected a header row)")
    header = [h.strip() for h in rows[0][1]]
    if target not in header:
        raise InputError(p, f"no target column {target!r} in the header")
    t_col = header.index(target)
    feat_cols = [i for i in range(len(header)) if i != t_col]
    if columns is not None:
        feat_cols = _by_name(p, header, feat_cols, list(columns))
    if len(feat_cols) != n_features:
        raise InputError(
            p, f"has {len(feat_cols)} feature columns but the model expects {n_features}"
        )
    lines = [n for n, r in rows[1:] if r and any(c.strip() for c in r)]
    body = [r for _n, r in rows[1:] if r and any(c.strip() for c in r)]
    if not body:
        raise InputError(p, "no data rows")
    X = np.empty((len(body), n_features), np.float64)
    labels: list[str] = []
    for i, r in enumerate(body):
        where = row_name(i, lines[i])
        if len(r) != len(header):
            raise InputError(p, f"{where} has {len(r)} columns, the header has {len(header)}")
        for j, c in enumerate(feat_cols):
            try:
                v = float(r[c]) if r[c].strip() else np.nan  # empty: a missing value
            except ValueError:
                raise InputError(
                    p, f"{where}, column {header[c]!r}: {r[c]!r} is not a number"
                ) from None
            if np.isinf(v):
                raise InputError(p, f"{where}, column {header[c]!r}: {r[c]!r} is not finite")
            X[i, j] = v
        labels.append(r[t_col].strip())
    with np.errstate(over="ignore"):
        X32 = X.astype(np.float32)
    if np.isinf(X32).any():
        raise InputError(p, "a value overflows float32")
    with np.errstate(invalid="ignore"):
        big = np.argwhere(np.abs(X) > MAX_ABS_VALUE)
    if len(big):
        r, j = (int(v) for v in big[0])
        raise InputError(
            p,
            f"{row_name(r, lines[r])}, column {header[feat_cols[j]]!r}: "
            f"{body[r][feat_cols[j]].strip()} "
            "exceeds 2^120 (1.3e36) in magnitude: too close to float32 overflow to be a "
            "measurement (a missing-value code?)",
        )
    y = _label_indices(p, labels, classes, lines)
    return Dataset(X32, y, [header[c] for c in feat_cols])


def _by_name(p: Path, header: list[str], feat_cols: list[int], columns: list[str]) -> list[int]:
    """The file's columns (indices into ``header``) holding ``columns``, matched by
    name; InputError naming the columns missing, extra or given twice."""
    names = [header[i] for i in feat_cols]
    try:
        return [feat_cols[i] for i in column_order(names, columns)]
    except ColumnMismatch as e:
        raise InputError(p, str(e)) from None


class ColumnMismatch(ValueError):
    """Columns that cannot be matched to the features by name (the message names both
    sides)."""


def column_order(given: Sequence[str], expected: Sequence[str]) -> list[int]:
    """For each of the model's ``expected`` feature names, the index of the column of
    ``given`` (a file's or a DataFrame's) that holds it: the same names, each once, in
    any order. A column also matches the name LightGBM records for it (whitespace as
    ``_``: LightGBM renames ``"b c"`` to ``"b_c"``) when that pairing is one to one.
    ColumnMismatch naming the columns on both sides otherwise."""
    given, expected = [str(c) for c in given], [str(c) for c in expected]
    twice = sorted({c for c in given if given.count(c) > 1})
    if twice:
        raise ColumnMismatch(
            f"column {twice[0]!r} appears more than once; columns are matched by name"
        )
    if set(given) == set(expected):
        return [given.index(c) for c in expected]
    renamed = [re.sub(r"\s", "_", c) for c in given]
    if len(set(renamed)) == len(renamed) and set(renamed) == set(expected):
        return [renamed.index(c) for c in expected]
    missing = [c for c in expected if c not in given]
    extra = [c for c in given if c not in expected]
    parts = []
    if missing:
        parts.append(f"no column {_listed(missing)}")
    if extra:
        parts.append(f"{_listed(extra)} not among the features")
    raise ColumnMismatch(
        "the columns do not match the features by name: "
        + "; ".join(parts)
        + f" (the {len(expected)} features: {_listed(expected)}; columns are matched by "
        "name, never by position)"
    )


def _listed(names: Sequence[str], most: int = 8) -> str:
    shown = ", ".join(repr(n) for n in names[:most])
    return shown + (f", ... ({len(names)} in all)" if len(names) > most else "")


def row_name(i: int, line: int) -> str:
    """How an error names data row ``i`` (0-based, blank lines not counted) that ends on
    file line ``line`` (1-based, the header is line 1)."""
    return f"data row {i + 1} (file line {line})"


def _label_indices(p: Path, labels: list[str], classes: np.ndarray, lines: list[int]) -> np.ndarray:
    if classes.dtype == object or classes.dtype.kind in "US":
        lookup = {str(c): i for i, c in enumerate(classes)}
        keys = labels
    else:
        lookup = {int(c): i for i, c in enumerate(classes)}
        keys = []
        for lab in labels:
            try:
                v = float(lab)
            except ValueError:
                raise InputError(p, f"label {lab!r} is not one of the model's classes") from None
            if not v.is_integer():
                raise InputError(p, f"label {lab!r} is not one of the model's classes")
            keys.append(int(v))
    out = np.empty(len(keys), np.int64)
    for i, k in enumerate(keys):
        if k not in lookup:
            raise InputError(
                p,
                f"label {labels[i]!r} ({row_name(i, lines[i])}) is not one of the model's classes",
            )
        out[i] = lookup[k]
    return out
