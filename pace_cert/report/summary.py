"""The report's first paragraph, in plain words, for the auditor: what was proved, over
which inputs, how many of the data rows that covers, how the run ended (its time limit,
or the signal that stopped it) and how far the compressed model may be from minimal:
the page's first section (``sections.py`` lists them)."""

from __future__ import annotations

from pace_cert.cert.certificate import Certificate
from pace_cert.cert.words import minimal_pruning, pruning_of
from pace_cert.report.plots import esc


def summary_paragraph(cert: Certificate) -> str:
    """The first paragraph, in plain words: what was proved, over which inputs, how many
    of the data rows that covers, whether the time limit cut the run, and how far the
    compressed model may be from the smallest possible."""
    s, r = cert.summary, cert.region
    if s.certified:
        what = (
            f"<b>What was proved.</b> The compressed model ({s.trees_after} trees, down from "
            f"{s.trees_before}) gives the same label as the original model for every input "
            "in the region described next, as onnxruntime computes both; the solver CP-SAT "
            f"proved it for each of the {len(cert.pairs)} ordered pairs of labels."
        )
    else:
        what = (
            "<b>What was proved.</b> Nothing smaller: the run certified no model with fewer "
            f"than the original's {s.trees_before} trees, so the original was written "
            "unchanged and the certificate claims no compression."
        )
    where = (
        " <b>Over which inputs.</b> The region holds the inputs "
        + _domain_words(cert)
        + f" on which the original is confident: its score for its label beats every other "
        f"class by more than eta = {r.eta:g} ({esc(r.eta_units)})"
    )
    if r.delta_abs is not None:
        where += (
            f", and which are typical: at least as typical as the {1 - r.delta:.0%} most "
            f"typical training rows (delta = {r.delta:g}, by an isolation forest)"
        )
    where += ". Inputs with a missing value (NaN) are outside it."
    data = ""
    if r.coverage is not None and r.coverage.rows:
        c = r.coverage
        data = (
            f" <b>The data.</b> Of the {c.rows} rows of the training data, {c.inside} "
            f"({c.inside / c.rows:.0%}) lie inside the region; on the other "
            f"{c.rows - c.inside} the two models may differ"
            + (f" ({c.missing} of them have missing values)" if c.missing else "")
            + "."
        )
    from pace_cert.estimate import recorded_room_line

    room = recorded_room_line(cert)
    if room is not None:
        data += f" <b>What pruning can buy.</b> {esc(room[0].upper() + room[1:])}."
    return (
        "<p id='summary' class='summary'>"
        + what
        + where
        + data
        + _time_limit_words(cert)
        + _minimal_words(cert)
        + "</p>"
    )


def _domain_words(cert: Certificate) -> str:
    dom = cert.region.domain
    kept = []
    if dom.get("binary_features"):
        kept.append(f"{len(dom['binary_features'])} yes/no features at 0 or 1")
    if dom.get("integer_features"):
        kept.append(f"{len(dom['integer_features'])} count-like features at whole numbers")
    words = "of every float32 value" + (f" ({', '.join(kept)})" if kept else "")
    if dom.get("bounds"):
        words += " within the training data's minimum and maximum of each feature"
    return words


def _time_limit_words(cert: Certificate) -> str:
    """Whether the time limit cut the run (only when the certificate says)."""
    reached = getattr(cert.summary, "time_limit_reached", None)
    if reached is None:
        return ""
    signal = interrupted_by(cert.summary.stop_reason)
    if signal is not None:
        return (
            f" <b>Stopped.</b> {signal} ended the run before it ended on its own: a longer "
            "run may certify a smaller model."
        )
    if reached:
        return (
            " <b>Time limit.</b> The run's time limit was reached: a longer run may certify "
            "a smaller model."
        )
    return " <b>Time limit.</b> The run ended on its own, before its time limit."


def interrupted_by(stop_reason: str | None) -> str | None:
    """The signal that ended the run ("SIGTERM", "SIGINT") when the certificate's
    ``stop_reason`` says the process guard stopped it at one (None otherwise)."""
    for signal in ("SIGTERM", "SIGINT"):
        if stop_reason and f": {signal} ended the run" in stop_reason:
            return signal
    return None


def _minimal_words(cert: Certificate) -> str:
    s = cert.summary
    if not s.certified:
        return ""
    return " <b>How far from minimal.</b> " + _size_bound_words(s) + _pruning_words(cert)


def _size_bound_words(s) -> str:
    b = s.size_lower_bound
    if b is not None and b >= s.trees_after:
        return f"It is minimal: no faithful model of fewer than {b} trees of the same depth exists."
    if b is None or b <= 1:
        return "Not known: no useful lower bound on the size of any faithful model was proved."
    return (
        f"No faithful model of fewer than {b} trees of the same depth exists, so the "
        f"{s.trees_after} certified trees are at most {s.trees_after - b} more than the "
        "smallest possible."
    )


def _pruning_words(cert: Certificate) -> str:
    """The pruning bound in words (verify re-checks it); "minimal among prunings" only
    for a pruning (every learner one original tree) of exactly the bound's size."""
    s = cert.summary
    pb = s.pruning_bound
    if pb is None:
        return ""
    if minimal_pruning(cert, pruning_of(cert)):
        return (
            f" Among prunings of the original (keeping some of its trees) it is minimal: "
            f"none with fewer than {pb.value} trees is faithful, a bound verify re-checks."
        )
    if pruning_of(cert) is None:
        return (
            f" No pruning of the original (keeping some of its trees) with fewer than "
            f"{pb.value} trees is faithful, a bound verify re-checks; this model is not a "
            "pruning (it holds new or merged trees), so the bound does not rank it."
        )
    return (
        f" No pruning of the original with fewer than {pb.value} trees is faithful (a bound "
        f"verify re-checks): a pruning could be at most {s.trees_after - pb.value} trees "
        "smaller."
    )
