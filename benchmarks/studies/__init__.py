"""One-off studies, each run as ``python -m benchmarks.studies.NAME`` from the repository
root; their results are in ``benchmarks/results/studies/`` (``results/INDEX.md``)."""
