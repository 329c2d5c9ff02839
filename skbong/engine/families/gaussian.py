"""Natural- and moment-parameter steps for the Gaussian families with an explicit
covariance (full and diagonal), written once over a small matrix "algebra".

The full family stores Σ as a (P, P) matrix and the diagonal family stores σ² as a
(P,) vector; an :class:`Algebra` supplies the handful of operations (Σ v, Σ⁻¹,
Σ G Σ, …) in each representation, and the four update formulas below serve both.
State: :class:`MeanCov`.

With the Bonnet / Price identities ∇_μ E_q[log p] = g and ∇_Σ E_q[log p] = G / 2,
the KL term of the online ELBO (BLR, BBB) enters only through the substitution
(eqs. 98–99)

    g̃ = g − Λ₀ (μ − μ₀),     G̃ = G − Λ₀ + Λ,

where Λ = Σ⁻¹ and Λ₀ is the precision of the predicted belief. Every rule is then
one of four steps with rate α:

* natural NGD (eqs. 120–121, 135–136, 212–213, 218–219):
  Λ' = Λ − α G̃,   μ' = μ + α Σ' g̃;
* moment NGD (eqs. 169–170, 173–174, 248–249, 252–253):
  μ' = μ + α Σ g̃,   Σ' = Σ + α Σ G̃ Σ;
* natural GD, on η = (Λ μ, −Λ/2) with the symmetric gradient (eqs. 139–142, 222–225):
  η₁' = Λ μ + α Σ g̃,   Λ' = Λ − 2α (Σ g̃ μᵀ + μ g̃ᵀ Σ) − 2α Σ G̃ Σ,   μ' = Σ' η₁';
* moment GD (eqs. 177–178, 181–182, 256–257, 260–261):
  μ' = μ + α g̃,   Σ' = Σ + (α / 2) G̃.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax.numpy as jnp

from ..types import Curv, gradient_split
from .base import Family, finite_and_positive, sampler


class MeanCov(NamedTuple):
    """Gaussian belief with an explicit covariance: (P, P) full or (P,) diagonal."""

    mean: Any
    cov: Any


class Algebra(NamedTuple):
    """Covariance-representation operations used by the shared steps."""

    matvec: Callable  # (Σ, v) -> Σ v
    inv: Callable  # Σ -> Σ⁻¹ (SPD inverse)
    explicit: Callable  # curv -> G in the covariance representation
    sandwich: Callable  # (Σ, curv) -> Σ G Σ
    # (Σ, B, g, u, r) -> (Σ', Σ' g) with Σ' = (Σ⁻¹ + B Bᵀ)⁻¹ and g = B u + r (either form)
    add_precision_factor: Callable
    sym_outer: Callable  # (a, b) -> a bᵀ + b aᵀ
    add_isotropic: Callable  # (Σ, c) -> Σ + c I
    diagonal: Callable  # Σ -> diag(Σ)


def with_kl(alg, state, prior, g, curv):
    """Return (g̃, G̃): the gradients of the online ELBO's KL-augmented objective.

    ``prior=None`` means no KL term (BONG, BOG) and returns the inputs unchanged.
    """
    if prior is None:
        return g, curv
    prec0 = alg.inv(prior.cov)
    g_tilde = g - alg.matvec(prec0, state.mean - prior.mean)
    # G + (Λ − Λ₀), not (G − Λ₀) + Λ: with Λ = Λ₀ = 1e8 the latter loses G in float32
    g_curv = alg.explicit(curv) + (alg.inv(state.cov) - prec0)
    return g_tilde, Curv(hess=g_curv)


def natural_ngd(alg, state, prior, g, curv, alpha):
    """Natural-parameter NGD step: Λ' = Λ − αG̃, μ' = μ + αΣ'g̃."""
    g, curv = with_kl(alg, state, prior, g, curv)
    if curv.factor is not None:
        # G = −B Bᵀ: precision gains α B Bᵀ, by Woodbury (eqs. 122–124, 130–132).
        root = jnp.sqrt(alpha)
        coef, rest = gradient_split(g, curv)
        cov, cov_g = alg.add_precision_factor(state.cov, root * curv.factor, g, coef / root, rest)
    else:
        cov = alg.inv(alg.inv(state.cov) - alpha * curv.hess)
        cov_g = alg.matvec(cov, g)
    return MeanCov(state.mean + alpha * cov_g, cov)


