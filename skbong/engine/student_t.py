"""The Student-t observation model: y = f + ε, ε ~ t_ν(0, s), s the squared scale.

Heavy tails make a regression robust to gross outliers in y (Lange, Little & Taylor,
"Robust statistical modeling using the t distribution", JASA 84, 1989): the score in the
output,

    ∇_f log p = (ν + 1) r / (ν s + r²),        r = y − f,

is bounded by (ν + 1) / (2 √(ν s)) (at |r| = √(ν s)) and falls like (ν + 1) / r beyond,
so one row moves a BONG step by a bounded amount however far its target lies. The
LIN-HESS curvature is the Fisher information of the location, exact and free of y,

    E[(∇_f log p)²] = (ν + 1) / ((ν + 3) s)

(Lange et al., section 3), with the factor S = √((ν + 1) / ((ν + 3) s)) and the split
u = ∇ / S, finite wherever ∇ is (``split_exact``). As ν → ∞ the score tends to r / s and
the Fisher to 1 / s: the Gaussian likelihood's.

The squared scale s is the ``obs_var`` of the engine; learned online
(:mod:`.noise`), it is the rate of the inverse-gamma posterior of the scale mixture
ε | λ ~ N(0, s / λ), λ ~ Gamma(ν / 2, ν / 2), whose rows enter the rate weighted by
E[λ | r] (``obs_dof`` tells :mod:`.noise` that ν).

The predictive pieces give the location and the *squared scale* of the Student-t that
stands for y: ``cond_moments`` (f, s) and ``gauss_moments`` (m, v + s) for f ~ N(m, v),
the linearised output (the exact predictive, a Gaussian convolved with a Student-t, is
not a Student-t; this one has the likelihood's tails and the linearised predictive's
spread).
"""

import math
from numbers import Real

import jax.numpy as jnp
import scipy.special

DOF = 4.0
"""ν of ``likelihood="student_t"`` by default: Lange, Little & Taylor (1989) found ν = 4
a good fixed choice across their examples; its variance is finite (2 s) and its score
bounded. Against ν ∈ {2, 3, 6, 10} on three sets with 0–5 % gross outliers
(``benchmarks/bench_outliers.py --dofs``, doc/results/outliers.txt) it had the best test
NLL at 5 %; ν = 6 was better on clean data and at 1–2 %."""


def check_dof(nu, name="dof"):
    """ν as a float, or ``ValueError`` naming the parameter ``name``: a real number in
    (0, ∞). ν = ∞ is refused: it is the Gaussian likelihood, whose own name keeps what
    only the conjugate model has (interval calibration, merging)."""
    if type(nu) is float and 0.0 < nu < math.inf:  # the common case, at every Config.impl
        return nu
    if isinstance(nu, bool) or not isinstance(nu, Real) or not 0.0 < float(nu) < math.inf:
        hint = ""
        if isinstance(nu, Real) and float(nu) == math.inf:
            hint = (
                "; the Student-t with infinite degrees of freedom is the Gaussian: use "
                "likelihood='gaussian'"
            )
        raise ValueError(
            f"{name} must be a positive finite real number (the Student-t's degrees of "
            f"freedom), got {nu!r}{hint}"
        )
    return float(nu)


def fields(nu):
    """The functions of the Student-t likelihood with ν = ``nu`` degrees of freedom, as
    the keyword arguments of a :class:`~.likelihoods.Likelihood` (without its name)."""
    nu = check_dof(nu, "nu")
    half = 0.5 * (nu + 1.0)
    # log Γ((ν + 1)/2) − log Γ(ν/2) − ½ log(νπ) = −log B(ν/2, ½) − ½ log ν, in Python
    # floats (any working dtype); the beta function keeps it exact for large ν, where the
    # difference of two log-gammas cancels (ν = 10¹⁶: 0 instead of 18.07).
    norm = float(-scipy.special.betaln(0.5 * nu, 0.5)) - 0.5 * math.log(nu)
    fisher = (nu + 1.0) / (nu + 3.0)

    def log_prob(y, f, obs_var):
        s = jnp.broadcast_to(obs_var, f.shape)
        r = y - f
        return jnp.sum(norm - 0.5 * jnp.log(s) - half * jnp.log1p(r**2 / (nu * s)))

    def grad(y, f, obs_var):
        r = y - f
        return (nu + 1.0) * r / (nu * obs_var + r**2)

    def factor(f, obs_var):
        return jnp.diag(jnp.sqrt(fisher / jnp.broadcast_to(obs_var, f.shape)))

    def coef(y, f, obs_var):
        # ∇ / S = (ν + 1) r / (ν s + r²) · √((ν + 3) s / (ν + 1))
        s = jnp.broadcast_to(obs_var, f.shape)
        return grad(y, f, s) * jnp.sqrt(s / fisher)

    def cond_moments(f, obs_var):
        return f, jnp.broadcast_to(obs_var, f.shape)

    def gauss_moments(m, v, obs_var):
        return m, v + obs_var

    return dict(
        log_prob=log_prob,
        grad=grad,
        fisher_factor=factor,
        grad_coef=coef,
        mean=lambda f: f,
        cond_moments=cond_moments,
        gauss_moments=gauss_moments,
        additive_noise=True,
        split_exact=True,
        obs_dof=nu,
    )
