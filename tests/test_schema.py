"""The committed JSON Schema is what the pydantic models generate (no drift)."""

from __future__ import annotations

import json
from pathlib import Path

from pace_cert.cert.certificate import Certificate

SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "certificate.schema.json"


def test_schema_has_not_drifted():
    committed = json.loads(SCHEMA.read_text())
    assert committed == Certificate.model_json_schema(), "run `make schema` and commit"
