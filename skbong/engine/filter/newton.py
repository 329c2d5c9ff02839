"""A pass of the iterated filter in closed form: one Gauss–Newton step on the log posterior.

A pass of ``fit``'s refinement learns every row from the prior N(μ₀, diag σ₀²) with the
likelihood linearised at a fixed point θ̄ (:func:`~.curvature.lin_hess` with ``point``):
each row contributes the quadratic expansion of its log-likelihood about f̄ = f(x, θ̄).
For the full covariance each step conditions exactly on its row's expansion, in any
order (``Family.exact_update``), so the pass's result is the prior conditioned on their
sum, which needs no stream:

    Λ = diag(σ₀²)⁻¹ + Σᵢ wᵢ Jᵢᵀ Λ_y,ᵢ Jᵢ = diag(σ₀²)⁻¹ + B Bᵀ,
    μ = μ₀ + Λ⁻¹ g,   Σ = Λ⁻¹,

with B and g, the expansion's slope at μ₀, as LIN-HESS builds them from the rows
(Prop. 4.2 of the BONG paper). For a GLM with canonical link (logistic, softmax,
Poisson) this is the Newton (IRLS) step from θ̄. The rows' sums B Bᵀ and g are matrix
products over blocks of :data:`BLOCK_ROWS` rows, where a stream makes one rank-C update
per row; a bank's K filters, each at its own point and prior, run in one program.
"""

import jax
import jax.numpy as jnp

from ..program import program
from .curvature import lin_hess

BLOCK_ROWS = 128
"""Rows per block of the sums: B is P × (128 C) per block, and B Bᵀ one matrix product."""


class _Prior:
    """The belief :func:`~.curvature.lin_hess` expands about (it reads the mean only)."""

    def __init__(self, mean):
        self.mean = mean


def _sums(config, point, mean0, carry, xs, ys, ws, obs_var, length):
    """``carry`` (Σ B Bᵀ, Σ g) plus the blocks ``xs, ys, ws`` (T, BLOCK_ROWS, …) up to
    ``length`` for one filter: its linearisation point θ̄ and prior mean μ₀ (P,)."""
    prior = _Prior(mean0)

    def body(t, acc):
        x, y, w = xs[t], ys[t], ws[t]
        g, curv = lin_hess(config, None, prior, x, y, w, obs_var, None, point=point)
        return acc[0] + curv.factor @ curv.factor.T, acc[1] + g

    return jax.lax.fori_loop(0, length, body, carry)


def _solve(mean0, prior_var, gram, grad):
    prec = gram + jnp.diag(1.0 / prior_var)
    chol = jnp.linalg.cholesky(prec)
    cov = jax.scipy.linalg.cho_solve((chol, True), jnp.eye(prec.shape[0], dtype=prec.dtype))
    cov = 0.5 * (cov + cov.T)
    mean = mean0 + cov @ grad
    ok = jnp.all(jnp.isfinite(cov)) & jnp.all(jnp.isfinite(mean))
    return mean, cov, ok


def _pass(config, point, mean0, prior_var, carry, xs, ys, ws, obs_var, length):
    sums = _sums(config, point, mean0, carry, xs, ys, ws, obs_var, length)
    return sums, _solve(mean0, prior_var, *sums)


@program(static_argnames=("config",))
def newton_pass(config, points, means0, prior_var, carry, xs, ys, ws, obs_var, length):
    """A bank's K filters' pass over one call's blocks ``xs, ys, ws`` (T, BLOCK_ROWS, …)
    up to ``length``: each filter linearised at its ``points`` row (K, P) and expanded
    about its prior N(``means0``, diag ``prior_var``) (K, P). Returns the sums
    (Σ B Bᵀ (K, P, P), Σ g (K, P)) with ``carry`` added, for the next call of a longer
    pass, and the result of the rows so far: μ (K, P), Σ (K, P, P) and ok (K,), false
    where Λ is not positive definite or a result is not finite. Zero-weight rows add
    nothing."""
    return jax.vmap(_pass, in_axes=(None, 0, 0, 0, 0, None, None, None, None, None))(
        config, points, means0, prior_var, carry, xs, ys, ws, obs_var, length
    )
