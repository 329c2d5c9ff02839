"""The BONG engine: pure JAX functions over NamedTuple states.

The paper's rule × estimator × family product is assembled from orthogonal parts:
:mod:`.likelihoods`, :mod:`.models`, :mod:`.curvature` (the gradient / curvature
estimators), :mod:`.families`, :mod:`.rules`, :mod:`.stream` and
:mod:`.predictive`. Static choices live in :class:`Config`, real-valued
hyperparameters in :class:`Hyper`.
"""

from .families import FAMILIES, DLRState, MeanCov
from .likelihoods import LIKELIHOODS
from .models import MLP, UserModel
from .predictive import (
    PREDICTIVES,
    output_samples,
    predict_log_proba,
    predict_moments,
    sample_outputs,
)
from .rules import RULES, update
from .stream import CHUNK_SIZES, chunk_plan, run_stream, stream, stream_step
from .types import (
    FAMILY_NAMES,
    HESSIAN_NAMES,
    LIKELIHOOD_NAMES,
    RULE_NAMES,
    Config,
    Curv,
    Hyper,
)


def init_state(config, mean0, prior_var):
    """The prior N(μ₀, σ₀² I) as a state of ``config.family``."""
    return FAMILIES[config.family].init(mean0, prior_var, config.rank)


__all__ = [
    "Config",
    "Curv",
    "DLRState",
    "FAMILIES",
    "FAMILY_NAMES",
    "HESSIAN_NAMES",
    "Hyper",
    "LIKELIHOODS",
    "LIKELIHOOD_NAMES",
    "MLP",
    "MeanCov",
    "PREDICTIVES",
    "RULES",
    "RULE_NAMES",
    "UserModel",
    "init_state",
    "output_samples",
    "predict_log_proba",
    "predict_moments",
    "run_stream",
    "sample_outputs",
    "stream",
    "stream_step",
    "CHUNK_SIZES",
    "chunk_plan",
    "update",
]
