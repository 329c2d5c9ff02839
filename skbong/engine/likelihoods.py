"""Observation models p(y | f) in the output f of the network.

Each likelihood gives, for one row with output ``f`` (shape ``(C,)``) and target
``y`` (shape ``(C,)``; one-hot for the categorical):

* ``log_prob(y, f, obs_var)``: log p(y | f);
* ``grad(y, f, obs_var)``: ∇_f log p(y | f);
* ``fisher_factor(f, obs_var)``: ``S`` with ``S Sᵀ = Λ_y``, the Fisher of the
  likelihood with respect to f (the LIN-HESS curvature, Prop. 4.2), built without
  jitter or any inverse of a singular covariance;
* ``grad_coef(y, f, obs_var)``: ``u`` with ``S u = ∇_f log p(y | f)``, written without
  dividing by a vanishing factor (it lets the Woodbury steps avoid cancellation, see
  :class:`~skbong.engine.types.Curv`);
* ``mean(f)``: E[y | f] (probabilities for the classifiers).

The predictive pieces (:mod:`.predictive`), ``None`` where they do not apply:

* ``cond_moments(f, obs_var)``: E[y | f] and Var[y | f], for the count and real-valued
  likelihoods (the Monte Carlo and plug-in predictive moments);
* ``gauss_moments(m, v, obs_var)``: E[y] and Var[y] in closed form when the output is
  f ~ N(m, v) (the linearised predictive);
* ``class_log_prob(f)``: log p(y = k | f) for each class k, for the classifiers.

``guarded``: whether a one-step rule's step can overshoot far past the optimum, so that
with ``backtrack`` it is also retaken at half the rate while it lowers the row's
log-likelihood (:func:`.rules._no_overshoot`): the Poisson likelihood, whose gradient
y − e^f is unbounded. (The Gaussian step is exact in the conjugate case, and the
Bernoulli / categorical gradients are bounded.)

``additive_noise``: whether y = f + ε with ε ~ N(0, R) (or, with ``obs_dof``, a
Student-t of squared scale R), so that R can be learned online (:mod:`.noise`), the
evidence has the closed linearised form, and the output is on the target's own scale (its
bias gets the broad prior of :mod:`.models`): the Gaussian and the Student-t.

``obs_dof``: the degrees of freedom ν of additive noise that is a Gaussian scale mixture,
Student-t(ν, 0, R) (:mod:`.student_t`); ``inf`` for the Gaussian. The registry's
``"student_t"`` has ν = :data:`.student_t.DOF`; :func:`resolve` gives any other ν (the
``obs_dof`` of :class:`~.config.Config`). The learned noise
weights each row's share of the rate by E[λ | r] (:mod:`.noise`), and the predictive and
the evidence have at most ν degrees of freedom. Only the Gaussian (ν = ∞) is conjugate.

``split_exact``: whether ``grad_coef`` is finite wherever ``grad`` is, so that LIN-HESS's
gradient is exactly B u and needs no rest r (:class:`~skbong.engine.types.Curv`; the
natural steps then skip their products with r): the Gaussian (and the Student-t, whose u is ∇ times a constant), whose
u = (y − f) √w / √R and ∇ = (y − f) w / R differ by the factor √(w / R), so that the
larger of the two is the one that overflows, and its intermediate (y − f) / √R overflows
only where (y − f) / R does. (A Bernoulli, categorical or Poisson u divides by a
factor S that vanishes where the output saturates, while ∇ stays finite.)

``obs_var`` is the Gaussian observation variance, or the Student-t's squared scale
(scalar or one per output); the other likelihoods ignore it.
"""

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from . import student_t


class Likelihood(NamedTuple):
    """The functions an observation model provides (see the module docstring)."""

    name: str
    log_prob: Callable
    grad: Callable
    fisher_factor: Callable
    grad_coef: Callable
    mean: Callable
    cond_moments: Callable | None = None
    gauss_moments: Callable | None = None
    class_log_prob: Callable | None = None
    guarded: bool = False
    additive_noise: bool = False
    split_exact: bool = False
    obs_dof: float = float("inf")

    @property
    def conjugate(self):
        """Whether the likelihood is conjugate to the Gaussian belief (additive Gaussian
        noise, ν = ∞), so that a linear model's update is the exact posterior."""
        return self.additive_noise and self.obs_dof == float("inf")

    @property
    def takes_dof(self):
        """Whether the noise is a Student-t scale mixture whose ν the user sets."""
        return self.obs_dof != float("inf")


def _gauss_log_prob(y, f, obs_var):
    var = jnp.broadcast_to(obs_var, f.shape)
    return -0.5 * jnp.sum((y - f) ** 2 / var + jnp.log(2 * jnp.pi * var))


def _gauss_grad(y, f, obs_var):
    return (y - f) / obs_var


def _gauss_factor(f, obs_var):
    return jnp.diag(jnp.broadcast_to(obs_var, f.shape) ** -0.5)


def _gauss_coef(y, f, obs_var):
    return (y - f) * jnp.broadcast_to(obs_var, f.shape) ** -0.5


def _bern_log_prob(y, f, obs_var):
    # y log σ(f) + (1 − y) log σ(−f), stable for large |f|
    return jnp.sum(y * f - jnp.logaddexp(0.0, f))


def _bern_grad(y, f, obs_var):
    # y − σ(f) = y σ(−f) − (1 − y) σ(f): no cancellation in 1 − σ(f) for large f
    return y * jax.nn.sigmoid(-f) - (1.0 - y) * jax.nn.sigmoid(f)


