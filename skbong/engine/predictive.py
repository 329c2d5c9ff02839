"""Posterior predictive distributions (section 5, appendix B.2).

* ``plugin``: p(y | f(x, μ)).
* ``linmc``: θₛ ~ q and fₛ = f(x, μ) + J (θₛ − μ); for Gaussian regression the
  closed form N(f(x, μ), J Σ Jᵀ + R).
* ``mc``: fₛ = f(x, θₛ).

One set of S parameter samples is drawn per call from ``key`` and shared across all
rows, so results do not depend on row order or on which rows are asked for.
Class probabilities are averaged over samples in log space (log-sum-exp), never
the logits.
"""

from functools import partial

import jax
import jax.numpy as jnp

from .curvature import output_jacobians
from .families import FAMILIES

PREDICTIVES = ("plugin", "linmc", "mc")


def output_samples(config, state, x, key, kind, n_samples):
    """Model outputs under the predictive ``kind``: shape (S, n, C) (S = 1 for plugin)."""
    if kind not in PREDICTIVES:
        raise ValueError(f"predictive={kind!r} is not one of {PREDICTIVES}")
    apply = config.model.apply
    if kind == "plugin":
        return apply(state.mean, x)[None]
    thetas = FAMILIES[config.family].sample(state, key, n_samples)
    if kind == "mc":
        return jax.vmap(apply, in_axes=(0, None))(thetas, x)
    f_mean, push = jax.linearize(lambda th: apply(th, x), state.mean)
    return f_mean[None] + jax.vmap(push)(thetas - state.mean)


sample_outputs = jax.jit(output_samples, static_argnames=("config", "kind", "n_samples"))
"""Jitted :func:`output_samples`."""


@partial(jax.jit, static_argnames=("config", "kind", "n_samples"))
def predict_moments(config, state, hyper, x, key, kind, n_samples):
    """Mean and variance of y for the Gaussian and Poisson likelihoods, each (n, C).

    The Gaussian variance includes the observation noise R.
    """
    if config.likelihood == "gaussian" and kind == "linmc":
        _, jac = output_jacobians(config, state.mean, x)
        out_cov = FAMILIES[config.family].output_cov(state, jac)
        var = jnp.diagonal(out_cov, axis1=1, axis2=2)
        return config.model.apply(state.mean, x), var + hyper.obs_var
    f = output_samples(config, state, x, key, kind, n_samples)
    if config.likelihood == "gaussian":
        return jnp.mean(f, axis=0), jnp.var(f, axis=0) + hyper.obs_var
    if config.likelihood == "poisson":
        rate = jnp.exp(f)
        return jnp.mean(rate, axis=0), jnp.mean(rate, axis=0) + jnp.var(rate, axis=0)
    raise ValueError(f"predict_moments does not apply to likelihood={config.likelihood!r}")


@partial(jax.jit, static_argnames=("config", "kind", "n_samples"))
def predict_moments_grad(config, state, hyper, x, key, kind, n_samples):
    """:func:`predict_moments` and its exact input gradients (the same arguments).

    Each row is differentiated on its own (forward mode, one tangent per feature), with
    the parameter samples of ``mc`` drawn from ``key`` as in :func:`predict_moments`,
    so the values are those of :func:`predict_moments` on the same rows.

    Returns
    -------
    mean, var : arrays (n, C)
        As :func:`predict_moments`.
    mean_grad, var_grad : arrays (n, C, D)
        ∂ mean / ∂ x and ∂ var / ∂ x of each row.
    """

    def one(xi):
        mean, var = predict_moments(config, state, hyper, xi[None], key, kind, n_samples)
        return (mean[0], var[0]), (mean[0], var[0])

    (mean_grad, var_grad), (mean, var) = jax.vmap(jax.jacfwd(one, has_aux=True))(x)
    return mean, var, mean_grad, var_grad


@partial(jax.jit, static_argnames=("config", "kind", "n_samples"))
def predict_log_proba(config, state, x, key, kind, n_samples):
    """Log class probabilities (n, K) for the Bernoulli (K = 2) and categorical likelihoods."""
    f = output_samples(config, state, x, key, kind, n_samples)
    if config.likelihood == "bernoulli":
        logp = jnp.concatenate([jax.nn.log_sigmoid(-f), jax.nn.log_sigmoid(f)], axis=-1)
    elif config.likelihood == "categorical":
        logp = jax.nn.log_softmax(f, axis=-1)
    else:
        raise ValueError(f"predict_log_proba does not apply to likelihood={config.likelihood!r}")
    return jax.nn.logsumexp(logp, axis=0) - jnp.log(jnp.asarray(f.shape[0], f.dtype))
