"""pace-cert's benchmarks: the paper's profiles (``python -m benchmarks.harness``), the
Result-1 oracle comparison and the scaling study beside it, and one-off studies
(``python -m benchmarks.studies.NAME``). Run from the repository root; see README.md."""
