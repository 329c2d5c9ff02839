"""SLANG (Mishkin et al. 2018, Alg. 1, eqs. 3–11): precision U Uᵀ + D.

The top-L eigenpairs of (1 − β) U Uᵀ + β Ĝ (exact, from the small Gram matrix of the
factors, instead of the paper's randomised eigensolver: the same result to rounding), the
diagonal correction D' = (1 − β) D + β λ + diag(dropped) (eqs. 9–10), then the mean step
with the new, projected precision (eq. 11; the ordering that distinguishes it from
online SLANG, BONG appendix E.6). Momentum as in the authors' code:
m ← γ₁ m + (1 − γ₁) ĝ, bias-corrected, with λ ∘ μ added outside it (γ₁ = 0 is Alg. 1).
"""

from typing import Any, NamedTuple

import jax.numpy as jnp

from ..families import DLRState
from ..families.dlr import transform as dlr_transform
from ..linalg import dlr_grams, dlr_solve, project_rank
from .base import Rates, Solver, rates
from .grads import curvature_rows, nll, sample_grads, total_gradient


class SLANGState(NamedTuple):
    """SLANG: mean, precision D + U Uᵀ (D (P,), U (P, L)) and the gradient momentum."""

    mean: Any
    prec_diag: Any
    prec_lr: Any
    mom: Any


def _init(config, mean, hyper):
    lr = jnp.zeros((mean.shape[0], config.rank), mean.dtype)
    return SLANGState(mean, hyper.init_prec, lr, jnp.zeros_like(mean))


def _sample(state, hyper, eps):
    return dlr_transform(DLRState(state.mean, state.prec_diag, state.prec_lr), eps)


def _step(config, state, thetas, eps, x, y, w, hyper, t):
    """SLANG Alg. 1: top-L eigen step, diagonal correction, then the projected mean step."""
    alpha, beta = rates(hyper, t)
    logp, grads = sample_grads(config, thetas, x, y, hyper.obs_var)
    g = total_gradient(grads, w, hyper.n_data)
    rows = curvature_rows(config, thetas, grads, x, w, hyper.obs_var, hyper.n_data)
    stacked = jnp.concatenate([jnp.sqrt(1.0 - beta) * state.prec_lr.T, jnp.sqrt(beta) * rows])
    head, dropped = project_rank(stacked, stacked @ stacked.T, state.prec_lr.shape[1])
    prec_diag = (1.0 - beta) * state.prec_diag + beta * hyper.prior_prec + dropped
    gamma = hyper.momentum
    mom = gamma * state.mom + (1.0 - gamma) * g
    direction = mom / (1.0 - gamma ** (t + 1)) + hyper.prior_prec * state.mean
    _, inner, _ = dlr_grams(prec_diag, head)
    zero = jnp.zeros((head.shape[0],), head.dtype)
    mean = state.mean - alpha * dlr_solve(prec_diag, head, inner, zero, direction)
    return SLANGState(mean, prec_diag, head.T, mom), nll(logp, w)


def _posterior(state, hyper):
    return DLRState(state.mean, state.prec_diag, state.prec_lr)


def _positive(state, hyper):
    return jnp.all(state.prec_diag > 0)


SLANG = Solver(
    "slang", ("dlr",), Rates(lr=0.01, prec_rate=0.01, momentum=0.0), SLANGState,
    _init, _sample, _step, _posterior, _positive, diag_family="dlr",
)
