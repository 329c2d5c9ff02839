"""The BONG engine: pure JAX functions over NamedTuple states.

The paper's rule × estimator × family product is assembled from orthogonal parts. What
the online filter owns is in :mod:`.filter` (the update rules, the gradient and
curvature estimators, the noise learned online, the stream program); what the batch
solvers own is in :mod:`.solvers`; both build on what they share: :mod:`.models`,
:mod:`.likelihoods`, :mod:`.families`, :mod:`.outputs`, :mod:`.predictive`,
:mod:`.linalg` and the compiled programs (:mod:`.program`). Static choices live in
:class:`Config` (:mod:`.config`, which also checks the names), real-valued
hyperparameters in :class:`Hyper`.
"""

import jax
import jax.numpy as jnp
import numpy as np

from .config import Config, check_names
from .families import FAMILIES, DLRState, MeanCov
from .filter.curvature import ESTIMATORS
from .filter.noise import NoiseState
from .filter.rules import RULES, update
from .filter.stream import (
    CHUNK_SIZES,
    OUTLIER_Z,
    buffer_size,
    chunk_plan,
    run_bank,
    run_stream,
    run_stream_checked,
    stream,
    stream_step,
)
from .likelihoods import LIKELIHOODS
from .models import MLP, UserModel, seeded_init
from .predictive import (
    PREDICTIVES,
    draw_parameters,
    output_samples,
    predict_log_proba,
    predict_moments,
    sample_outputs,
)
from .program import program
from .types import Curv, Hyper

# The names of each kind, read from its registry (the only source of names).
RULE_NAMES = tuple(RULES)
HESSIAN_NAMES = tuple(ESTIMATORS)
FAMILY_NAMES = tuple(FAMILIES)
LIKELIHOOD_NAMES = tuple(LIKELIHOODS)


def init_state(config, mean0, prior_var):
    """The prior N(μ₀, σ₀² I) as a state of ``config.family``."""
    return config.impl.family.init(mean0, prior_var, config.rank)


@program(static_argnames=("config", "dtype"))
def prior(config, seed, prior_var, dtype):
    """Prior mean θ₀ (the model's initialiser from ``seed``) and the prior state, in one program.

    Parameters
    ----------
    config : Config
        Static configuration.
    seed : int
        Seed of the network initialiser (``fold_in(PRNGKey(seed), 0)``).
    prior_var : array (P,) or (K, P)
        The prior variances; (K, P) for a bank of K filters, whose states come back
        stacked on a leading axis, in one program call.
    dtype : numpy dtype
        Working dtype.

    Returns
    -------
    mean0 : array (P,)
        Prior mean.
    state : family state
        The prior belief (each array with a leading K for a bank).
    """
    mean0 = seeded_init(config.model, seed, dtype)
    prior_var = jnp.asarray(prior_var, dtype)
    if prior_var.ndim == 2:  # a bank: one prior per row of variances, stacked (K, ...)
        return mean0, jax.vmap(lambda v: init_state(config, mean0, v))(prior_var)
    return mean0, init_state(config, mean0, prior_var)


@program(static_argnames=("config",))
def marginal_var(config, state):
    """Posterior marginal variances diag(Σ), shape (P,)."""
    return config.impl.family.marginal_var(state)


def make_key(seed, purpose):
    """A PRNG key for stream ``purpose`` (a small int) of the learner seeded with ``seed``.

    With JAX's default threefry implementation a key is any pair of 32-bit words, and
    threefry hashes it, so the raw key ``(purpose, seed)`` is built on the host: distinct
    for every (seed, purpose) pair, and no program to compile on a cold first fit.
    Other implementations get ``fold_in(PRNGKey(seed), purpose)``.
    """
    if jax.config.jax_default_prng_impl == "threefry2x32":
        return np.array([purpose, seed], dtype=np.uint32)
    return jax.random.fold_in(jax.random.PRNGKey(seed), purpose)


__all__ = [
    "Config",
    "Curv",
    "DLRState",
    "ESTIMATORS",
    "FAMILIES",
    "FAMILY_NAMES",
    "HESSIAN_NAMES",
    "Hyper",
    "LIKELIHOODS",
    "LIKELIHOOD_NAMES",
    "MLP",
    "MeanCov",
    "NoiseState",
    "PREDICTIVES",
    "RULES",
    "RULE_NAMES",
    "UserModel",
    "check_names",
    "init_state",
    "make_key",
    "marginal_var",
    "prior",
    "program",
    "draw_parameters",
    "output_samples",
    "predict_log_proba",
    "predict_moments",
    "run_bank",
    "run_stream",
    "run_stream_checked",
    "sample_outputs",
    "stream",
    "stream_step",
    "OUTLIER_Z",
    "CHUNK_SIZES",
    "chunk_plan",
    "buffer_size",
    "update",
]
