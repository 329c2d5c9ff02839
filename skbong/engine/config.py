"""The static configuration of a BONG-family learner, and the checking of its names.

Anything that changes shapes or code paths lives in :class:`Config` (static under
``jax.jit``, hashable); its names (``likelihood``, ``family``, ``rule``, ``hessian``) are
checked once, here (:func:`check_names`), against the registries that own their facts,
and :attr:`Config.impl` hands the engine the registry objects themselves. The
registries build on :mod:`.types` and never import this module.
"""

from dataclasses import dataclass
from typing import Any, NamedTuple

from ._store import fields_token
from .families import FAMILIES
from .filter.curvature import ESTIMATORS, LINEAR_GAUSSIAN_EXACT
from .filter.rules import RULES
from .likelihoods import LIKELIHOODS, resolve

__all__ = ["Config", "Impl", "check_names"]


def check_names(likelihood=None, family=None, rule=None, hessian=None, learning_rate=None):
    """Raise ``ValueError`` naming the first unknown choice or unavailable pair.

    The registries (:data:`~.likelihoods.LIKELIHOODS`, :data:`~.families.FAMILIES`,
    :data:`~.rules.RULES`, :data:`~.curvature.ESTIMATORS`) are the only source of the
    names, and this is the only place that says which pairs do not exist: MC-HESS needs
    a family that can hold a dense or diagonal Hessian (``Family.hess_kind``), which the
    low-rank family cannot (the paper omits it, appendix E.5); and a natural rule with
    the KL term (BLR) needs a ``learning_rate`` in (0, 1], its step being a convex
    combination of the current and prior precisions. ``None`` skips a choice.
    """
    for name, value, registry in (
        ("likelihood", likelihood, LIKELIHOODS),
        ("family", family, FAMILIES),
        ("rule", rule, RULES),
        ("hessian", hessian, ESTIMATORS),
    ):
        if value is not None and value not in registry:
            raise ValueError(f"{name}={value!r} is not one of {tuple(registry)}")
    if hessian == "mc_hess" and family is not None and FAMILIES[family].hess_kind is None:
        raise ValueError(
            f"hessian='mc_hess' is not available with family={family!r}: a dense or diagonal "
            "Hessian cannot be projected onto its low-rank precision (the paper omits MC-HESS "
            "for it, appendix E.5); use 'lin_hess', 'lin_ef' or 'mc_ef'"
        )
    natural_kl = rule is not None and RULES[rule].natural and RULES[rule].kl
    if natural_kl and learning_rate is not None and learning_rate > 1:
        raise ValueError(
            f"learning_rate={learning_rate} must be in (0, 1] for rule={rule!r} (the natural "
            "step is a convex combination of the current and prior precisions)"
        )



class Impl(NamedTuple):
    """The registry objects a :class:`Config` names (see :attr:`Config.impl`)."""

    family: Any
    likelihood: Any
    rule: Any
    estimate: Any


