"""Types of the names :mod:`pace_cert` loads on first use (``__init__.py``)."""

from pace_cert.api import FrontierResult as FrontierResult
from pace_cert.api import compress as compress
from pace_cert.api import frontier as frontier
from pace_cert.api import verify as verify
from pace_cert.cert.verify_report import VerifyReport as VerifyReport
from pace_cert.certified import CertifiedModel as CertifiedModel
from pace_cert.certified import ResultSummary as ResultSummary
from pace_cert.errors import InputError as InputError

__version__: str
__all__: list[str]
