"""The observation model's choices an online estimator hands its engine configuration.

Each BONG estimator names one function ``_observation(model)`` in its class body that
returns an :class:`Observation` for the engine model it is about to build: the regressor
derives it from its noise and calibration parameters
(:meth:`skbong.BongRegressor._observation`), and the estimators whose likelihood has no
noise to learn (the classifier, the Poisson regressor) name :func:`fixed`.
:class:`~skbong._online.base.BongBase` reads the record and never supplies a default.
"""

from typing import NamedTuple

AUTO_FULL_MAX = 128
"""The most parameters of a linear classifier or Poisson regressor for which
``family="auto"`` takes the full covariance. With the default prior bank, on nine sets of
11–121 parameters (iris and wine three-class, the rest binary) the full covariance's test
log-loss was lower than the rank-10 dlr's on six and at most 0.007 higher on the other
three, at 2.5–34 times less fit time; on digits (650 parameters, ten classes) it took 50
times the dlr's time (doc: defaults)."""


class Observation(NamedTuple):
    """What an estimator's observation model decides for one engine model.

    Attributes
    ----------
    learn_noise : bool
        Whether the noise variance is learned online (``Config.learn_noise``).
    noise_discount : float
        δ of the learned noise per row (``Config.noise_discount``; 1 where it is fixed).
    noise_coupled : bool
        Whether the learned noise keeps the coupled normal–inverse-gamma belief
        (``Config.noise_coupled``).
    obs_dof : float or None
        ν of a Student-t likelihood (``Config.obs_dof``; ``None``: the likelihood's own).
    pit : {None, "plugin", "linmc"}
        The predictive whose probability integral transforms the stream reports for the
        interval calibration (``Config.pit``; ``None``: none).
    window_rows : int
        How many of the last learned rows the leave-one-out calibration keeps (0: none).
    full_max : int
        ``family="auto"``: the most parameters of a linear model given the full
        covariance (beyond it, and for networks, the dlr family).
    """

    learn_noise: bool = False
    noise_discount: float = 1.0
    noise_coupled: bool = True
    obs_dof: float | None = None
    pit: str | None = None
    window_rows: int = 0
    full_max: int = AUTO_FULL_MAX


def fixed(est, model):
    """The observation of a likelihood with no noise to learn and no interval to
    calibrate (Bernoulli, categorical, Poisson): nothing to choose."""
    return Observation()


__all__ = ["AUTO_FULL_MAX", "Observation", "fixed"]
