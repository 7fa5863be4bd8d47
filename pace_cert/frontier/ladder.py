"""The frontier's plan: a ladder of nested regions ("rungs"), as data.

A rung is a region (eta, delta). Region A lies inside region B when A's eta and delta
are both at least B's (the same original, the same plausibility forest: a higher margin
threshold and a higher plausibility quantile only remove inputs). Rungs run in ladder
order, so every rung comes after each rung whose region holds it: the rungs sorted by
(eta, delta) ascending, from the largest region to the smallest.

* default, and ``--rows LIST``: a ladder in the user's units (:class:`RowShares`),
  rungs defined by the share of the ``--data`` rows inside the region (100, 99, 95, 90,
  80, 70 %), translated per model into eta (:func:`resolve`, delta 0): the largest
  eta, rounded down to two significant digits, whose region holds that share.
* ``--eta LIST`` / ``--delta LIST``: every (eta, delta) pair of the two lists (a list
  not given is ``0``), sorted as above; each value once per list.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

#: rungs at most: each gets a share of the one time budget
MAX_RUNGS = 24


@dataclass(frozen=True, order=True)
class Rung:
    """One region of the ladder (eta in the model's margin units, delta a share of
    the training rows)."""

    eta: float
    delta: float
    share: float | None = field(default=None, compare=False)  # asked (--rows), 0..1

    @property
    def name(self) -> str:
        """The rung's directory name: ``global``, ``eta0.1``, ``delta0.1``,
        ``eta0.1-delta0.1``; each value as :func:`number` writes it, so two rungs
        have the same name only when they are the same rung. A rung of a
        :class:`RowShares` ladder: ``rows95`` (the share asked, in %)."""
        if self.share is not None:
            return f"rows{number(round(self.share * 100, 6))}"
        parts = [f"eta{number(self.eta)}"] if self.eta else []
        parts += [f"delta{number(self.delta)}"] if self.delta else []
        return "-".join(parts) or "global"

    def inside(self, other: Rung) -> bool:
        """Whether this rung's region lies inside ``other``'s (equal included)."""
        return self.eta >= other.eta and self.delta >= other.delta


def number(x: float) -> str:
    """``x`` short (``{:g}``) when that reads back as ``x`` exactly, else its shortest
    exact form (``repr``): 0.1 -> "0.1", 0.1000001 -> "0.1000001", never two numbers
    written alike."""
    short = f"{x:g}"
    return short if float(short) == x else repr(float(x))


@dataclass(frozen=True)
class RowShares:
    """A ladder in the user's units: each rung the region holding at least ``shares[i]``
    of the ``--data`` rows (0..1, largest first), its eta found per model by
    :func:`resolve`."""

    shares: tuple[float, ...]


DEFAULT_LADDER = RowShares((1.0, 0.99, 0.95, 0.9, 0.8, 0.7))

#: the ladder before #51, in eta units (a raw score means little on a booster)
ETA_LADDER: tuple[Rung, ...] = (
    Rung(0.0, 0.0),
    Rung(0.1, 0.0),
    Rung(0.1, 0.1),
    Rung(0.2, 0.1),
    Rung(0.3, 0.1),
    Rung(0.5, 0.1),
)

Ladder = tuple[Rung, ...] | RowShares


class LadderError(ValueError):
    """A bad ``--eta`` / ``--delta`` list: ``option`` names it."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"{option}: {problem}")
        self.option = option


def parse_list(
    text: str, option: str, upper: float | None = None, inclusive: bool = False
) -> tuple[float, ...]:
    """Comma-separated numbers, each finite, >= 0 (and < ``upper`` when given, <= with
    ``inclusive``), each once; LadderError otherwise."""
    values: list[float] = []
    for item in text.split(","):
        item = item.strip()
        try:
            v = float(item)
        except ValueError:
            raise LadderError(
                option, f"{item!r} is not a number (expected e.g. 0,0.1,0.2)"
            ) from None
        if not math.isfinite(v) or v < 0:
            raise LadderError(option, f"{item} must be a finite number >= 0")
        if upper is not None and (v > upper if inclusive else v >= upper):
            bound = f"at most {upper:g}" if inclusive else f"below {upper:g}"
            raise LadderError(option, f"{item} must be {bound}")
        if v in values:
            raise LadderError(option, f"{item} is given twice")
        values.append(v)
    return tuple(values)


