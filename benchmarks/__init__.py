"""pace-cert's benchmarks: the paper's profiles (``python -m benchmarks.harness``), the
Result-1 oracle comparison and the scaling study beside it, the realistic suite, the
born-again and frontier benchmarks. Finished studies' scripts live in history (each
result file under ``results/studies/`` names the commit). Run from the repository root;
see benchmarks/README.md."""
