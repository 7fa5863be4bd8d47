"""The separation oracle: CP-SAT proofs per ordered label pair, numpy screening, pair
scheduling; baseline oracles for the paper's comparison."""
