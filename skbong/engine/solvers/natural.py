"""VOGN and VON (Khan et al. 2018, "Vadam", eqs. 7–10): natural-gradient variational
learning with a diagonal or full Gaussian.

Written in the total precision Λ = N(s + λ̃): Λ' = (1 − β) Λ + β (Ĝ + λ),
μ' = μ − α Λ'⁻¹ (ĝ + λ ∘ μ), with ĝ = −(N/m) mean_s Σᵢ wᵢ gᵢ(θₛ) and Ĝ the per-example
empirical Fisher (N/m) mean_s Σᵢ wᵢ gᵢ gᵢᵀ (VOGN, eq. 9), the generalised Gauss–Newton
(N/m) mean_s Σᵢ wᵢ Jᵢᵀ Λ_y Jᵢ (``curvature="ggn"``), or the Hessian (VON, eq. 8). A
weight wᵢ counts as wᵢ repeated rows, so it enters the Fisher once (wᵢ gᵢ gᵢᵀ), not
squared.
"""

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..families import MeanCov
from ..linalg import cholesky
from .base import Rates, Solver, rates
from .grads import (
    curvature_rows,
    grad_moments,
    hessian,
    nll,
    real_rows,
    sample_grads,
    total_gradient,
)


class NGState(NamedTuple):
    """VOGN / VON: mean and precision Λ, (P,) or (P, P)."""

    mean: Any
    prec: Any


def _precision_solve(prec, v):
    """Λ⁻¹ v for a diagonal (P,) or dense SPD (P, P) precision."""
    if prec.ndim == 1:
        return v / prec
    chol = cholesky(0.5 * (prec + prec.T))
    return jax.scipy.linalg.cho_solve((chol, True), v)


def _init(config, mean, hyper):
    dense = config.impl.family.hess_kind == "dense"  # the full covariance
    return NGState(mean, jnp.diag(hyper.init_prec) if dense else hyper.init_prec)


def _sample(state, hyper, eps):
    if state.prec.ndim == 1:
        return state.mean + eps * jax.lax.rsqrt(state.prec)
    # θ = μ + L⁻ᵀ ε with Λ = L Lᵀ: covariance L⁻ᵀ L⁻¹ = Λ⁻¹
    chol = cholesky(0.5 * (state.prec + state.prec.T))
    z = jax.scipy.linalg.solve_triangular(chol.T, eps.T, lower=False)
    return state.mean + z.T


def _step(use_hessian, config, state, thetas, eps, x, y, w, hyper, t):
    """Λ' = (1−β)Λ + β(Ĝ + λ), μ' = μ − αΛ'⁻¹(ĝ + λμ); Ĝ the Hessian where
    ``use_hessian`` (VON, eq. 8), else the curvature rows' Gram (VOGN, eq. 9)."""
    alpha, beta = rates(hyper, t)
    dense = state.prec.ndim == 2
    if not use_hessian and config.curvature == "ef" and not dense:
        # the diagonal of the per-example Fisher from the gradients' second moment
        logp, first, second = jax.vmap(grad_moments, in_axes=(None, 0, None, None, None, None))(
            config, thetas, x, y, w, hyper.obs_var
        )
        scale = hyper.n_data / real_rows(w)
        g, curv = -scale * jnp.mean(first, axis=0), scale * jnp.mean(second, axis=0)
    else:
        logp, grads = sample_grads(config, thetas, x, y, hyper.obs_var)
        g = total_gradient(grads, w, hyper.n_data)
        if use_hessian:
            curv = hessian(config, thetas, x, y, w, hyper.obs_var, hyper.n_data, dense)
        else:
            rows = curvature_rows(config, thetas, grads, x, w, hyper.obs_var, hyper.n_data)
            curv = rows.T @ rows if dense else jnp.sum(rows * rows, axis=0)
    lam = jnp.diag(hyper.prior_prec) if dense else hyper.prior_prec
    prec = (1.0 - beta) * state.prec + beta * (curv + lam)
    mean = state.mean - alpha * _precision_solve(prec, g + hyper.prior_prec * state.mean)
    return NGState(mean, prec), nll(logp, w)


def _posterior(state, hyper):
    if state.prec.ndim == 1:
        return MeanCov(state.mean, 1.0 / state.prec)
    chol = cholesky(0.5 * (state.prec + state.prec.T))
    inv = jax.scipy.linalg.cho_solve((chol, True), jnp.eye(chol.shape[0], dtype=chol.dtype))
    return MeanCov(state.mean, 0.5 * (inv + inv.T))


def _positive(state, hyper):
    # a dense precision that is not positive definite already gives a non-finite mean
    # through its Cholesky solve
    return jnp.all(state.prec > 0) if state.prec.ndim == 1 else jnp.asarray(True)


# α = β = 0.01 (one natural-gradient rate) was the best of {0.1, 0.03, 0.01} on digits
# (benchmarks/bench_variational.py)
_RATES = Rates(lr=0.01, prec_rate=0.01, momentum=0.0)

VOGN = Solver(
    "vogn", ("diag", "full"), _RATES, NGState,
    _init, _sample, partial(_step, False), _posterior, _positive,
)
VON = Solver(
    "von", ("diag", "full"), _RATES, NGState,
    _init, _sample, partial(_step, True), _posterior, _positive,
)
