"""The interface every Gaussian family provides to the rules and the stream."""

from collections.abc import Callable
from typing import NamedTuple

import jax.numpy as jnp


class Family(NamedTuple):
    """A variational family: its state type and how each kind of step moves it.

    Attributes
    ----------
    init : callable ``(mean0, prior_var, rank) -> state``
        The prior N(μ₀, σ₀² I) in this family.
    predict : callable ``(state, mean0, hyper) -> state``
        Ornstein–Uhlenbeck predict step toward the prior (drift γ, process noise q).
    ngd : callable ``(state, prior, g, curv, alpha) -> state``
        One natural-gradient step with rate α. ``prior=None``: on the expected
        log-likelihood alone (BONG); otherwise on the online ELBO with KL to ``prior``
        (one BLR inner step).
    gd : callable ``(state, prior, g, curv, alpha) -> state``
        One plain-gradient step in the family's own parameters (BOG; with a prior,
        one BBB inner step).
    sample : callable ``(state, key, n) -> (n, P)``
        Draws θ ~ q.
    marginal_var : callable ``state -> (P,)``
        Diagonal of the covariance.
    output_cov : callable ``(state, J) -> (n, C, C)``
        ``J Σ Jᵀ`` for per-row Jacobians ``J`` of shape ``(n, C, P)``.
    is_valid : callable ``state -> bool``
        Finite, with positive variances / precisions.
    hess_kind : str or None
        What MC-HESS must deliver: ``"dense"``, ``"diag"``, or ``None`` (unsupported).
    """

    init: Callable
    predict: Callable
    ngd: Callable
    gd: Callable
    sample: Callable
    marginal_var: Callable
    output_cov: Callable
    is_valid: Callable
    hess_kind: str | None


def all_finite(*arrays):
    """Whether every entry of every array is finite, as one float reduction per array.

    ``0 · x`` is ``0`` for finite x and NaN for ±inf or NaN, and a sum of zeros cannot
    overflow, so ``isfinite(Σ 0 · x)`` is exactly ``all(isfinite(x))``; it compiles to
    a plain vectorised sum instead of a boolean reduction over a temporary mask.
    """
    return jnp.isfinite(sum(jnp.sum(a * 0) for a in arrays))
