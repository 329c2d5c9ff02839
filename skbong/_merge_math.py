"""The maths of merging Gaussian beliefs learned from one prior (see
:mod:`skbong._merge`): the natural-parameter sum in each family's representation
(:class:`_Algebra`), the conjugate noise, and the evidence through the log-partition."""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.special

from .engine.linalg import dlr_grams, dlr_solve, project_rank
from .engine.program import program


# ------------------------------------------------------------------ the algebra
class _Algebra(NamedTuple):
    """How one family holds the precision Λ of its belief (float64 numpy arrays).

    Attributes
    ----------
    precision : callable ``state -> Λ``
        The precision of a belief, in the family's representation.
    add : callable ``(λ₀, [Λₖ]) -> Λ₀ + Σₖ (Λₖ − Λ₀)``
        The merged precision, for the diagonal prior precision λ₀ (P,).
    matvec : callable ``(Λ, v) -> Λ v``
    logdet : callable ``Λ -> log |Λ|``
    solve : callable ``(Λ, v) -> Λ⁻¹ v``
    state : callable ``(μ, Λ, R) -> state``
        The belief N(μ, Λ⁻¹) in the family's state (for ``dlr``, projected to rank R).
    """

    precision: Callable
    add: Callable
    matvec: Callable
    logdet: Callable
    solve: Callable
    state: Callable


def _cho(a):
    return scipy.linalg.cho_factor(a, lower=True)


def _dense_inverse(a):
    return scipy.linalg.cho_solve(_cho(a), np.eye(a.shape[0]))


DENSE = _Algebra(
    precision=lambda state: _dense_inverse(state[1]),
    add=lambda lam0, precs: sum(precs) - (len(precs) - 1) * np.diag(lam0),
    matvec=lambda prec, v: prec @ v,
    logdet=lambda prec: 2.0 * np.sum(np.log(np.diagonal(_cho(prec)[0]))),
    solve=lambda prec, v: scipy.linalg.cho_solve(_cho(prec), v),
    state=lambda mean, prec, rank: (mean, _dense_inverse(prec)),
)
"""``full`` and ``full_moment``: Λ = Σ⁻¹ dense (P, P)."""

DIAGONAL = _Algebra(
    precision=lambda state: 1.0 / state[1],
    add=lambda lam0, precs: sum(precs) - (len(precs) - 1) * lam0,
    matvec=lambda prec, v: prec * v,
    logdet=lambda prec: np.sum(np.log(prec)),
    solve=lambda prec, v: v / prec,
    state=lambda mean, prec, rank: (mean, 1.0 / prec),
)
"""``diag`` and ``diag_moment``: Λ = 1 / σ² (P,)."""


@program
def _woodbury_solve(diag, factor, v):
    rows = factor.T
    _, inner, _ = dlr_grams(diag, rows)
    return dlr_solve(diag, rows, inner, jnp.zeros(rows.shape[0], v.dtype), v)


def _dlr_solve(prec, v):
    """(Υ + W Wᵀ)⁻¹ v by the engine's Woodbury solve (refined once below
    :data:`~.engine.linalg.REFINE_BELOW` parameters)."""
    with jax.enable_x64(True):
        return np.asarray(_woodbury_solve(*prec, v))


def _dlr_logdet(prec):
    """log |Υ + W Wᵀ| = Σ log Υ + log |I + Wᵀ Υ⁻¹ W| (determinant lemma)."""
    diag, factor = prec
    inner = np.eye(factor.shape[1]) + factor.T @ (factor / diag[:, None])
    return np.sum(np.log(diag)) + DENSE.logdet(inner)


@program(static_argnames="rank")
def _project(diag, factor, rank):
    rows = factor.T
    head, dropped = project_rank(rows, rows @ factor, rank)
    return diag + dropped, head.T


def _dlr_state(mean, prec, rank):
    """Project Υ + W̃ W̃ᵀ back to rank R with the family's own projection
    (:func:`~skbong.engine.linalg.project_rank`: the top R directions of W̃ W̃ᵀ, the rest
    of its diagonal added to Υ, so diag(Λ) is kept)."""
    with jax.enable_x64(True):
        return (mean, *(np.asarray(a) for a in _project(*prec, rank)))


LOW_RANK = _Algebra(
    precision=lambda state: (state[1], state[2]),
    add=lambda lam0, precs: (
        sum(p[0] for p in precs) - (len(precs) - 1) * lam0,
        np.concatenate([p[1] for p in precs], axis=1),
    ),
    matvec=lambda prec, v: prec[0] * v + prec[1] @ (prec[1].T @ v),
    logdet=_dlr_logdet,
    solve=_dlr_solve,
    state=_dlr_state,
)
"""``dlr``: Λ = Υ + W Wᵀ as the pair (Υ (P,), W (P, k)); the merged factor stacks the
shards' factors, W̃ = [W₁ … W_K], before the projection."""

