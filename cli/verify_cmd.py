"""``pace-cert verify``: re-prove a certificate from the two ONNX files and print every
claim, checked or stated."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated, Any

import typer

from pace_cert.cli.common import (
    BackendOpt,
    DebugOpt,
    JsonOpt,
    RayAddressOpt,
    ThreadsOpt,
    domain_line,
    print_json,
    run_command,
)
from pace_cert.cli.compress_cmd import HARD_LIMIT_FACTOR


def verify(
    original: Annotated[Path, typer.Argument(help="The original ONNX model.")],
    compressed: Annotated[Path, typer.Argument(help="The compressed ONNX model.")],
    certificate: Annotated[Path, typer.Argument(help="certificate.json written by compress.")],
    data: Annotated[
        Path | None, typer.Option(help="Also replay these rows (CSV as for compress).")
    ] = None,
    exhaustive: Annotated[
        bool,
        typer.Option(help="Second backend: enumerate every cell (small models only)."),
    ] = False,
    probe: Annotated[
        int,
        typer.Option(
            help="With --data: also replay N random points near the data rows (a row with "
            "1-4 features taken from other rows) through onnxruntime; one inside the region "
            "where the models disagree refutes. A solver-free check, not a proof."
        ),
    ] = 0,
    threads: ThreadsOpt = 2,
    time_limit: Annotated[float | None, typer.Option(help="Seconds for the proof.")] = None,
    backend: BackendOpt = "local",
    ray_address: RayAddressOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Re-prove CERTIFICATE independently from the two ONNX files."""

    def body() -> int:
        from pace_cert.plumbing.guard import block_signals

        old_mask = block_signals()  # before the imports that start threads (see guard.py)
        try:
            return _verify()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)

    def _verify() -> int:
        from pace_cert.cert.certificate_file import check_json
        from pace_cert.cert.verify import VerifyReport, run_verify
        from pace_cert.plumbing.budget import process_start
        from pace_cert.plumbing.guard import GuardStop, NoFiles, ProcessGuard

        start = process_start()
        hard = None if time_limit is None else start + HARD_LIMIT_FACTOR * time_limit + 2.0

        def last_words(stop: GuardStop) -> int:
            """Cut short, verify has verified nothing: it says so, on stdout as always
            (exit 143 / 130 at a signal, 2 at the hard deadline: inconclusive)."""
            code = stop.signal_exit_code or 2
            why = f"{stop.cause} ended verify before it finished: nothing was verified"
            if as_json:
                print_json(VerifyReport(code, "stopped", why).to_json())
            else:
                typer.echo(f"stopped: {why} ({stop.at - start:.0f} s)")
            return code

        with ProcessGuard(NoFiles(), hard, last_words):
            # a CSV or other non-JSON file named in one line; under the guard (a file
            # that never arrives, e.g. a FIFO, is cut short by a signal like the rest)
            check_json(certificate)
            rep = run_verify(
                original,
                compressed,
                certificate,
                threads=threads,
                time_limit=time_limit,
                exhaustive=exhaustive,
                data_path=data,
                probe=probe,
                backend=backend,
                ray_address=ray_address,
            )
        if as_json:
            print_json(rep.to_json())
        else:
            typer.echo(_verify_text(rep))
        return rep.exit_code

    run_command(body, debug)


#: how verify's text output names a claim (else its key, spelled out)
_TOPICS = {
    "size_lower_bound.witnesses": "size lower bound",
    "size_lower_bound.synthesis": "size lower bound",
    "size_lower_bound.pruning": "pruning lower bound",
    "minimal_pruning": "minimal among prunings",
    "history.points": "history",
    "history.completeness": "history",
    "history.compressed_labels": "history",
    "certificate": "certificate",
    "deployment.structure": "deployment size",
    "deployment.comparisons": "comparisons per prediction",
    "deployment.latency": "latency",
}


def _verify_text(rep: Any) -> str:
    """verify's report for people: the verdict, the certificate's own status, what was
    proved over, then every claim of the certificate, ``checked:`` or ``stated:``."""
    lines = [f"{rep.status}: {rep.message}"]
    if rep.certificate_status is not None:
        what = {
            "certified": "certified (it claims the compressed model is faithful in the region)",
            "inconclusive": "inconclusive (it claims no compression: compress certified "
            "nothing smaller and wrote the original unchanged)",
        }[rep.certificate_status]
        same = "; the two files are identical" if rep.identical else ""
        lines.append(f"certificate: {what}{same}")
    if rep.domain is not None:
        box = "the bounds the certificate states (--data counts rows outside them)"
        lines.append(f"domain: {domain_line(rep.domain, box, rep.feature_names)}")
    if rep.region is not None:
        lines.append(f"region: {_region_line(rep.region)}")
    if rep.data_rows is not None:
        lines.append(
            f"data: {rep.data_rows} rows replayed, {rep.data_inside} inside the region"
            + (
                f"; {rep.data_outside_domain} outside the certified domain, not covered"
                if rep.data_outside_domain
                else ""
            )
            + (
                f"; onnxruntime labels of the two models agree on {rep.data_agreement:.2%}"
                if rep.data_agreement is not None
                else ""
            )
        )
        lines += _missing_lines(rep)
    if rep.probe_points is not None:
        lines.append(
            f"probe: {rep.probe_points} random points near the data replayed, "
            f"{rep.probe_inside} inside the region"
        )
    for c in rep.claims:
        topic = _TOPICS.get(c["key"], c["key"].replace("_", " ").replace(".", " "))
        text = c["text"].removeprefix(f"{topic}: ")
        lines.append(f"{c['status']}: {topic}: {text}")
    if rep.counterexample:
        ce = rep.counterexample
        lines.append(
            f"counterexample: x = {ce['point']}\n"
            f"  original label {ce['original_label']!r}, "
            f"compressed label {ce['compressed_label']!r}"
        )
    return "\n".join(lines)


def _region_line(reg: dict) -> str:
    """One line stating the region the proof covers, as verify rebuilt it."""
    eta = f"eta {reg['eta']:g}, {reg['eta_units']}"
    conf = f"original's margin > {reg['margin_threshold']:.6g} ({eta})"
    if reg["delta_abs"] is None:
        return conf + "; no plausibility bound (delta 0)"
    from pace_cert.cert.words import plausibility_words

    words = plausibility_words(reg["delta_abs"], reg["delta"])
    return conf + f"; plausibility (delta {reg['delta']:g}) {words}"


def _missing_lines(rep: Any) -> list[str]:
    """The rows of --data with missing values: outside every proof, and how many of
    them the compressed model labels differently."""
    from pace_cert.cert.coverage import missing_changes_line

    if not rep.data_missing:
        return []
    return [
        f"{rep.data_missing} rows with missing values: outside every proof",
        missing_changes_line(rep.data_missing_changed, rep.data_missing),
    ]
