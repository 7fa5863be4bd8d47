"""The frontier's plan: a ladder of nested regions ("rungs"), as data.

A rung is a region (eta, delta). Region A lies inside region B when A's eta and delta
are both at least B's (the same original, the same plausibility forest: a higher margin
threshold and a higher plausibility quantile only remove inputs). Rungs run in ladder
order, so every rung comes after each rung whose region holds it: the rungs sorted by
(eta, delta) ascending, from the largest region to the smallest.

* default: global (0, 0); eta 0.1; eta 0.1 + delta 0.1; eta 0.2, 0.3, 0.5 + delta 0.1.
* ``--eta LIST`` / ``--delta LIST``: every (eta, delta) pair of the two lists (a list
  not given is ``0``), sorted as above; each value once per list.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: rungs at most: each gets a share of the one time budget
MAX_RUNGS = 24


@dataclass(frozen=True, order=True)
class Rung:
    """One region of the ladder (eta in the model's margin units, delta a share of
    the training rows)."""

    eta: float
    delta: float

    @property
    def name(self) -> str:
        """The rung's directory name: ``global``, ``eta0.1``, ``delta0.1``,
        ``eta0.1-delta0.1``; each value as :func:`number` writes it, so two rungs
        have the same name only when they are the same rung."""
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


DEFAULT_LADDER: tuple[Rung, ...] = (
    Rung(0.0, 0.0),
    Rung(0.1, 0.0),
    Rung(0.1, 0.1),
    Rung(0.2, 0.1),
    Rung(0.3, 0.1),
    Rung(0.5, 0.1),
)


class LadderError(ValueError):
    """A bad ``--eta`` / ``--delta`` list: ``option`` names it."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"{option}: {problem}")
        self.option = option


def parse_list(text: str, option: str, upper: float | None = None) -> tuple[float, ...]:
    """Comma-separated numbers, each finite, >= 0 (and < ``upper`` when given), each
    once; LadderError otherwise."""
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
        if upper is not None and v >= upper:
            raise LadderError(option, f"{item} must be below {upper:g}")
        if v in values:
            raise LadderError(option, f"{item} is given twice")
        values.append(v)
    return tuple(values)


def ladder(eta: str | None = None, delta: str | None = None) -> tuple[Rung, ...]:
    """The rungs to certify: the default ladder when neither list is given, else every
    (eta, delta) pair of the lists (a missing list is ``0``) from the largest region
    to the smallest. LadderError for a bad list or more than MAX_RUNGS rungs."""
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


def enclosing(rung: Rung, done: list[Rung]) -> list[Rung]:
    """The rungs of ``done`` whose region holds ``rung``'s (itself excluded)."""
    return [r for r in done if r != rung and rung.inside(r)]
