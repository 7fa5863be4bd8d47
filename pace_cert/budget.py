"""The documented old path of :mod:`pace_cert.plumbing.budget` (docs/lower-level-api.md)."""

from pace_cert.plumbing.budget import Budget, process_start  # noqa: F401
