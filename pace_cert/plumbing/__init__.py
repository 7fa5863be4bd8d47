"""Run-time plumbing: the time budget, process guard, freed memory, progress and output files."""
