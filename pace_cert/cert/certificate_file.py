"""Whether a file given as a certificate is JSON at all, said in one clean line before
pydantic reads it: a CSV or an ONNX file in the certificate's place is named as such,
other text by where its JSON breaks. A missing or unreadable file is left to the
certificate reader (:func:`pace_cert.cert.verify.load_certificate`), which names it."""

from __future__ import annotations

import json
from pathlib import Path

from pace_cert.errors import InputError

#: how many bytes are read to tell what the file is
HEAD_BYTES = 1 << 16


def check_json(path: Path) -> None:
    """InputError naming ``path`` when it is not one JSON object: ``train.csv: is a CSV,
    expected the certificate JSON``, ``... not a valid certificate (invalid JSON at line
    1 column 1: Expecting value)``. Nothing when it is one, or cannot be read."""
    try:
        blob = Path(path).read_bytes()
    except OSError:
        return
    what = _kind(blob[:HEAD_BYTES], Path(path).suffix.lower())
    if what is not None:
        raise InputError(path, f"is {what}, expected the certificate JSON")
    try:
        value = json.loads(blob)
    except UnicodeDecodeError:
        raise InputError(path, "is not text, expected the certificate JSON") from None
    except json.JSONDecodeError as e:
        where = f"line {e.lineno} column {e.colno}"
        raise InputError(
            path, f"not a valid certificate (invalid JSON at {where}: {e.msg})"
        ) from None
    if not isinstance(value, dict):
        raise InputError(
            path, f"not a valid certificate (a JSON {type(value).__name__}, expected an object)"
        )


def _kind(head: bytes, suffix: str) -> str | None:
    """What a file that is clearly no JSON is (None: it may be JSON)."""
    text = head.lstrip()
    if text.startswith((b"{", b"[")):
        return None
    if suffix == ".onnx":
        return "an ONNX model"
    if suffix in (".csv", ".tsv") or b"," in text.split(b"\n", 1)[0]:
        return "a CSV"
    return None
