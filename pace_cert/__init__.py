"""pace-cert: certified pruning and compression of tree ensembles.

The library in three calls (README, "Python API")::

    import pace_cert

    result = pace_cert.compress(forest, X_train, y_train, eta=0.1, time_limit=60)
    result.predict(X_test)                  # the compressed model's labels (onnxruntime)
    pace_cert.verify(result).verified       # re-proved from the two ONNX files
    result.save("out")                      # what `pace-cert compress --out out` writes

Names load on first use, so ``import pace_cert`` (and the CLI's start-up) stays light;
``__init__.pyi`` gives type checkers their types.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = [
    "CertifiedModel",
    "FrontierResult",
    "InputError",
    "ResultSummary",
    "VerifyReport",
    "__version__",
    "compress",
    "frontier",
    "verify",
]

#: public name -> the module defining it
_HOMES = {
    "compress": "pace_cert.api",
    "verify": "pace_cert.api",
    "FrontierResult": "pace_cert.api",
    "CertifiedModel": "pace_cert.certified",
    "ResultSummary": "pace_cert.certified",
    "InputError": "pace_cert.errors",
    "VerifyReport": "pace_cert.cert.verify_report",
}


def __getattr__(name: str) -> Any:
    if name == "frontier":  # the package pace_cert.frontier, callable as pace_cert.api.frontier
        import importlib

        return importlib.import_module("pace_cert.frontier")
    if name in _HOMES:
        import importlib

        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pace_cert' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
