"""The observation noise learned online: a conjugate inverse-gamma posterior per output.

For the Gaussian likelihood with unknown noise variance σ², the conjugate prior of the
linear model is normal–inverse-gamma (NIG): θ | σ² ~ N(μ, σ² V), σ² ~ IG(a, b). Its
update by one row (h, y) of weight w is the Kalman step of (μ, V) at unit noise and

    a' = a + w / 2,        b' = b + (w / 2) e² / (w hᵀ V h + 1),     e = y − hᵀ μ

(e.g. Murphy, *Probabilistic Machine Learning: Advanced Topics*, section 15.2.3; West &
Harrison's variance learning). The engine keeps the belief in absolute units,
Σ = ŝ V with the plug-in noise ŝ = b / a, so every family, rule and estimator runs
unchanged with R = ŝ. Two identities make the NIG update exact without any Jacobian:

* the posterior residual of the Kalman step with R = ŝ / w is e' = y − hᵀμ' =
  e ŝ / (w hᵀΣh + ŝ), so w e e' = ŝ w e² / (w hᵀΣh + ŝ) = w e² / (w hᵀ V h + 1): the
  increment of b is (w / 2) e e' (for a mini-batch, the sum over its rows — also exact,
  since e' = ŝ S⁻¹ e with S the batch's predictive covariance);
* after the update, Σ' = ŝ V', and rescaling it by ŝ' / ŝ gives ŝ' V'.

So BONG-LIN-HESS with ``full`` (or ``dlr`` with R ≥ P) on a linear-Gaussian model gives
the closed-form NIG posterior (tests/test_noise.py). For other models the same two lines
are the linearised (EKF-style) version of the conjugate update; a negative e e' (an
overshooting nonlinear step) adds nothing; the sum over a mini-batch's rows is clamped, not
its terms.

Discounting (West & Harrison, *Bayesian Forecasting and Dynamic Models*, 1997, section
10.8, variance discounting; the forgetting factor ρ of Särkkä & Nummenmaa's 2009
variational-Bayes adaptive Kalman filter): with a discount δ < 1 the old evidence is
multiplied by δ before each step's increment, a' = δ a + w / 2 and
b' = δ b + (w / 2) e e', so that ŝ follows the recent residuals (about 1 / (1 − δ) rows)
and the Student-t keeps at most 2 / (1 − δ) degrees of freedom. δ = 1 is the conjugate
update above. A network's residuals shrink while it learns, so the noise of its early,
untrained rows would otherwise stay in ŝ for the whole stream.

With several outputs each has its own (a, b);
the one parameter covariance is rescaled by the geometric mean of their ratios (exact
for one output).

The posterior predictive of y integrates σ²: a Student-t with 2a degrees of freedom and
squared scale J Σ Jᵀ + ŝ (:func:`predictive_dof`).
"""

from typing import Any, NamedTuple

import jax.numpy as jnp

PRIOR_DOF = 1.0
"""a₀ of the default noise prior IG(a₀, a₀ ŝ₀): worth 2 a₀ = 2 pseudo-observations of
variance ŝ₀, so the first rows set the noise scale (the update is scale-equivariant in y
once they outweigh it)."""


NETWORK_DISCOUNT = 0.99
"""δ of ``noise_discount="auto"`` for networks (about the last 100 rows' residuals)."""


class NoiseState(NamedTuple):
    """IG(a, b) posterior of the noise variance of each output: ``dof`` a and ``rate`` b,
    each of shape (C,)."""

    dof: Any
    rate: Any


def init(obs_var0, n_outputs, dtype, prior_dof=PRIOR_DOF):
    """IG(a₀, a₀ ŝ₀) per output: plug-in noise ŝ₀ = ``obs_var0`` (scalar or (C,))."""
    a0 = jnp.full((n_outputs,), prior_dof, dtype)
    return NoiseState(a0, a0 * jnp.broadcast_to(jnp.asarray(obs_var0, dtype), (n_outputs,)))


def variance(noise):
    """Plug-in noise variance ŝ = b / a = 1 / E[σ⁻²] (the R of the update), shape (C,)."""
    return noise.rate / noise.dof


def update(noise, y, f_prior, f_post, w, discount=1.0):
    """The conjugate NIG increment from a mini-batch, after discounting the old evidence
    by δ (see the module docstring).

    Parameters
    ----------
    noise : NoiseState
        Before the row(s).
    y, f_prior, f_post : arrays (b, C)
        Targets and the model outputs at the predicted and the updated mean.
    w : array (b,)
        Row weights (0 = padding).
    discount : float
        δ ∈ (0, 1]; 1 keeps all the evidence (the conjugate update).
    """
    cross = jnp.sum(w[:, None] * (y - f_prior) * (y - f_post), axis=0)  # (C,)
    return NoiseState(
        discount * noise.dof + 0.5 * jnp.sum(w) * jnp.ones_like(noise.dof),
        discount * noise.rate + 0.5 * jnp.maximum(cross, 0.0),
    )


def covariance_ratio(old, new):
    """Factor ŝ' / ŝ by which the parameter covariance is rescaled (geometric mean over
    outputs)."""
    return jnp.exp(jnp.mean(jnp.log(variance(new)) - jnp.log(variance(old))))


def predictive_dof(noise):
    """Degrees of freedom 2a of the Student-t posterior predictive, shape (C,)."""
    return 2.0 * noise.dof


def is_valid(noise):
    """Finite and positive."""
    return jnp.all(jnp.isfinite(noise.rate) & (noise.rate > 0) & (noise.dof > 0))
