"""Posterior predictive distributions (section 5, appendix B.2).

* ``plugin``: p(y | f(x, μ)).
* ``linmc``: θₛ ~ q and fₛ = f(x, μ) + J (θₛ − μ); the moments of y in closed form
  where the likelihood gives them for f ~ N(f(x, μ), J Σ Jᵀ) (Gaussian:
  N(f(x, μ), J Σ Jᵀ + R); Poisson: the log-normal moments of the rate).
* ``mc``: fₛ = f(x, θₛ).

One set of S parameter samples is drawn per call from ``key`` and shared across all
rows, so results do not depend on row order or on which rows are asked for; or the
draws ``thetas`` (S, P) are given (:func:`draw_parameters`: the estimators make them
once per belief, from their cached standard normal rows, and pass them to every call).
Class probabilities are averaged over samples in log space (log-sum-exp), never
the logits.
"""

import jax
import jax.numpy as jnp

from .outputs import output_jacobians
from .program import program

PREDICTIVES = ("plugin", "linmc", "mc")


@program(static_argnames=("config", "n_samples"))
def draw_parameters(config, state, key, n_samples, eps=None):
    """S = ``n_samples`` parameter draws θₛ ~ q, (S, P): from ``key``, or
    ``family.transform(state, eps)`` of given standard normal rows ``eps`` (S, P) (the
    draws ``key`` would make, when they are its normals)."""
    family = config.impl.family
    return family.sample(state, key, n_samples) if eps is None else family.transform(state, eps)


def output_samples(config, state, x, key, kind, n_samples, thetas=None):
    """Model outputs under the predictive ``kind``: shape (S, n, C) (S = 1 for plugin);
    θₛ drawn from ``key``, or the given draws ``thetas`` (S, P)."""
    if kind not in PREDICTIVES:
        raise ValueError(f"predictive={kind!r} is not one of {PREDICTIVES}")
    apply = config.model.apply
    if kind == "plugin":
        return apply(state.mean, x)[None]
    if thetas is None:
        thetas = config.impl.family.sample(state, key, n_samples)
    if kind == "mc":
        return jax.vmap(apply, in_axes=(0, None))(thetas, x)
    f_mean, push = jax.linearize(lambda th: apply(th, x), state.mean)
    return f_mean[None] + jax.vmap(push)(thetas - state.mean)


sample_outputs = program(output_samples, static_argnames=("config", "kind", "n_samples"))
"""Jitted :func:`output_samples`."""


def output_moments(config, state, x):
    """The linearised output f ~ N(f(x, μ), J Σ Jᵀ): its mean and marginal variances
    diag(J Σ Jᵀ), each (n, C)."""
    _, jac = output_jacobians(config, state.mean, x)
    var = jnp.diagonal(config.impl.family.output_cov(state, jac), axis1=1, axis2=2)
    return config.model.apply(state.mean, x), var


@program(static_argnames=("config",))
def predict_output_moments(config, state, x, key=None):
    """Jitted :func:`output_moments` (``key`` is unused: the estimators' predictive
    signature)."""
    return output_moments(config, state, x)


@program(static_argnames=("config", "kind", "n_samples"))
def predict_moments(config, state, hyper, x, key, kind, n_samples, thetas=None):
    """Mean and variance of y, each (n, C), for a likelihood with moments (Gaussian,
    Poisson): the likelihood's closed form under the linearised output
    f ~ N(f(x, μ), diag J Σ Jᵀ) for ``linmc``, else E[E(y | f)] and
    E[Var(y | f)] + Var[E(y | f)] over the output samples (the law of total variance).

    The Gaussian variance includes the observation noise R. For the Student-t
    likelihood the second output is the squared scale of its Student-t predictive (the
    same sums with R its squared scale; :mod:`.student_t`), whose variance is ν / (ν − 2)
    times it. ``thetas``: as in :func:`output_samples`.
    """
    lik = config.impl.likelihood
    if lik.cond_moments is None:
        raise ValueError(f"predict_moments does not apply to likelihood={config.likelihood!r}")
    if kind == "linmc":
        return lik.gauss_moments(*output_moments(config, state, x), hyper.obs_var)
    samples = output_samples(config, state, x, key, kind, n_samples, thetas)
    mean, var = lik.cond_moments(samples, hyper.obs_var)
    return jnp.mean(mean, axis=0), jnp.mean(var, axis=0) + jnp.var(mean, axis=0)


@program(static_argnames=("config", "kind", "n_samples"))
def predict_moments_grad(config, state, hyper, x, key, kind, n_samples, thetas=None):
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
        mean, var = predict_moments(config, state, hyper, xi[None], key, kind, n_samples, thetas)
        return (mean[0], var[0]), (mean[0], var[0])

    (mean_grad, var_grad), (mean, var) = jax.vmap(jax.jacfwd(one, has_aux=True))(x)
    return mean, var, mean_grad, var_grad


@program(static_argnames=("config", "kind", "n_samples"))
def predict_log_proba(config, state, x, key, kind, n_samples, thetas=None):
    """Log class probabilities (n, K) for the Bernoulli (K = 2) and categorical likelihoods
    (``thetas``: as in :func:`output_samples`)."""
    lik = config.impl.likelihood
    if lik.class_log_prob is None:
        raise ValueError(f"predict_log_proba does not apply to likelihood={config.likelihood!r}")
    logp = lik.class_log_prob(output_samples(config, state, x, key, kind, n_samples, thetas))
    return jax.nn.logsumexp(logp, axis=0) - jnp.log(jnp.asarray(logp.shape[0], logp.dtype))
