"""The four update rules as one loop (section 3, eqs. 3 and 31–34).

A rule is three switches: natural or plain gradient, with or without the KL term of
the online ELBO, one step or ``n_iter`` steps. BONG is one natural step at unit
rate without KL; BOG one plain step at rate α; BLR ``I`` natural steps on the ELBO;
BBB ``I`` plain steps on the ELBO. Each inner step re-estimates (g, G) at the current
iterate (the linearisation point of LIN-* and the sampling distribution of MC-*),
with the key ``fold_in(key, i)`` so that one-step rules and I = 1 share keys.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp


class Rule(NamedTuple):
    """Static description of an update rule."""

    natural: bool  # natural-gradient (BONG, BLR) or plain-gradient (BOG, BBB) steps
    kl: bool  # online-ELBO objective (BLR, BBB) or expected log-likelihood only
    unit_rate: bool  # BONG's step size is 1


RULES = {
    "bong": Rule(natural=True, kl=False, unit_rate=True),
    "bog": Rule(natural=False, kl=False, unit_rate=False),
    "blr": Rule(natural=True, kl=True, unit_rate=False),
    "bbb": Rule(natural=False, kl=True, unit_rate=False),
}


def update(config, predicted, x, y, w, hyper, key):
    """Posterior after one observation (a mini-batch), from the predicted belief.

    Parameters
    ----------
    config : Config
        Static configuration (rule, hessian, family, …).
    predicted : family state
        q_{t|t−1}, the belief after the predict step.
    x, y, w : arrays (b, d), (b, C), (b,)
        Inputs, targets and row weights of the mini-batch.
    hyper : Hyper
        Traced hyperparameters.
    key : PRNGKey
        Randomness of the MC estimators.
    """
    family, lik, rule, estimate = config.impl
    step = family.ngd if rule.natural else family.gd
    alpha = 1.0 if rule.unit_rate else hyper.learning_rate
    prior = predicted if rule.kl else None
    n_steps = config.n_iter if rule.kl else 1
    backtrack = config.backtrack
    guard = None
    if backtrack and lik.guarded and not rule.kl:
        guard = _no_overshoot(config, predicted, x, y, w, hyper.obs_var)

    def inner(i, state):
        g, curv = estimate(
            config, family, state, x, y, w, hyper.obs_var, jax.random.fold_in(key, i)
        )
        if not backtrack:
            return step(state, prior, g, curv, alpha)
        take = lambda a: step(state, prior, g, curv, a)  # noqa: E731
        return _backtracking(config, family, take, alpha, guard)

    if n_steps == 1:
        return inner(0, predicted)
    return jax.lax.fori_loop(0, n_steps, inner, predicted)


def checks_before_writing(config):
    """Whether the stream takes BONG's step through the family's ``checked_ngd``
    (:class:`~.families.base.Family`): a one-step natural rule at unit rate without
    backtracking, on a static belief (those paths check the written result with
    ``is_valid``)."""
    family, _, rule, _ = config.impl
    return (
        family.checked_ngd is not None
        and rule.natural
        and rule.unit_rate
        and not rule.kl
        and not config.backtrack
        and not config.dynamic
    )


def checked_update(config, state, x, y, w, hyper, key, keep, bound, finish=None):
    """:func:`update` for the configurations of :func:`checks_before_writing`: the same
    estimate (key ``fold_in(key, 0)``) and step, returned as ``(state, ok, bound, aux)``
    with the old belief kept where ``keep`` or the family's certificate is false
    (``finish``: the learned noise's update, see :attr:`~.families.base.Family.checked_ngd`)."""
    family, _, _, estimate = config.impl
    g, curv = estimate(
        config, family, state, x, y, w, hyper.obs_var, jax.random.fold_in(key, 0)
    )
    return family.checked_ngd(state, g, curv, keep, bound, finish)


def _row_log_lik(config, mean, x, y, w, obs_var):
    """Σᵢ wᵢ log p(yᵢ | f(xᵢ, mean)): the batch's weighted log-likelihood at a mean."""
    log_prob = config.impl.likelihood.log_prob
    f = config.model.apply(mean, x)
    return jnp.sum(w * jax.vmap(log_prob, in_axes=(0, 0, None))(y, f, obs_var))


class _Guard(NamedTuple):
    start_mean: jnp.ndarray
    ok: callable


def _no_overshoot(config, predicted, x, y, w, obs_var):
    """The overshoot test of a one-step rule's result (likelihoods with ``guarded``).

    The one-row objective log p(y | θ) − ½ ‖θ − μ₀‖²_Λ₀ of BONG is maximal where its
    likelihood term is at least log p(y | μ₀) (the prior term is largest at μ₀), so a
    mean that lowers the batch's log-likelihood below its value at the predicted mean
    μ₀ went past the optimum: with an exponential mean e^f, a Newton step from far below
    log y lands far above it. Slack √ε (1 + |ℓ₀|) for rounding.
    """
    start = _row_log_lik(config, predicted.mean, x, y, w, obs_var)
    slack = jnp.sqrt(jnp.finfo(start.dtype).eps) * (1.0 + jnp.abs(start))

    def ok(new):
        return _row_log_lik(config, new.mean, x, y, w, obs_var) >= start - slack

    return _Guard(predicted.mean, ok)


def _backtracking(config, family, take, alpha, guard=None):
    """``take(α)``, retaken at α/2, α/4, … (at most ``config.backtrack`` halvings) while
    its result is not acceptable (:meth:`.families.base.Family.acceptable`); then, with a ``guard``
    (:func:`_no_overshoot`), a backtracking line search on the mean alone.

    A damped step in the same direction: the natural steps shrink the precision change
    α G̃, the moment steps the covariance change α Σ G̃ Σ (or (α/2) G̃), which for a small
    enough α keeps Σ positive definite. A step that is acceptable at α is taken
    unchanged, so the published algorithm is what runs wherever it works.

    The guard's line search keeps that covariance (the curvature at the linearisation
    point does not depend on how far the mean moves) and takes the mean μ + t (μ' − μ)
    with t = 1, ½, ¼, … (at most ``config.backtrack`` halvings, the last one standing):
    the damped Newton step, the standard globalisation of Newton's method.
    """
    first = take(alpha)

    def retry(carry):
        k, _ = carry
        return k + 1, take(alpha * 0.5 ** (k + 1))

    def failing(carry):
        k, new = carry
        return (k < config.backtrack) & ~family.acceptable(new)

    _, new = jax.lax.while_loop(failing, retry, (jnp.asarray(0), first))
    if guard is None:
        return new
    start, step = guard.start_mean, new.mean - guard.start_mean

    def shorter(carry):
        k, _ = carry
        return k + 1, new._replace(mean=start + 0.5 ** (k + 1) * step)

    def overshooting(carry):
        k, cand = carry
        return (k < config.backtrack) & ~guard.ok(cand)

    _, new = jax.lax.while_loop(overshooting, shorter, (jnp.asarray(0), new))
    return new
