"""The interface every Gaussian family provides to the rules and the stream."""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
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
        Draws θ ~ q: ``transform`` of n standard normal rows drawn from ``key``
        (:func:`sampler`).
    transform : callable ``(state, eps) -> (n, P)``
        θ = μ + Σ^{1/2} ε for standard normal rows ε (n, P): the draws of ``sample``
        from given ε (the estimators' predictives reuse one fixed set).
    marginal_var : callable ``state -> (P,)``
        Diagonal of the covariance.
    output_cov : callable ``(state, J) -> (n, C, C)``
        ``J Σ Jᵀ`` for per-row Jacobians ``J`` of shape ``(n, C, P)``.
    is_valid : callable ``state -> bool``
        Finite, with positive variances / precisions.
    scale : callable ``(state, c) -> state``
        The same mean with the covariance multiplied by the scalar c > 0 (the learned
        noise's rescaling, :mod:`..noise`).
    hess_kind : str or None
        What MC-HESS must deliver: ``"dense"``, ``"diag"``, or ``None`` (unsupported).
    host_check : callable ``state -> bool`` or None
        The once-per-call soundness check on the host (numpy arrays), for a family
        whose per-step ``is_valid`` does not guarantee a usable belief; ``None``: every
        valid state is sound.
    unsound : str
        What ``host_check`` found wrong, for the error message.
    memory : callable ``(P, R, itemsize) -> bytes``
        The memory a belief and its update need, for the estimators' up-front check.
    advice : str
        What to try when an update of this family fails (for the error message).
    state_type : type
        The NamedTuple of the belief (``MeanCov`` or ``DLRState``), to rebuild a state
        from its arrays (unpickling, merging).
    parametrisation : str
        ``"natural"`` or ``"moment"``: the parameters its steps move.
    is_sound : callable ``state -> bool`` or None
        The in-graph acceptance test of a backtracked step when ``is_valid`` is not
        enough (the dense families: a Cholesky factorisation, O(P³)); ``None``: ``is_valid``.
    end_check : callable ``state -> bool`` or None
        ``host_check`` as a traced function, run on the final belief inside the stream
        program itself (:func:`~skbong.engine.filter.stream.run_stream_checked`), so that a call
        pays one dispatch, not two; ``None``: the estimators run ``host_check`` on the host.
    checked_ngd : callable or None
        ``(state, g, curv, keep, bound, finish=None) -> (state, ok, bound, aux)``: BONG's
        step (α = 1, no prior) that decides, before writing the new belief, whether it
        would pass ``is_valid`` (a certificate from O(P k) quantities and the running
        bound ``bound`` ≥ the largest absolute covariance entry), and returns the new
        belief where ``keep & ok``, the old one elsewhere, so that no pass over a P × P
        result is needed to check or select it. ``finish(μ') -> (c, ok, aux)``, for
        learned noise: the new belief's covariance is scaled by c (``None``: not
        scaled), ``ok`` joins the certificate and ``aux`` is returned (``None`` without
        ``finish``). ``None``: the stream checks ``is_valid`` on the result.
    entry_bound : callable ``state -> scalar`` or None
        The initial ``bound`` of ``checked_ngd`` (the largest absolute entry of Σ, once per stream call).
    exact_update : bool
        Whether BONG's LIN-HESS step is exact Bayesian conditioning of the family on the
        likelihood's quadratic expansion (no projection onto the family): the full
        covariance. Then iterated passes (``refine``) are Newton steps on the log
        posterior and their fixed point is the Laplace posterior; for the other families
        each step projects, and the passes have no such fixed point.
    merge : MergeAlgebra or None
        How the family holds a belief's precision for merging beliefs learned from one
        prior (:mod:`.merging`); ``None``: its beliefs cannot be merged.
    merge_exact : callable ``(rank, P) -> bool``
        Whether BONG's LIN-HESS step in this family keeps the exact posterior of the
        linear-Gaussian model at rank R and P parameters, so that merged shards equal
        one filter over all rows (the condition of :func:`skbong.merge_posteriors`'s
        exactness and of merging a prior bank's weights).
    low_rank : bool
        Whether the precision keeps a rank-``rank`` part (``rank`` applies): below the
        full rank its steps truncate, and a small model may do better with the full
        covariance (the error messages' advice).
    bank_in_turn : bool
        Whether a bank's filters run one after another in its program (``lax.map``)
        rather than side by side (``vmap``): see
        :func:`~skbong.engine.filter.stream.run_bank`.
    """

    init: Callable
    predict: Callable
    ngd: Callable
    gd: Callable
    sample: Callable
    transform: Callable
    marginal_var: Callable
    output_cov: Callable
    is_valid: Callable
    scale: Callable
    hess_kind: str | None
    host_check: Callable | None = None
    unsound: str = ""
    memory: Callable = lambda p, r, itemsize: 4 * p * itemsize
    advice: str = ""
    state_type: type | None = None
    parametrisation: str = "natural"
    is_sound: Callable | None = None
    end_check: Callable | None = None
    checked_ngd: Callable | None = None
    entry_bound: Callable | None = None
    exact_update: bool = False
    merge: Any = None
    merge_exact: Callable = lambda rank, p: False
    low_rank: bool = False
    bank_in_turn: bool = False

    def acceptable(self, state):
        """Whether a (backtracked) step's result is a usable belief: ``is_valid`` and,
        where the family has one, ``is_sound``."""
        ok = self.is_valid(state)
        return ok if self.is_sound is None else ok & self.is_sound(state)


def finite_and_positive(finite=(), positive=()):
    """Whether every entry of ``finite`` and ``positive`` is finite and every entry of
    ``positive`` is > 0, as one float sum per array shape.

    ``0 · x`` is ``0`` for finite x and NaN for ±inf or NaN, a sum of zeros cannot
    overflow, and an entry that must be positive contributes NaN unless it is; so
    ``isfinite(Σ …)`` is exactly the conjunction of the elementwise checks. It compiles to
    a few plain vectorised sums instead of boolean reductions over temporary masks.
    """
    zeros = {}
    for a in finite:
        zeros[a.shape] = zeros.get(a.shape, 0) + a * 0
    for a in positive:
        zeros[a.shape] = zeros.get(a.shape, 0) + jnp.where(a > 0, a * 0, jnp.nan)
    return jnp.isfinite(sum(jnp.sum(z) for z in zeros.values()))


def sampler(transform):
    """``sample(state, key, n)``: ``transform`` of n standard normal rows (n, P) drawn
    from ``key`` in the belief's dtype."""

    def sample(state, key, n):
        eps = jax.random.normal(key, (n, state.mean.shape[0]), state.mean.dtype)
        return transform(state, eps)

    return sample