def _bern_factor(f, obs_var):
    # p (1 − p) = σ(f) σ(−f), accurate to a few ulps even where 1 − σ(f) would cancel
    return jnp.diag(jnp.sqrt(jax.nn.sigmoid(f) * jax.nn.sigmoid(-f)))


def _bern_coef(y, f, obs_var):
    # (y − p) / √(p(1 − p)) = y e^{−f/2} − (1 − y) e^{f/2}, since p / (1 − p) = e^f
    return y * jnp.exp(-0.5 * f) - (1.0 - y) * jnp.exp(0.5 * f)


def _cat_log_prob(y, f, obs_var):
    return jnp.sum(y * jax.nn.log_softmax(f))


def _cat_grad(y, f, obs_var):
    # ∇_f Σ_c y_c log softmax(f)_c = y − p Σ_c y_c  (= y − p for one-hot y)
    return y - jax.nn.softmax(f) * jnp.sum(y)


def _cat_factor(f, obs_var):
    # S = diag(√p) − p √pᵀ gives S Sᵀ = diag(p) − p pᵀ exactly.
    p = jax.nn.softmax(f)
    r = jnp.sqrt(p)
    return jnp.diag(r) - jnp.outer(p, r)


def _cat_coef(y, f, obs_var):
    # u = ∇ / √p: S u = ∇ − p Σ_c ∇_c = ∇ because Σ_c ∇_c = 0; y / √p from log p
    log_p = jax.nn.log_softmax(f)
    return y * jnp.exp(-0.5 * log_p) - jnp.exp(0.5 * log_p) * jnp.sum(y)


def _pois_log_prob(y, f, obs_var):
    return jnp.sum(y * f - jnp.exp(f) - jax.scipy.special.gammaln(y + 1.0))


def _pois_grad(y, f, obs_var):
    return y - jnp.exp(f)


def _pois_factor(f, obs_var):
    return jnp.diag(jnp.exp(0.5 * f))


def _pois_coef(y, f, obs_var):
    return y * jnp.exp(-0.5 * f) - jnp.exp(0.5 * f)


def _gauss_cond_moments(f, obs_var):
    return f, jnp.broadcast_to(obs_var, f.shape)


def _gauss_gauss_moments(m, v, obs_var):
    return m, v + obs_var


def _bern_class_log_prob(f):
    # log σ(∓f) = −log(1 + e^{−|f|}) − max(±f, 0): both classes from one exp and one
    # log1p per logit (two log-sigmoids cost twice that in a one-row predict_proba).
    soft = jnp.log1p(jnp.exp(-jnp.abs(f)))
    return jnp.concatenate([-soft - jnp.maximum(f, 0.0), -soft - jnp.maximum(-f, 0.0)], axis=-1)


def _pois_cond_moments(f, obs_var):
    rate = jnp.exp(f)
    return rate, rate


def _pois_gauss_moments(m, v, obs_var):
    # f ~ N(m, v): E[e^f] = e^{m + v/2} (the log-normal mean) and
    # Var[y] = E[Var(y | f)] + Var[E(y | f)] = E[e^f] + (e^v − 1) E[e^f]²
    rate = jnp.exp(m + 0.5 * v)
    return rate, rate + jnp.expm1(v) * rate**2


LIKELIHOODS = {
    "gaussian": Likelihood(
        "gaussian",
        _gauss_log_prob,
        _gauss_grad,
        _gauss_factor,
        _gauss_coef,
        lambda f: f,
        cond_moments=_gauss_cond_moments,
        gauss_moments=_gauss_gauss_moments,
        additive_noise=True,
        split_exact=True,
    ),
    "bernoulli": Likelihood(
        "bernoulli",
        _bern_log_prob,
        _bern_grad,
        _bern_factor,
        _bern_coef,
        jax.nn.sigmoid,
        class_log_prob=_bern_class_log_prob,
    ),
    "categorical": Likelihood(
        "categorical",
        _cat_log_prob,
        _cat_grad,
        _cat_factor,
        _cat_coef,
        lambda f: jax.nn.softmax(f, axis=-1),
        class_log_prob=lambda f: jax.nn.log_softmax(f, axis=-1),
    ),
    "poisson": Likelihood(
        "poisson",
        _pois_log_prob,
        _pois_grad,
        _pois_factor,
        _pois_coef,
        jnp.exp,
        cond_moments=_pois_cond_moments,
        gauss_moments=_pois_gauss_moments,
        guarded=True,
    ),
    "student_t": Likelihood("student_t", **student_t.fields(student_t.DOF)),
}


def resolve(name, obs_dof=None):
    """The likelihood ``name`` of :data:`LIKELIHOODS`, or with ``obs_dof`` the Student-t of
    ν = ``obs_dof`` degrees of freedom (``name`` must then be ``"student_t"``).

    Equal ν give one object (cached), so that every read of :attr:`.config.Config.impl`
    finds the same functions; the jitted programs are keyed by the configuration, which
    carries ν (:class:`~.config.Config`), so each ν compiles once.
    """
    if obs_dof is None:
        return LIKELIHOODS[name]
    if name != "student_t":
        raise ValueError(f"obs_dof applies to likelihood='student_t' only, not {name!r}")
    return _student_t(student_t.check_dof(obs_dof, "obs_dof"))


@functools.lru_cache(maxsize=64)
def _student_t(nu):
    if nu == student_t.DOF:
        return LIKELIHOODS["student_t"]
    return Likelihood("student_t", **student_t.fields(nu))