ALGEBRAS = {"full": DENSE, "full_moment": DENSE, "diag": DIAGONAL, "diag_moment": DIAGONAL}
ALGEBRAS["dlr"] = LOW_RANK


# ------------------------------------------------------------------ the maths
class Excess(NamedTuple):
    """What the merged belief holds beyond the sum of the shards', relative to the prior:
    ``quad`` = dᵀΛd − Σₖ dₖᵀΛₖdₖ (d = μ − μ₀) and ``logdet`` = ℓ − Σₖ ℓₖ with
    ℓ = log |Λ| − log |Λ₀|. They complete the merged noise and evidence."""

    quad: float
    logdet: float


class Prior(NamedTuple):
    """The prior N(μ₀, diag(1 / λ₀)) of a merge, float64 (P,) arrays.

    ``shard_means`` holds the prior mean of each shard when they differ from μ₀ (the same
    precision: a Poisson intercept's prior is centred on each shard's first mean count);
    each shard is then divided by its own prior, q ∝ p₀ ∏ₖ qₖ / pₖ.
    """

    mean: np.ndarray
    precision: np.ndarray
    shard_means: list | None = None


def merge_gaussians(algebra, prior, states, rank):
    """Merge Gaussian beliefs learned from one prior N(μ₀, Λ₀⁻¹) by adding their natural
    parameters: Λ = Λ₀ + Σₖ (Λₖ − Λ₀), μ = μ₀ + Λ⁻¹ Σₖ Λₖ (μₖ − μ₀). Shards from priors
    N(μ₀ₖ, Λ₀⁻¹) add −Λ₀ (μ₀ₖ − μ₀) to their term.

    Parameters
    ----------
    algebra : _Algebra
        The family's precision operations.
    prior : Prior
        The prior (diagonal precision).
    states : list of tuple of ndarray
        The shards' beliefs (float64), in the family's state layout.
    rank : int
        R of the ``dlr`` family (ignored by the others).

    Returns
    -------
    state : tuple of ndarray
        The merged belief, float64.
    excess : Excess
        The quadratic and log-determinant terms of the noise and evidence merges (for
        shards of one prior).
    """
    mean0, lam0 = prior.mean, prior.precision
    precs = [algebra.precision(s) for s in states]
    shifts = [s[0] - mean0 for s in states]
    infos = [algebra.matvec(p, d) for p, d in zip(precs, shifts)]  # Λₖ (μₖ − μ₀)
    if prior.shard_means is not None:
        infos = [g - lam0 * (m - mean0) for g, m in zip(infos, prior.shard_means)]
    prec = algebra.add(lam0, precs)
    info = sum(infos)
    shift = algebra.solve(prec, info)
    base = np.sum(np.log(lam0))
    excess = Excess(
        quad=float(shift @ info - sum(d @ g for d, g in zip(shifts, infos))),
        logdet=float(algebra.logdet(prec) - base - sum(algebra.logdet(p) - base for p in precs)),
    )
    return algebra.state(mean0 + shift, prec, rank), excess


def _log_normaliser_gamma(noise):
    """log Γ(a) − a log b summed over outputs: the inverse-gamma part of the NIG
    log-partition."""
    a, b = noise
    return float(np.sum(scipy.special.gammaln(a) - a * np.log(b)))


def merge_noise(noise0, noises, excess):
    """The conjugate inverse-gamma merge: a = a₀ + Σₖ (aₖ − a₀) and
    b = b₀ + Σₖ (bₖ − b₀) − ½ ``excess.quad`` (one output; see the module docstring)."""
    a0, b0 = noise0
    a = a0 + sum(n[0] - a0 for n in noises)
    b = b0 + sum(n[1] - b0 for n in noises) - 0.5 * excess.quad
    return a, b


def merge_evidence(log_evidences, excess, noise0=None, noises=None, noise=None):
    """The log marginal likelihood of all shards from each shard's:
    Σₖ Lₖ + [A(η) − A(η₀)] − Σₖ [A(ηₖ) − A(η₀)], with the Gaussian log-partition
    A = ½ μᵀΛμ − ½ log |Λ| (fixed noise) or the normal–inverse-gamma one
    A = −½ log |V⁻¹| + log Γ(a) − a log b (learned noise)."""
    total = sum(log_evidences) - 0.5 * excess.logdet
    if noise is None:
        return total + 0.5 * excess.quad
    g0 = _log_normaliser_gamma(noise0)
    return total + (_log_normaliser_gamma(noise) - g0) - sum(
        _log_normaliser_gamma(n) - g0 for n in noises
    )


__all__ = ["ALGEBRAS", "LOW_RANK", "Excess", "Prior", "merge_evidence", "merge_gaussians", "merge_noise"]
