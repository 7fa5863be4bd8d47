"""Time as one object: a wall-clock budget handed to everything that spends time.

A :class:`Budget` is a deadline on ``time.perf_counter()`` (or none: unlimited). It is
created once per run from ``--time-limit``, counted from process start
(:func:`process_start`), and handed down: a phase gets ``budget.share(f)`` (a fraction
of what is left when it starts), a solver call gets ``budget.cap(seconds)`` or reads
``budget.left()``. A child budget never ends after its parent. Nothing reads a global
deadline.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

# the shortest limit handed to a solver: HiGHS and CP-SAT treat 0 as "no limit" or fail
MIN_SOLVER_SECONDS = 0.01


def process_start() -> float:
    """The ``time.perf_counter()`` value at which this process started (Linux: from
    /proc; elsewhere, or if /proc cannot be read, the time this module was imported)."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        started = int(fields[19]) / ticks  # starttime: seconds after boot
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        age = max(0.0, uptime - started)
        return min(time.perf_counter() - age, _IMPORTED)
    except (OSError, ValueError, IndexError):
        return _IMPORTED


_IMPORTED = time.perf_counter()


@dataclass(frozen=True)
class Budget:
    """Seconds to spend, as a deadline on ``time.perf_counter()``; None: unlimited."""

    deadline: float | None = None

    @classmethod
    def unlimited(cls) -> Budget:
        return cls(None)

    @classmethod
    def seconds(cls, limit: float | None, start: float | None = None) -> Budget:
        """``limit`` seconds from ``start`` (a ``perf_counter`` value; default now);
        None: unlimited."""
        if limit is None:
            return cls(None)
        return cls((time.perf_counter() if start is None else start) + float(limit))

    @property
    def limited(self) -> bool:
        return self.deadline is not None

    def left(self) -> float | None:
        """Seconds left (may be negative once expired); None when unlimited."""
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def expired(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def share(self, fraction: float) -> Budget:
        """A child budget of ``fraction`` (0..1) of the time left now."""
        left = self.left()
        if left is None:
            return self
        return Budget(time.perf_counter() + max(0.0, fraction) * max(left, 0.0))

    def cap(self, seconds: float | None) -> Budget:
        """A child budget of at most ``seconds`` from now (None: no cap)."""
        if seconds is None:
            return self
        end = time.perf_counter() + max(0.0, seconds)
        return Budget(end if self.deadline is None else min(end, self.deadline))

    def less(self, seconds: float) -> Budget:
        """This budget ending ``seconds`` earlier (unlimited stays unlimited): time kept
        back for work after the child's end."""
        if self.deadline is None:
            return self
        return Budget(self.deadline - max(0.0, seconds))

    def solver_limit(self, cap: float | None = None) -> float | None:
        """The time limit to hand a solver: the time left, at most ``cap``, at least
        ``MIN_SOLVER_SECONDS``; None when neither bounds it."""
        left = self.left()
        if left is None:
            return cap if cap is None else max(cap, MIN_SOLVER_SECONDS)
        if cap is not None:
            left = min(left, cap)
        return max(left, MIN_SOLVER_SECONDS)