@dataclass(frozen=True)
class Config:
    """Static configuration of a BONG-family learner (hashable; a ``jit`` static argument).

    Parameters
    ----------
    model : MLP or UserModel
        The model f(θ, X).
    likelihood : str
        ``gaussian``, ``bernoulli``, ``categorical``, ``poisson`` or ``student_t``.
    family : str
        ``full``, ``full_moment``, ``diag``, ``diag_moment`` or ``dlr``.
    rank : int
        R, the rank of the low-rank precision part (``dlr`` only).
    rule : str
        ``bong``, ``bog``, ``blr`` or ``bbb``.
    hessian : str
        ``lin_hess``, ``lin_ef``, ``mc_ef`` or ``mc_hess``.
    n_iter : int
        I, inner steps of ``blr`` and ``bbb``.
    mc_samples : int
        M, samples of the MC estimators.
    dynamic : bool
        Whether the predict step (drift / process noise) runs. With ``False`` (γ = 1,
        q = 0) it is skipped entirely.
    learn_noise : bool
        Whether the Gaussian noise variance is learned online (:mod:`.noise`): the
        stream's state is then the pair ``(belief, NoiseState)`` and ``Hyper.obs_var``
        is ignored by the update.
    noise_discount : float
        δ ∈ (0, 1], the discount of the learned noise's old evidence per step
        (:mod:`.noise`); 1 is the conjugate update. Used only with ``learn_noise``.
    noise_coupled : bool
        With ``learn_noise``: ``True`` keeps the normal–inverse-gamma coupling
        θ | σ² ~ N(μ, σ² V), the covariance rescaled by ŝ' / ŝ after each step (exact for
        the linear model); ``False`` keeps the factorised belief q(θ) q(σ²) of the
        variational-Bayes adaptive Kalman filter, whose covariance the noise never
        rescales (:mod:`.noise`, "coupled or factorised").
    backtrack : int
        Step halvings allowed per (inner) step: where a step would leave an invalid
        belief (non-finite, a non-positive variance, or for the dense families a
        covariance that is not positive definite), it is retaken with half the rate, up
        to ``backtrack`` times (:func:`.rules.update`). 0 is the published algorithm.
    evidence : bool
        Whether the stream reports each row's log predictive density with parameter
        uncertainty (Gaussian likelihood: the linearised predictive, exact in the
        conjugate case) instead of the plugin log-likelihood: the online evidence that
        weights a bank of prior variances.
    pit : str or None
        ``None``: the stream's per-row output is the plugin output f(x, μ). ``"linmc"``
        or ``"plugin"`` (a likelihood with additive Gaussian noise): it is each target's
        standardised residual z = (y − f) / scale under that one-step predictive, the
        belief's before the row, from which the estimators compute the probability
        integral transform u = F(z) (Student-t with learned noise, Gaussian with a
        fixed one) and calibrate their intervals.
    obs_dof : float or None
        ν, the degrees of freedom of ``likelihood="student_t"``: any positive finite
        value; ``None`` there is :data:`~.student_t.DOF` (stored as that number, so that
        equal ν make equal configurations and share their compiled programs). ``None``
        for every other likelihood.
    """

    model: Any
    likelihood: str = "gaussian"
    family: str = "dlr"
    rank: int = 10
    rule: str = "bong"
    hessian: str = "lin_hess"
    n_iter: int = 10
    mc_samples: int = 10
    dynamic: bool = False
    learn_noise: bool = False
    noise_discount: float = 1.0
    noise_coupled: bool = True
    evidence: bool = False
    backtrack: int = 0
    pit: str | None = None
    obs_dof: float | None = None

    def __post_init__(self):
        check_names(self.likelihood, self.family, self.rule, self.hessian)
        nu = self.impl.likelihood.obs_dof  # checks obs_dof (:func:`.likelihoods.resolve`)
        if nu != float("inf"):  # ν as the float it resolved to (frozen: set once, here)
            object.__setattr__(self, "obs_dof", nu)
        for name in ("rank", "n_iter", "mc_samples"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.backtrack, int) or isinstance(self.backtrack, bool) or self.backtrack < 0:
            raise ValueError(f"backtrack must be a non-negative integer, got {self.backtrack!r}")
        if not (isinstance(self.noise_discount, float) and 0.0 < self.noise_discount <= 1.0):
            raise ValueError(
                f"noise_discount must be a float in (0, 1], got {self.noise_discount!r}"
            )
        if not isinstance(self.noise_coupled, bool):
            raise ValueError(f"noise_coupled must be a bool, got {self.noise_coupled!r}")
        if self.pit not in (None, "linmc", "plugin"):
            raise ValueError(f"pit must be None, 'linmc' or 'plugin', got {self.pit!r}")
        if self.pit is not None and not self.impl.likelihood.additive_noise:
            raise ValueError(
                f"pit applies to a likelihood with additive Gaussian noise, not {self.likelihood!r}"
            )
        if self.learn_noise and not self.impl.likelihood.additive_noise:
            raise ValueError(
                f"learn_noise applies to a likelihood with additive Gaussian noise, "
                f"not {self.likelihood!r}"
            )

    @property
    def kalman_step(self):
        """Whether one update is the linearised Kalman step: a unit-rate natural rule
        without the KL term (BONG) with an estimator exact for the linear-Gaussian model
        (:data:`~.filter.curvature.LINEAR_GAUSSIAN_EXACT`); on a linear model with the
        conjugate likelihood and an exactly conditioning family it is the exact
        posterior (the paper's Proposition 4.1)."""
        rule = self.impl.rule
        return rule.natural and rule.unit_rate and not rule.kl and self.hessian in LINEAR_GAUSSIAN_EXACT

    def cache_token(self):
        """A stable text of this object for skbong's on-disk program cache (its class and
        fields), or ``None`` where a field has none (:func:`.program.program`)."""
        return fields_token(self)

    @property
    def impl(self):
        """The :class:`Impl` of the family, likelihood, rule and curvature estimator this
        configuration names: the engine reads every one of them from here, never from a
        registry by name (the names were checked once, on construction)."""
        return Impl(
            FAMILIES[self.family],
            resolve(self.likelihood, self.obs_dof),
            RULES[self.rule],
            ESTIMATORS[self.hessian],
        )
