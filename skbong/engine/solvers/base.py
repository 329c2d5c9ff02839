"""The record a batch solver is: its functions and the facts the estimators read.

The batch setting (Khan et al. 2018, section 2; "Fast and scalable Bayesian deep
learning by weight-perturbation in Adam", here "Vadam"; Mishkin et al. 2018, "SLANG";
Shen et al. 2024, "IVON"): N rows, a mini-batch of m real rows (zero weights are
padding), S Monte Carlo samples θₛ ~ q, a fixed prior N(0, diag(λ)⁻¹) (one precision
per parameter; λ̃ = λ / N). gᵢ(θ) = ∇θ log p(yᵢ | xᵢ, θ).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp


class Rates(NamedTuple):
    """What ``None`` means for an estimator's ``learning_rate``, ``precision_rate`` and
    ``momentum`` with this solver."""

    lr: float
    prec_rate: float
    momentum: float


def always(state, hyper):
    """The positivity test of a state that has none beyond finiteness."""
    return jnp.asarray(True)


@dataclass(frozen=True)
class Solver:
    """A batch solver: its name's functions and facts, one record in
    :data:`~skbong.engine.solvers.SOLVERS`.

    Attributes
    ----------
    name : str
        The estimators' ``solver`` value.
    families : tuple of str
        The posterior families it keeps (a :data:`~skbong.engine.families.FAMILIES`
        key); the first is its own, what ``family="auto"`` takes for a network.
    rates : Rates
        The default α, β and γ₁.
    state_type : type
        The NamedTuple of its state.
    init : callable
        ``init(config, mean, hyper) -> state``: q₀ with the given mean and precision
        ``hyper.init_prec``.
    sample : callable
        ``sample(state, hyper, eps) -> θ (S, P)``: the reparameterisation
        θ = μ + Σ^{1/2} ε.
    step : callable
        ``step(config, state, thetas, eps, x, y, w, hyper, t) -> (state, nll)``: one
        update from the samples (the draws ``sample`` made from ``eps``, passed in so
        that tests can fix them); ``nll`` = mean_s Σᵢ −wᵢ log p(yᵢ | θₛ), the
        mini-batch's data term.
    posterior : callable
        ``posterior(state, hyper)``: q as a :class:`~skbong.engine.families.MeanCov`
        (``diag`` / ``full``) or :class:`~skbong.engine.families.DLRState` (``dlr``),
        the form the predictives take; its family decides the KL to the prior
        (:func:`~skbong.engine.solvers.kl_to_prior`).
    positive : callable
        ``positive(state, hyper) -> bool``: the state's own validity condition beyond
        finiteness (a diagonal precision that is positive), traced.
    diag_family : str
        What the estimators' ``family="diag"`` means for it: ``"diag"``, or for SLANG
        ``"dlr"``, its diagonal-plus-low-rank precision.
    """

    name: str
    families: tuple
    rates: Rates
    state_type: type
    init: Callable
    sample: Callable
    step: Callable
    posterior: Callable
    positive: Callable = always
    diag_family: str = "diag"


def rates(hyper, t):
    """(α_t, β_t): α / (1 + t^ω) and β / (1 + t^ω) with ω = ``decay``; constant for ω = 0
    (the papers' schedule)."""
    t = jnp.asarray(t, hyper.lr.dtype)
    factor = jnp.where(hyper.decay > 0, 1.0 / (1.0 + t**hyper.decay), 1.0)
    return hyper.lr * factor, hyper.prec_rate * factor


def diag_kl(mean, var, prior_prec):
    """KL(N(μ, diag(σ²)) ‖ N(0, diag(λ)⁻¹))."""
    return 0.5 * jnp.sum(prior_prec * (var + mean * mean) - 1.0 - jnp.log(prior_prec * var))


def all_finite(state):
    """Whether every array of a state is finite (traced)."""
    leaves = jax.tree_util.tree_leaves(state)
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in leaves]))
