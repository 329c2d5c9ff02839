"""The stream driver: one compiled ``lax.scan`` over mini-batches, predict → update.

Inputs arrive as ``(T, b, ...)`` arrays: T steps of b rows. Rows with zero weight
are padding (a partial last mini-batch); a step whose rows are all padding leaves
the belief untouched, predict step included. An update that produces a non-finite
or invalid state is not applied: the step keeps the previous belief and reports
``ok = False`` (the caller decides whether to raise or skip).

Each step also reports the prequential (predict-then-update) plugin log-likelihood
of its rows under the belief before the update, and the plugin outputs f(x, μ).
"""

from functools import partial

import jax
import jax.numpy as jnp

from .families import FAMILIES
from .likelihoods import LIKELIHOODS
from .rules import update


def _select(flag, new, old):
    return jax.tree_util.tree_map(lambda a, b: jnp.where(flag, a, b), new, old)


def stream_step(config, state, mean0, hyper, x, y, w, key):
    """One predict → update step; returns ``(state, (log_lik, f, ok))``."""
    family = FAMILIES[config.family]
    lik = LIKELIHOODS[config.likelihood]
    active = jnp.any(w > 0)
    predicted = family.predict(state, mean0, hyper) if config.dynamic else state
    f = config.model.apply(predicted.mean, x)
    log_lik = jax.vmap(lik.log_prob, in_axes=(0, 0, None))(y, f, hyper.obs_var)
    new = update(config, predicted, x, y, w, hyper, key)
    ok = family.is_valid(new)
    return _select(active & ok, new, state), (log_lik, f, ok | ~active)


@partial(jax.jit, static_argnames=("config",))
def run_stream(config, state, mean0, hyper, xs, ys, ws, step0, key):
    """Stream T mini-batches through the learner in one compiled scan.

    Parameters
    ----------
    config : Config
        Static configuration.
    state : family state
        Belief before the first step.
    mean0 : array (P,)
        Prior mean (the OU attractor).
    hyper : Hyper
        Traced hyperparameters.
    xs, ys, ws : arrays (T, b, d), (T, b, C), (T, b)
        Inputs, targets and row weights (0 = padding).
    step0 : int
        Global index of the first step; step t uses the key ``fold_in(key, step0 + t)``,
        so any chunking of a stream gives the same draws.
    key : PRNGKey
        Base key of the learner.

    Returns
    -------
    state : family state
        Belief after the last step.
    log_lik : array (T, b)
        Prequential plugin log-likelihood of each row.
    outputs : array (T, b, C)
        Plugin outputs f(x, μ_{t|t−1}) before each update.
    ok : array (T,) of bool
        False where an update was rejected as non-finite or invalid.
    """

    def body(carry, inp):
        x, y, w, t = inp
        return stream_step(config, carry, mean0, hyper, x, y, w, jax.random.fold_in(key, t))

    steps = step0 + jnp.arange(xs.shape[0])
    state, (log_lik, f, ok) = jax.lax.scan(body, state, (xs, ys, ws, steps))
    return state, log_lik, f, ok
