"""skbong: scikit-learn-compatible online Bayesian estimators.

``BongRegressor`` and ``BongClassifier`` learn from a stream one row (or
mini-batch) at a time with the Bayesian Online Natural Gradient family of
Jones, Chang & Murphy (2024) and its relatives (BOG, BLR, BBB), and report how
uncertain they are. The numerical engine is :mod:`skbong.engine` (pure JAX).
"""

from ._classifier import BongClassifier
from ._compat import expected_failed_checks
from ._merge import merge_posteriors
from ._poisson import BongPoissonRegressor
from ._regressor import BongRegressor
from ._variational import VariationalClassifier, VariationalRegressor
from .distributed import fit_partitions
from .exceptions import NonFiniteUpdateError, SkippedRowsWarning
from .pipeline import StreamingPipeline, make_streaming_pipeline

__version__ = "0.1.0"

__all__ = [
    "BongClassifier",
    "BongPoissonRegressor",
    "BongRegressor",
    "NonFiniteUpdateError",
    "SkippedRowsWarning",
    "StreamingPipeline",
    "VariationalClassifier",
    "VariationalRegressor",
    "expected_failed_checks",
    "fit_partitions",
    "make_streaming_pipeline",
    "merge_posteriors",
    "__version__",
]