def ladder(eta: str | None = None, delta: str | None = None, rows: str | None = None) -> Ladder:
    """The rungs to certify: the default ladder (row shares) when no list is given, the
    ``rows`` shares (in %), else every (eta, delta) pair of the lists (a missing list
    is ``0``) from the largest region to the smallest. LadderError for a bad list,
    ``rows`` with eta/delta, or more than MAX_RUNGS rungs."""
    if rows is not None:
        if eta is not None or delta is not None:
            raise LadderError("--rows", "give either --rows or --eta/--delta, not both")
        pct = parse_list(rows, "--rows", upper=100.0, inclusive=True)
        if any(v <= 0 for v in pct):
            raise LadderError("--rows", "each share must be above 0 (a percentage of rows)")
        if len(pct) > MAX_RUNGS:
            raise LadderError(
                "--rows", f"{len(pct)} rungs; at most {MAX_RUNGS} share one time limit"
            )
        return RowShares(tuple(sorted((v / 100 for v in pct), reverse=True)))
    if eta is None and delta is None:
        return DEFAULT_LADDER
    etas = (0.0,) if eta is None else parse_list(eta, "--eta")
    deltas = (0.0,) if delta is None else parse_list(delta, "--delta", upper=1.0)
    rungs = sorted(Rung(e, d) for e in etas for d in deltas)
    names = [r.name for r in rungs]
    if len(set(names)) != len(names):  # number() makes this unreachable; kept as a guard
        twice = next(n for n in names if names.count(n) > 1)
        raise LadderError("--eta/--delta", f"two rungs would both be named {twice}")
    if len(rungs) > MAX_RUNGS:
        raise LadderError(
            "--eta/--delta", f"{len(rungs)} rungs; at most {MAX_RUNGS} share one time limit"
        )
    return tuple(rungs)


def resolve(plan: Ladder, original, X: np.ndarray) -> tuple[tuple[Rung, ...], list[str]]:
    """The rungs of ``plan`` for this model: a :class:`RowShares` ladder translated into
    eta on the rows ``X`` (:func:`eta_for_share`; a share whose eta equals a larger
    share's is the same region: dropped, said in the notes), explicit rungs as given.
    Returns (rungs, notes)."""
    if not isinstance(plan, RowShares):
        return tuple(plan), []
    rungs: list[Rung] = []
    notes = []
    for share in plan.shares:
        eta = eta_for_share(original, X, share)
        if rungs and eta == rungs[-1].eta:
            notes.append(
                f"rows {number(share * 100)} %: the same region as rows "
                f"{number(rungs[-1].share * 100)} % (eta {number(eta)}); not run twice"
            )
            continue
        rungs.append(Rung(eta, 0.0, share))
    return tuple(rungs), notes


def eta_for_share(original, X: np.ndarray, share: float) -> float:
    """The largest eta, rounded down to two significant digits, whose confidence region
    holds at least ``share`` of the rows ``X`` (original margin > c_o, as
    :func:`pace_cert.region.masks.margin_mask` counts; the rows lie in the domain
    inferred from them). 0 for a share of 1 (the global region)."""
    from pace_cert.region.margins import region_margin
    from pace_cert.region.masks import margin_mask

    if share >= 1 or len(X) == 0 or original.margin_scale <= 0:
        return 0.0
    S = original.scores(np.asarray(X, np.float32))
    rows, y0 = np.arange(len(S)), np.argmax(S, axis=1)
    other = S.copy()
    other[rows, y0] = -np.inf
    margins = np.sort(S[rows, y0] - other.max(axis=1))[::-1]  # as margin_mask computes
    k = max(1, math.ceil(share * len(X) - 1e-9))
    eta = _round_down(margins[k - 1] / original.margin_scale)

    def holds(e: float) -> bool:
        inside = margin_mask(original, X, region_margin(original, e))
        return float(inside.mean()) >= share

    while eta > 0 and not holds(eta):  # a margin equal to c_o is outside: one step down
        eta = _step_down(eta)
    return eta


def _step_down(v: float, digits: int = 2) -> float:
    """The next two-significant-digit value below ``v`` (itself one), 0 below 1e-12."""
    return _round_down(v * (1 - 1e-9), digits)


def _round_down(v: float, digits: int = 2) -> float:
    """``v`` rounded down to ``digits`` significant digits (0 for v <= 0 or tiny)."""
    if not math.isfinite(v) or v <= 1e-12:
        return 0.0
    q = 10.0 ** (math.floor(math.log10(v)) - digits + 1)
    r = float(f"{math.floor(v / q * (1 + 1e-12)) * q:.{digits}g}")
    return r if r <= v else _round_down(v - q / 2, digits)


def enclosing(rung: Rung, done: list[Rung]) -> list[Rung]:
    """The rungs of ``done`` whose region holds ``rung``'s (itself excluded)."""
    return [r for r in done if r != rung and rung.inside(r)]
