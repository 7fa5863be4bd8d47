"""The certified size-guarantee frontier (``pace-cert frontier``): one compress run per
rung of a ladder of nested regions, sharing the inputs, one plausibility forest, one
time budget and (local backend) the models certified on enclosing rungs.

* :mod:`.ladder`: the rungs as data (the default ladder, ``--eta``/``--delta`` lists);
* :mod:`.run`: the use case (:func:`run_frontier`);
* :mod:`.rung`: one rung's compress run and its measurement on the rows;
* :mod:`.schedule`: the local rungs' time: shares, hard stops, the second pass;
* :mod:`.isolate`: a rung in a forked process of its own (its hard stop);
* :mod:`.state`: every rung's status at any moment, and the guard's last words;
* :mod:`.record`: ``frontier.json`` (pydantic models, schema) and its table;
* :mod:`.report`: the HTML page of the frontier.
"""

import sys
import types
from typing import Any


class _CallablePackage(types.ModuleType):
    """``pace_cert.frontier`` is this package and the library's entry point alike: once
    the package is imported it is the attribute ``pace_cert.frontier``, so calling it
    calls :func:`pace_cert.api.frontier`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from pace_cert.api import frontier

        return frontier(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
