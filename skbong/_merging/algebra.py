"""The maths of merging Gaussian beliefs learned from one prior (see
:mod:`skbong._merging.merge`): the natural-parameter sum in each family's representation (the
family's :class:`~skbong.engine.families.merging.MergeAlgebra`), the conjugate noise,
and the evidence through the log-partition."""

from typing import NamedTuple

import numpy as np
import scipy.special


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
    algebra : MergeAlgebra
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


__all__ = ["Excess", "Prior", "merge_evidence", "merge_gaussians", "merge_noise"]
