"""BBB (Blundell et al. 2015, Bayes by Backprop): Adam on (μ, ρ), σ = softplus(ρ), on the
reparameterised negative ELBO per row, (N/m · mean_s Σᵢ −wᵢ log p(yᵢ | μ + σ ∘ εₛ)
+ KL(q ‖ p)) / N; diagonal.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..families import MeanCov
from ..outputs import batch_log_lik
from .base import Rates, Solver, diag_kl, rates
from .grads import real_rows

ADAM_EPS = 1e-8
"""ε of BBB's Adam (the usual default)."""


class BBBState(NamedTuple):
    """BBB: mean, ρ (σ = softplus(ρ)) and Adam's moments of (μ, ρ), each (2, P)."""

    mean: Any
    rho: Any
    mom: Any
    sq: Any


def _softplus_inverse(v):
    return v + jnp.log(-jnp.expm1(-v))


def _init(config, mean, hyper):
    rho = _softplus_inverse(jax.lax.rsqrt(hyper.init_prec))
    zeros = jnp.zeros((2,) + mean.shape, mean.dtype)
    return BBBState(mean, rho, zeros, zeros)


def _sample(state, hyper, eps):
    return state.mean + jax.nn.softplus(state.rho) * eps


def _step(config, state, thetas, eps, x, y, w, hyper, t):
    """Adam on (μ, ρ) with the reparameterisation gradient of the negative ELBO per row."""
    alpha, beta = rates(hyper, t)
    scale = hyper.n_data / real_rows(w)

    def loss(params):
        mean, rho = params
        sigma = jax.nn.softplus(rho)
        nll = -jax.vmap(lambda e: batch_log_lik(config, mean + sigma * e, x, y, w, hyper.obs_var))(
            eps
        )
        kl = diag_kl(mean, sigma * sigma, hyper.prior_prec)
        return (scale * jnp.mean(nll) + kl) / hyper.n_data, jnp.mean(nll)

    grad, nll = jax.grad(loss, has_aux=True)((state.mean, state.rho))
    grad = jnp.stack(grad)  # (2, P)
    gamma1, gamma2 = hyper.momentum, 1.0 - beta
    mom = gamma1 * state.mom + (1.0 - gamma1) * grad
    sq = gamma2 * state.sq + (1.0 - gamma2) * grad * grad
    m_hat = mom / (1.0 - gamma1 ** (t + 1))
    v_hat = sq / (1.0 - gamma2 ** (t + 1))
    delta = alpha * m_hat / (jnp.sqrt(v_hat) + ADAM_EPS)
    return BBBState(state.mean - delta[0], state.rho - delta[1], mom, sq), nll


def _posterior(state, hyper):
    sigma = jax.nn.softplus(state.rho)
    return MeanCov(state.mean, sigma * sigma)


# Adam's usual rates
BBB = Solver(
    "bbb", ("diag",), Rates(lr=0.01, prec_rate=0.001, momentum=0.9), BBBState,
    _init, _sample, _step, _posterior,
)
