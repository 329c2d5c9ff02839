"""Vprop (Khan et al. 2018, "Vadam", eq. 14) and Vadam (its Fig. 1): variational RMSprop
and Adam, diagonal.

s ← (1 − β) s + β ĝ̄², with ĝ̄ the mean mini-batch gradient (the "GM" of Vadam's
Theorem 1, not the Fisher); Vadam also keeps the momentum u ← γ₁ u + (1 − γ₁)(ĝ̄ + λ̃ ∘ μ)
and bias-corrects both; μ' = μ − α û / (√ŝ + λ̃). Eq. 93 writes √(ŝ + λ̃); Fig. 1 and
the authors' code √ŝ + λ̃, which is what runs here. Samples use the uncorrected s:
σ² = 1 / (N s + λ). Vprop is Vadam with γ₁ = 0 and no bias correction.
"""

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..families import MeanCov
from .base import Rates, Solver, rates
from .grads import real_rows, sample_mean_grads


class AdamState(NamedTuple):
    """Vprop / Vadam: mean, momentum u and the per-row scale vector s (Λ = N s + λ)."""

    mean: Any
    mom: Any
    scale: Any


def _init(config, mean, hyper):
    scale = jnp.maximum(hyper.init_prec - hyper.prior_prec, 0.0) / hyper.n_data
    return AdamState(mean, jnp.zeros_like(mean), scale)


def _sample(state, hyper, eps):
    return state.mean + eps * jax.lax.rsqrt(hyper.n_data * state.scale + hyper.prior_prec)


def _step(vadam, config, state, thetas, eps, x, y, w, hyper, t):
    """Vadam (Fig. 1) where ``vadam``, else Vprop (eq. 14; γ₁ = 0, no bias correction)."""
    alpha, beta = rates(hyper, t)
    logp, grads = sample_mean_grads(config, thetas, x, y, w, hyper.obs_var)
    g = -jnp.mean(grads, axis=0) / real_rows(w)
    lam_tilde = hyper.prior_prec / hyper.n_data
    gamma1 = hyper.momentum if vadam else 0.0
    mom = gamma1 * state.mom + (1.0 - gamma1) * (g + lam_tilde * state.mean)
    scale = (1.0 - beta) * state.scale + beta * g * g
    if vadam:  # bias correction (Fig. 1, line 7)
        step = (mom / (1.0 - gamma1 ** (t + 1))) / (
            jnp.sqrt(scale / (1.0 - (1.0 - beta) ** (t + 1))) + lam_tilde
        )
    else:
        step = mom / (jnp.sqrt(scale) + lam_tilde)
    return AdamState(state.mean - alpha * step, mom, scale), -jnp.mean(logp)


def _posterior(state, hyper):
    return MeanCov(state.mean, 1.0 / (hyper.n_data * state.scale + hyper.prior_prec))


# Vadam's are the paper's UCI settings (α = 0.01, γ₁ = 0.99, γ₂ = 0.9)
VPROP = Solver(
    "vprop", ("diag",), Rates(lr=0.01, prec_rate=0.1, momentum=0.0), AdamState,
    _init, _sample, partial(_step, False), _posterior,
)
VADAM = Solver(
    "vadam", ("diag",), Rates(lr=0.01, prec_rate=0.1, momentum=0.99), AdamState,
    _init, _sample, partial(_step, True), _posterior,
)
