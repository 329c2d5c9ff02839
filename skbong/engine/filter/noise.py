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

*Coupled or factorised.* The coupling θ | σ² ~ N(μ, σ² V) puts the *prior* in units of the noise too: after n
rows every direction the data have not reached still has variance ŝₙ σ₀², not σ₀². For
the linear model that is the conjugate prior, and the evidence (the bank of prior
variances) absorbs the scale. For a network started at ŝ₀ = 1 on standardised targets the
learned noise falls to a few hundredths, and the rescaling shrinks the whole covariance,
its prior directions included, by as much: the network then learns, in one pass, as if its
prior variance were σ₀² ŝ, and under-fits.

``Config.noise_coupled=False`` keeps the factorised belief
q(θ) q(σ²) = N(μ, Σ) IG(a, b) of the variational-Bayes adaptive Kalman filter (Särkkä &
Nummenmaa, "Recursive noise adaptive Kalman filtering by variational Bayesian
approximations", IEEE Trans. Automatic Control 54(3), 2009): the θ step uses
R = ŝ = b / a = 1 / E_q[σ⁻²], exactly as above, but Σ is *not* rescaled, so the prior
stays in the absolute units of σ₀². The rate takes the same increment (w / 2) e e'. In the
linear case, with the current Σ standing for ŝ V, it is the NIG increment of that step; for
a calibrated predictive (E e² = hᵀΣh + σ²) its mean is ŝ (hᵀΣh + σ²) / (hᵀΣh + ŝ), whose
fixed point is ŝ = σ². Särkkä & Nummenmaa's own increment, the expected squared residual
under the updated belief, (w / 2) [(y − f(μ'))² + J Σ' Jᵀ], has the same fixed point but
adds the linearised parameter variance J Σ' Jᵀ whatever the residual; a network's
linearised variance along its prior directions is large, and on the UCI sets (one
50-unit layer, one pass, 5 splits) that increment learned a noise 2.4 and 5.1 times
larger on energy and yacht, and a worse test NLL on 5 of 7 sets, than e e'. With a fixed prior in absolute units,
the factorised belief is not equivariant to the scale of y: it wants standardised targets,
as any network does (the coupled belief scales its prior with the noise).

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

*Student-t noise* (:mod:`.student_t`): ε ~ t_ν(0, σ²) is the scale mixture
ε | λ ~ N(0, σ² / λ), λ ~ Gamma(ν / 2, ν / 2). Its variational-Bayes update (the robust
Kalman filter of Ting, Theodorou & Schaal, 2007, and Agamennoni, Nieto & Nebot, 2012)
gives each row the weight E[λ | r] = (ν + 1) / (ν + r² / ŝ) in the rate,

    a' = δ a + w / 2,        b' = δ b + (w / 2) E[λ] e e',        r² = e e',

with r² the same squared residual e e' (for the linear-Gaussian step, ŝ e² / (hᵀΣh + ŝ),
so that r² / ŝ is the squared standardised one-step residual). A row's increment is at
most (w / 2)(ν + 1) ŝ however far its target lies, so gross outliers do not inflate σ²;
as ν → ∞ the weight tends to 1, the update above (:func:`scale_weight`).

The posterior predictive of y integrates σ²: a Student-t with 2a degrees of freedom and
squared scale J Σ Jᵀ + ŝ (:func:`predictive_dof`). That is exact for the coupled belief
(J Σ Jᵀ + ŝ = ŝ (J V Jᵀ + 1) scales with σ²). For the factorised one the predictive
∫ N(y; f, J Σ Jᵀ + σ²) IG(σ²; a, b) dσ² is not a Student-t; the same Student-t is used:
exact where J Σ Jᵀ ≪ ŝ, with heavier tails than the exact one where J Σ Jᵀ dominates.
(Discounted, 2a stays below 2 / (1 − δ) = 200 at δ = 0.99, where the difference from a
Gaussian of that variance is small.)
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


def scale_weight(r2, obs_var, obs_dof):
    """E[λ | r] = (ν + 1) / (ν + r² / ŝ) of the Student-t's scale mixture, for squared
    residuals ``r2`` ≥ 0 and the noise ŝ (1 for ν = ∞, the Gaussian)."""
    if obs_dof == float("inf"):
        return jnp.ones_like(r2)
    return (obs_dof + 1.0) / (obs_dof + r2 / obs_var)


def update(noise, y, f_prior, f_post, w, discount=1.0, obs_dof=float("inf")):
    """The conjugate NIG increment from a mini-batch, after discounting the old evidence
    by δ (see the module docstring); with Student-t noise (``obs_dof`` ν finite) each
    row's increment weighted by E[λ | r] (:func:`scale_weight`).

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
    obs_dof : float
        ν of Student-t noise; ``inf`` (the Gaussian) leaves the rows unweighted.
    """
    cross = (y - f_prior) * (y - f_post)  # (b, C)
    if obs_dof != float("inf"):
        cross = scale_weight(jnp.maximum(cross, 0.0), variance(noise), obs_dof) * cross
    cross = jnp.sum(w[:, None] * cross, axis=0)  # (C,)
    return NoiseState(
        discount * noise.dof + 0.5 * jnp.sum(w) * jnp.ones_like(noise.dof),
        discount * noise.rate + 0.5 * jnp.maximum(cross, 0.0),
    )


def covariance_ratio(old, new):
    """Factor ŝ' / ŝ by which the coupled belief's parameter covariance is rescaled
    (geometric mean over outputs); the factorised belief is not rescaled."""
    return jnp.exp(jnp.mean(jnp.log(variance(new)) - jnp.log(variance(old))))


def predictive_dof(noise, obs_dof=float("inf")):
    """Degrees of freedom of the Student-t posterior predictive, shape (C,): 2a, or with
    Student-t noise of ν degrees of freedom min(ν, 2a), the heavier of the two tails (the
    exact predictive, a Student-t noise whose scale is itself uncertain, is not a
    Student-t)."""
    return jnp.minimum(2.0 * noise.dof, obs_dof)


def is_valid(noise):
    """Finite and positive."""
    return jnp.all(jnp.isfinite(noise.rate) & (noise.rate > 0) & (noise.dof > 0))
