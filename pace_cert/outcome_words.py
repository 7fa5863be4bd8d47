"""How a compress run ended, in words: why the original came back unchanged, what to
try, and how the run stopped. ``pace-cert compress`` prints these lines and the
library's :class:`~pace_cert.certified.CertifiedModel` shows them: one source for both.

The functions read a :class:`~pace_cert.app.CompressOutcome` (``certificate``,
``exit_code``, ``found``, ``timed_out``, ``stop``) and what the run was asked
(``time_limit``, ``eta``, ``delta``, ``mode``, ``coverage``: a
:class:`~pace_cert.settings.CompressConfig`, or :meth:`Asked.of` a certificate).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pace_cert.app import CompressOutcome
    from pace_cert.cert.certificate import Certificate
    from pace_cert.estimate import Estimate


#: what can end a run besides its time limit, as stop reasons name it
SIGNALS = ("SIGTERM", "SIGINT", "KeyboardInterrupt")


@dataclass(frozen=True)
class Asked:
    """What a run was asked, as the words need it: the time limit in seconds (None:
    none, or not known), eta, delta, the mode and ``--coverage`` (in %; None: eta was
    given)."""

    time_limit: float | None
    eta: float
    delta: float
    mode: str
    coverage: float | None = None

    @classmethod
    def of(cls, cert: Certificate, time_limit: float | None = None) -> Asked:
        """From a certificate (which does not record the run's time limit)."""
        reg = cert.region
        return cls(time_limit, reg.eta, reg.delta, cert.summary.mode, reg.coverage_asked)


def asked_coverage_lines(cert: Certificate) -> list[str]:
    """:func:`asked_coverage_line` from a certificate (none when eta was given, or the
    coverage is not recorded): the rows held by margin are those inside the region or
    left out by the plausibility bound only."""
    reg = cert.region
    cov = reg.coverage
    if reg.coverage_asked is None or cov is None:
        return []
    held, rows = cov.inside + cov.implausible, cov.rows - cov.missing
    from pace_cert.cert.words import asked_coverage_line

    return [asked_coverage_line(reg.coverage_asked, reg.eta, reg.eta_units, held, rows)]


def outcome_of(
    cert: Certificate, found: int | None = None, estimate: Estimate | None = None
) -> CompressOutcome:
    """The outcome a final certificate states (its stop reason and whether the time
    limit ended the run), for a result read back from its files."""
    from pace_cert.app import CompressOutcome
    from pace_cert.driver.result import StopReason

    s = cert.summary
    stop = None
    if s.stop_reason:
        step, _, reason = s.stop_reason.partition(": ")
        said = (w for w in SIGNALS if reason.removeprefix("a ").startswith(f"{w} ended"))
        stop = StopReason(step, reason, bool(s.time_limit_reached), next(said, None))
    return CompressOutcome(
        0 if s.certified else 2,
        s.status,
        Path(),
        cert,
        found=s.trees_after if s.certified else found,
        timed_out=bool(s.time_limit_reached),
        stop=stop,
        estimate=estimate,
    )


def proved_minimal(cert: Certificate) -> bool:
    """Whether the size lower bound proves the result minimal: no faithful model of
    fewer trees (of the original's depth) exists in the region, so no longer run can
    give a smaller one. Exit 2: the bound reaches the original's size; a certified
    ensemble (not mode tree, whose bound is about prunings): its own size."""
    s = cert.summary
    if s.size_lower_bound is None:
        return False
    if not s.certified:
        return s.size_lower_bound >= s.trees_before
    return s.single_tree is None and s.size_lower_bound >= s.trees_after


def _limit(asked: Any) -> str:
    return "the time limit" + ("" if asked.time_limit is None else f" ({asked.time_limit:g} s)")


def why_unchanged(res: CompressOutcome, asked: Any) -> str:
    """Why nothing smaller than the original was certified (exit 2), one clause."""
    s = res.certificate.summary
    if proved_minimal(res.certificate):
        return (
            f"no faithful model of fewer than {s.size_lower_bound} trees exists in this "
            "region (proved): only a smaller region can give a smaller model"
        )
    if res.found is not None:
        return (
            f"the smallest model certified has {res.found} trees, not fewer than the "
            f"original's {s.trees_before}"
        )
    if res.timed_out:
        return f"{_limit(asked)} ended the run before a smaller model was certified"
    if res.stop is not None and res.stop.signal:
        return (
            f"{res.stop.signal} ended the run in step {res.stop.step} before a smaller "
            "model was certified"
        )
    if res.stop is not None:
        return f"{res.stop.step} ended the run: {res.stop.reason}"
    return "the run ended without certifying a smaller model in this region"


def what_to_try(res: CompressOutcome, asked: Any) -> str:
    """Concrete flags: a larger eta or delta (a smaller region), a longer limit."""
    reg = res.certificate.region
    tips = []
    if res.timed_out and not proved_minimal(res.certificate):
        if asked.time_limit is None:
            tips.append("a longer --time-limit")
        else:
            tips.append(f"--time-limit {4 * asked.time_limit:g} (a longer run)")
    coverage = getattr(asked, "coverage", None)
    if coverage is not None:  # eta came from --coverage: a smaller share, not --eta
        if coverage > 1:
            tips.append(f"{_smaller_coverage(coverage)} (a region holding fewer training rows)")
        return "; ".join(tips + _delta_and_mode_tips(asked))
    units = "vote share" if reg.eta_units == "vote share" else "raw score"
    eta = 0.1 if asked.eta == 0 else asked.eta * 2
    if units == "vote share" and eta >= 1:
        eta = (1 + asked.eta) / 2
    tips.append(
        f"--eta {eta:.3g} (certify only inputs where the original wins by a {units} margin "
        f"above {eta:.3g})"
    )
    return "; ".join(tips + _delta_and_mode_tips(asked))


def _delta_and_mode_tips(asked: Any) -> list[str]:
    tips = []
    if asked.delta < 0.5:
        delta = 0.05 if asked.delta == 0 else min(0.5, asked.delta * 2)
        tips.append(f"--delta {delta:.3g} (leave out the {delta:.0%} least plausible inputs)")
    if asked.mode == "generate":
        tips.append("--mode pace (prunes first; never larger than prune)")
    return tips


def _smaller_coverage(q: float) -> str:
    """``--coverage`` a step below ``q`` %: the rows left out doubled (99 -> 98,
    95 -> 90), at least one point less, at most halved, never below 1."""
    smaller = max(q - max(1.0, 100.0 - q), q / 2, 1.0)
    return f"--coverage {smaller:.3g}"


def unchanged_lines(res: CompressOutcome, asked: Any) -> list[str]:
    """``why:`` and ``try:`` for a run that certified nothing smaller (none else)."""
    if res.exit_code == 0:
        return []
    return ["why: " + why_unchanged(res, asked), "try: " + what_to_try(res, asked)]


def stop_lines(res: CompressOutcome) -> list[str]:
    """How the run stopped, consistent with the ``why:`` line: the step and its reason
    (unless ``why:`` already is it); when the size is proved minimal and the time limit
    or a signal ended the run too, that it did not matter; else, for a certified
    model, that a longer run may certify a smaller one."""
    stop, proved = res.stop, proved_minimal(res.certificate)
    if stop is not None and proved and (res.timed_out or stop.signal):
        what = (
            "the time limit also ran out" if res.timed_out else f"{stop.signal} also ended the run"
        )
        return [
            f"stopped: the size is proved minimal; {what} in step {stop.step} (nothing "
            "smaller can exist in this region)"
        ]
    lines = []
    if stop is not None and not _why_is_the_stop(res):
        lines.append(f"stopped: {stop.step}: {stop.reason}")
    if res.exit_code == 0 and res.timed_out and not proved:
        lines.append("time limit reached; a longer run may certify a smaller model")
    elif res.exit_code == 0 and stop is not None and stop.signal and not proved:
        lines.append(f"{stop.signal} ended the run; a longer run may certify a smaller model")
    return lines


def _why_is_the_stop(res: CompressOutcome) -> bool:
    """Whether exit 2's ``why:`` line already is the run's stop reason."""
    return (
        res.exit_code == 2
        and not proved_minimal(res.certificate)
        and res.found is None
        and not res.timed_out
    )
