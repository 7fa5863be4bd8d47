"""pace-cert: certified pruning and compression of tree ensembles."""

__version__ = "0.1.0"
