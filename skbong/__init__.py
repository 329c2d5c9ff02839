"""skbong: scikit-learn-compatible online Bayesian estimators.

``BongRegressor`` and ``BongClassifier`` learn from a stream one row (or
mini-batch) at a time with the Bayesian Online Natural Gradient family of
Jones, Chang & Murphy (2024) and its relatives (BOG, BLR, BBB), and report how
uncertain they are. The numerical engine is :mod:`skbong.engine` (pure JAX).
"""

import importlib

# The public names and the modules that define them, imported on first use (PEP 562):
# ``import skbong`` loads neither JAX nor scikit-learn, which the estimators need.
_SOURCES = {
    "BongClassifier": "._online.classifier",
    "BongPoissonRegressor": "._online.poisson",
    "BongRegressor": "._online.regressor",
    "DivergenceWarning": ".exceptions",
    "NonFiniteUpdateError": ".exceptions",
    "OutliersWarning": ".exceptions",
    "SkippedRowsWarning": ".exceptions",
    "StreamingPipeline": ".pipeline",
    "VariationalClassifier": "._batch.classifier",
    "VariationalRegressor": "._batch.regressor",
    "enable_compilation_cache": ".engine.cache",
    "expected_failed_checks": "._compat",
    "fit_partitions": ".distributed",
    "make_streaming_pipeline": ".pipeline",
    "merge_posteriors": "._merging.merge",
    "set_compilation_cache": ".engine.cache",
}

__version__ = "0.1.0"

__all__ = [
    "BongClassifier",
    "BongPoissonRegressor",
    "BongRegressor",
    "DivergenceWarning",
    "NonFiniteUpdateError",
    "OutliersWarning",
    "SkippedRowsWarning",
    "StreamingPipeline",
    "VariationalClassifier",
    "VariationalRegressor",
    "enable_compilation_cache",
    "expected_failed_checks",
    "fit_partitions",
    "make_streaming_pipeline",
    "merge_posteriors",
    "set_compilation_cache",
    "__version__",
]

_MODULES = ("adapters", "distributed", "engine", "exceptions", "metrics", "pipeline", "plotting")


def __getattr__(name):
    if name in _SOURCES:
        value = getattr(importlib.import_module(_SOURCES[name], __name__), name)
        globals()[name] = value
        return value
    if name in _MODULES:  # ``skbong.engine`` etc. without importing them first
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'skbong' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
