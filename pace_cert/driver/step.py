"""What a plan is made of: steps with a name, a condition and a run.

A step's ``run(state, budget)`` yields :class:`~pace_cert.driver.result.Offer`s; the
runner offers each to the incumbent at once (so the rest of the step sees it) and
stops the plan when the incumbent is proved minimal. ``share`` names the tuning field
holding the fraction of the time left that the step may spend (None: all of it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from pace_cert.driver.result import Offer
from pace_cert.driver.state import RunState
from pace_cert.plumbing.budget import Budget


class Step(Protocol):
    name: str

    def applies(self, state: RunState) -> bool:
        """Whether the step runs, given what the steps before it left."""

    def share(self, state: RunState) -> float:
        """The fraction of the time left that the step may spend."""

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        """Do the step's work within ``budget``, yielding results to offer."""


class BaseStep:
    """Defaults: the step always applies and may spend all the time left.
    ``bookkeeping``: a side step (bounds) that never decides why a run ends."""

    name = "step"
    bookkeeping = False

    def applies(self, state: RunState) -> bool:
        return True

    def share(self, state: RunState) -> float:
        return 1.0

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        raise NotImplementedError