def moment_ngd(alg, state, prior, g, curv, alpha):
    """Moment-parameter NGD step (Fisher preconditioner of eq. 168 / 247)."""
    g, curv = with_kl(alg, state, prior, g, curv)
    mean = state.mean + alpha * alg.matvec(state.cov, g)
    return MeanCov(mean, state.cov + alpha * alg.sandwich(state.cov, curv))


def natural_gd(alg, state, prior, g, curv, alpha):
    """Plain gradient step on the natural parameters (η₁, η₂) = (Λμ, −Λ/2)."""
    g, curv = with_kl(alg, state, prior, g, curv)
    prec = alg.inv(state.cov)
    cov_g = alg.matvec(state.cov, g)
    eta1 = alg.matvec(prec, state.mean) + alpha * cov_g
    prec_new = (
        prec
        - 2.0 * alpha * alg.sym_outer(cov_g, state.mean)
        - 2.0 * alpha * alg.sandwich(state.cov, curv)
    )
    cov = alg.inv(prec_new)
    return MeanCov(alg.matvec(cov, eta1), cov)


def moment_gd(alg, state, prior, g, curv, alpha):
    """Plain gradient step on (μ, Σ): μ' = μ + αg̃, Σ' = Σ + (α/2) G̃."""
    g, curv = with_kl(alg, state, prior, g, curv)
    return MeanCov(state.mean + alpha * g, state.cov + 0.5 * alpha * alg.explicit(curv))


def moment_advice(family, natural):
    """What to try when a moment family's update fails."""
    return (
        f"family={family!r} takes moment steps (Σ' = Σ + α Σ G Σ for the natural rules, "
        "Σ + (α/2) G for the plain ones), which lose positive definiteness on a row more "
        "informative than the current belief, as published (doc: 'Which combination "
        f"survives'); the natural family={natural!r}, or 'dlr', takes the same data; or "
        "backtrack=20 (halve a step that would break it, with rule='bong' or 'blr')"
    )


def scale(state, c):
    """Covariance × c (the learned noise's rescaling of a coupled belief)."""
    return MeanCov(state.mean, state.cov * c)


def make_family(alg, eye, transform, output_cov, hess_kind, parametrisation, **host):
    """Assemble a :class:`~.base.Family` from a representation and a parametrisation.

    Parameters
    ----------
    alg : Algebra
        Operations in the covariance representation.
    eye : callable ``(P, dtype) -> identity`` in that representation.
    transform, output_cov : callable
        Representation-specific θ = μ + Σ^{1/2} ε and ``J Σ Jᵀ``.
    hess_kind : str
        What MC-HESS delivers for this representation.
    parametrisation : ``"natural"`` or ``"moment"``
        Which pair of steps (NGD, GD) the family takes.
    **host
        The host-side fields of :class:`~.base.Family` (``host_check``, ``unsound``,
        ``memory``, ``advice``) and ``is_sound``.
    """
    ngd, gd = {"natural": (natural_ngd, natural_gd), "moment": (moment_ngd, moment_gd)}[
        parametrisation
    ]
    return Family(
        init=lambda mean0, prior_var, rank: MeanCov(
            mean0, prior_var * eye(mean0.shape[0], mean0.dtype)
        ),
        predict=_predict(alg),
        ngd=lambda s, pr, g, c, a: ngd(alg, s, pr, g, c, a),
        gd=lambda s, pr, g, c, a: gd(alg, s, pr, g, c, a),
        sample=sampler(transform),
        transform=transform,
        marginal_var=lambda s: alg.diagonal(s.cov),
        output_cov=output_cov,
        is_valid=_is_valid(alg),
        scale=scale,
        hess_kind=hess_kind,
        state_type=MeanCov,
        parametrisation=parametrisation,
        **host,
    )


def _predict(alg):
    """OU predict step: μ' = γμ + (1−γ)μ₀, Σ' = γ²Σ + ((1−γ²)σ₀² + q) I."""

    def _predict(state, mean0, hyper):
        gamma = hyper.drift
        mean = gamma * state.mean + (1.0 - gamma) * mean0
        noise = (1.0 - gamma**2) * hyper.prior_var + hyper.process_noise
        return MeanCov(mean, alg.add_isotropic(gamma**2 * state.cov, noise))

    return _predict


def _is_valid(alg):
    """Finite mean and covariance with a positive diagonal."""

    def _valid(state):
        return finite_and_positive((state.mean, state.cov), positive=(alg.diagonal(state.cov),))

    return _valid
