"""The interface every Gaussian family provides to the rules and the stream."""

from collections.abc import Callable
from typing import NamedTuple


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
