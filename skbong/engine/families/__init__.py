"""Registry of the Gaussian variational families."""

from .base import Family
from .diag import DIAG, DIAG_MOMENT
from .dlr import DLR, DLRState
from .full import FULL, FULL_MOMENT
from .gaussian import MeanCov

FAMILIES = {
    "full": FULL,
    "full_moment": FULL_MOMENT,
    "diag": DIAG,
    "diag_moment": DIAG_MOMENT,
    "dlr": DLR,
}

__all__ = ["FAMILIES", "Family", "MeanCov", "DLRState"]
