"""The regression face of an estimator with a Gaussian belief: target encoding, the
learned or fixed noise, and the posterior predictive of y (Student-t mixtures).

A face is a set of functions of the estimator ``est``. An estimator composes its face by
naming them in its class body (``predict = regression_face.predict``, its hooks
``_encode_y = regression_face.encode_y``, ...), so that its file lists every method it
has and where it comes from. The functions read the estimator's belief through
:mod:`skbong._core.posterior` (``est._components()``, ``est._predict_rows``,
``est._draw_outputs``) and two facts the estimator supplies: ``est._likelihood(C)`` /
``est._likelihood(C)`` with, for a likelihood that takes one, ``est.dof`` (the
observation model) and ``est._obs_variance_in_use(Y, first)`` (the noise variance of the
next update).
"""

import numpy as np
import scipy.special
import scipy.stats
from sklearn.utils.validation import _num_samples

from .. import engine
from .._core import inputs as _inputs
from .._core.posterior import _check_fitted
from . import calibration as _calibration

Y_NUMERIC = True
"""Targets are numbers (``validate_data(y_numeric=True)``)."""


def predictive_kind(est):
    """The predictive in use: ``"auto"`` is ``"linmc"`` (parameter uncertainty in
    every interval, closed form)."""
    return "linmc" if est.predictive == "auto" else est.predictive


def tags(est, tags):
    """scikit-learn's tags of a regressor of (possibly several) real targets."""
    tags.target_tags.multi_output = True
    tags.regressor_tags.poor_score = est._poor_score()
    return tags


def likelihood(est, n_outputs):
    return "gaussian"


def encode_y(est, y, first):
    y = np.asarray(y, dtype=np.float64)
    if not first and (y.ndim == 2) != est._multi_output:
        raise ValueError(
            f"y has {y.ndim} dimension(s) but the estimator was fitted with "
            f"{2 if est._multi_output else 1}-dimensional y"
        )
    Y = y.reshape(y.shape[0], -1)
    if not first and Y.shape[1] != est._n_out:
        raise ValueError(
            f"y has {Y.shape[1]} outputs but the estimator was fitted with {est._n_out}"
        )
    if not np.all(np.isfinite(Y)):
        raise ValueError("Input y contains NaN or infinity")
    if first:
        est._multi_output = y.ndim == 2
    return Y, Y.shape[1], est._obs_variance_in_use(Y, first)


def obs_variance(est):
    """Observation noise variance in use, shape (n_outputs,): the fixed
    ``obs_variance``, or the learned plug-in b / a = 1 / E[σ⁻²] (with
    a prior bank, averaged over the bank with its weights)."""
    _check_fitted(est)
    if est._noise is None:
        return est._obs_var
    return sum(wt * nz[1].astype(np.float64) / nz[0] for wt, _, nz in est._components())


def noise_dof(est):
    """Degrees of freedom of the Student-t predictive per output, shape (n_outputs,):
    2a of the learned noise (``inf`` when the noise is fixed); with
    ``likelihood="student_t"`` of ν degrees of freedom, min(ν, 2a) (ν when fixed)."""
    _check_fitted(est)
    if est._noise is not None:  # a grows by half the weight of each row in every filter
        return tail_dof(est, est._noise[0].astype(np.float64).reshape(-1, est._n_out)[0])
    return tail_dof(est, None) * np.ones(est._n_out)


def learns_noise(est):
    """Whether the noise variance is learned (``obs_variance="auto"``)."""
    return isinstance(est.obs_variance, str)


def obs_dof(est):
    """ν of the likelihood's noise: ``inf`` for the Gaussian; for a likelihood that
    takes one (the Student-t) the estimator's ``dof``, which applies from the next
    prediction and update."""
    lik = engine.likelihoods.LIKELIHOODS[est._likelihood(getattr(est, "_n_out", 1))]
    return engine.likelihoods.resolve(lik.name, est.dof).obs_dof if lik.takes_dof else lik.obs_dof


def tail_dof(est, dof):
    """The predictive's degrees of freedom from the learned noise's shape a (``dof``;
    None when the noise is fixed): min(ν, 2a), ν the likelihood's (``inf`` for the
    Gaussian; :func:`skbong.engine.filter.noise.predictive_dof`)."""
    nu = obs_dof(est)
    return nu if dof is None else np.minimum(2.0 * np.asarray(dof, np.float64), nu)


def linear_attributes(est, weights, bias):
    if est._multi_output:
        return weights, bias
    return weights[0], float(bias[0])


def _shape_output(est, a):
    return a if est._multi_output else a[:, 0]


def noise_variance(est, noise):
    """A component's noise variance ŝ: the fixed one, or b / a of its learned noise."""
    return est._obs_var if noise is None else noise[1] / noise[0]


def mixture(est, X, kind, grad=False, validated=False, static_only=False):
    """The predictive of y at X under ``kind`` as a mixture of Student-t / Gaussian
    components (one, or one per bank filter): weights (K,), locations and squared
    scales (K, n, C) float64 — scale² J Σ Jᵀ + ŝ (linmc), Var f + ŝ (mc) or ŝ (plugin)
    — and degrees of freedom (K, C) (``inf`` for a fixed noise). ``grad=True`` adds
    the input gradients of the locations and squared scales, (K, n, C, D) each.
    ``validated=True``: X is rows the estimator has checked (its calibration window);
    ``static_only``: the bank's filters of drift 1 only."""
    _check_fitted(est)
    moments = engine.predictive.predict_moments_grad if grad else engine.predict_moments
    n_samples = int(est.predictive_samples)
    dt = est._jax_dtype()
    weights, dofs, outs = [], [], []
    for wt, state, noise in est._components(static_only):
        obs_var = noise_variance(est, noise)
        hyper = engine.Hyper(None, np.asarray(obs_var, dt), None, None, None)
        out = est._predict_rows(
            X,
            lambda cfg, st, x, key, thetas=None, hyper=hyper: moments(
                cfg, st, hyper, x, key, kind, n_samples, thetas
            ),
            state=state,
            sampled=kind == "mc",
            validated=validated,
            jacobians=(1 + est.n_features_in_ if grad else 1) if kind == "linmc" else 0,
        )
        weights.append(wt)
        outs.append(out)
        dofs.append(tail_dof(est, None if noise is None else noise[0]))
    locs, scales, *grads = (np.array(a, np.float64) for a in zip(*outs))
    grads = [_inputs.raw_gradient(est, g) for g in grads]  # ∂/∂x = (∂/∂x̃) / s
    dofs = np.array(dofs, np.float64).reshape(len(dofs), -1) * np.ones(est._n_out)  # (K, C)
    return (np.array(weights), locs, scales, dofs, *grads)


def predict(est, X, return_std=False, return_mean_grad=False, return_std_grad=False):
    """Posterior predictive mean and standard deviation of y, and their input gradients.

    The signature and return conventions are those of scikit-optimize's
    ``GaussianProcessRegressor.predict``, so the estimator can be the surrogate of its
    ``Optimizer`` with the default ``acq_optimizer="lbfgs"``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs; a single row when gradients are asked for.
    return_std : bool, default=False
        Also return the predictive standard deviation of y under ``predictive``:
        parameter uncertainty and observation noise (the ``BayesianRidge``
        convention). With the learned noise (``obs_variance="auto"``) or
        ``likelihood="student_t"`` the predictive is a Student-t with ``noise_dof_``
        degrees of freedom ν, whose standard deviation is its scale times
        √(ν / (ν − 2)); with a prior bank
        it is the mixture over the bank's prior variances.
    return_mean_grad : bool, default=False
        Also return the gradient of the returned mean with respect to the input
        (exact, by JAX's automatic differentiation of the same computation).
    return_std_grad : bool, default=False
        Also return the gradient of the returned standard deviation with respect
        to the input; needs ``return_std=True``.

    Returns
    -------
    mean : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Predictive mean: f(x, μ) without ``return_std`` (and under ``plugin`` and
        ``linmc``), the mean over the parameter samples under ``mc``.
    std : ndarray, same shape as ``mean``
        Predictive standard deviation; only when ``return_std=True``.
    mean_grad : ndarray of shape (n_features,) or (n_outputs, n_features)
        ∂ mean / ∂ x at the single row of X; only when ``return_mean_grad=True``.
    std_grad : ndarray of shape (n_features,) or (n_outputs, n_features)
        ∂ std / ∂ x at the single row of X; only when ``return_std_grad=True``.
    """
    grad = return_mean_grad or return_std_grad
    if return_std_grad and not return_std:
        raise ValueError("return_std_grad=True needs return_std=True")
    if grad and _num_samples(X) != 1:
        raise ValueError(
            f"input gradients are given for a single row of X; got {_num_samples(X)} rows"
        )
    kind = predictive_kind(est) if return_std else "plugin"
    weights, locs, scales, dofs, *grads = mixture(est, X, kind, grad=grad)
    one = len(weights) == 1
    mean = locs[0] if one else np.einsum("k,knc->nc", weights, locs)
    out = [_shape_output(est, mean)]
    if return_std:
        # Var of a Student-t of ν degrees of freedom: its scale² × ν / (ν − 2), written
        # 1 / (1 − 2/ν) so that ν = ∞ (a fixed noise) gives 1; ∞ for ν ≤ 2
        with np.errstate(divide="ignore"):
            inflate = np.where(dofs > 2, 1.0 / (1.0 - 2.0 / dofs), np.inf)[:, None, :]
        if one:  # no cancellation for one component
            std = np.sqrt(scales[0] * inflate[0])
        else:
            second = np.einsum("k,knc->nc", weights, scales * inflate + locs**2)
            std = np.sqrt(np.maximum(second - mean**2, 0.0))
        out.append(_shape_output(est, std))
    if grad:
        mean_grad = np.einsum("k,kncd->ncd", weights, grads[0])
        if return_mean_grad:
            out.append(_shape_grad(est, mean_grad))
        if return_std_grad:
            out.append(_shape_grad(est, _std_grad(weights, locs, inflate, grads, std)))
    return out[0] if len(out) == 1 else tuple(out)

@staticmethod


def _std_grad(weights, locs, inflate, grads, std):
    """∂ std / ∂ x by the chain rule through ``predict``'s mixture moments:
    std² = Σₖ wₖ (inflateₖ scaleₖ² + locₖ²) − mean², from the gradients of the
    components' locations and squared scales (K, n, C, D); 0 where std = 0."""
    loc_grad, scale_grad = grads
    mean = np.einsum("k,knc->nc", weights, locs)
    mean_grad = np.einsum("k,kncd->ncd", weights, loc_grad)
    second_grad = np.einsum(
        "k,kncd->ncd", weights, inflate[..., None] * scale_grad + 2 * locs[..., None] * loc_grad
    )
    var_grad = second_grad - 2 * mean[..., None] * mean_grad
    if len(weights) == 1:  # the same without the cancelling terms
        var_grad = inflate[0][..., None] * scale_grad[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(std[..., None] > 0, var_grad / (2 * std[..., None]), 0.0)


def _shape_grad(est, g):
    """A gradient of the single row, (1, C, D), as scikit-optimize's GP gives it:
    (D,) for one-dimensional targets, else (C, D)."""
    return g[0] if est._multi_output else g[0, 0]


def predict_interval(est, X, coverage=0.9):
    """Central predictive interval of y holding probability ``coverage``.

    Student-t quantiles with ``noise_dof_`` degrees of freedom when the noise is
    learned or Student-t, Gaussian ones when it is fixed and Gaussian, on the location
    and squared scale of ``predictive``
    (exact for ``linmc`` on a linear model; moment-matched for ``mc``); with
    a prior bank the quantiles of the bank's mixture (by bisection).
    With the interval calibration (``calibration``) the quantiles are taken at the
    levels that the calibration set's PITs map the tail probabilities to (the kept
    rows' leave-one-out PITs, or the prequential ones; :mod:`skbong._online.calibration`):
    intervals that cover what they claim where the model is misspecified.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs.
    coverage : float in (0, 1), default=0.9
        Probability inside the interval.

    Returns
    -------
    lower, upper : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Interval ends.
    """
    if not 0 < coverage < 1:
        raise ValueError(f"coverage must be in (0, 1), got {coverage!r}")
    weights, locs, scales, dofs = mixture(est, X, predictive_kind(est))
    dist = scipy.stats.t(dofs[:, None, :], loc=locs, scale=np.sqrt(scales))
    tail = 0.5 - 0.5 * coverage
    levels = np.array([tail, 1 - tail])[:, None]  # (2, C) after calibration
    counts = calibration_counts(est)
    if counts is not None:
        levels = np.stack([_calibration.levels(counts, q) for q in (tail, 1 - tail)])
    ends = [dist.ppf(levels[0]), dist.ppf(levels[1])]
    if len(weights) > 1:  # the mixture's quantiles lie between its components'
        ends = [_mixture_quantile(dist, weights, q, e) for q, e in zip(levels, ends)]
    else:
        ends = [e[0] for e in ends]
    return _shape_output(est, ends[0]), _shape_output(est, ends[1])


def calibration_counts(est):
    """The PIT histogram that calibrates the intervals (:mod:`skbong._online.calibration`),
    or ``None``: the prequential one, or the leave-one-out PITs of the kept rows under
    the current belief, computed at the first call after an update and kept until the
    next (every update, reset and merge drops it; the key is the predictive kind).

    With ``drift="auto"`` and ``calibration="auto"`` the estimator keeps both, and the
    bank's evidence chooses: while the static filters (drift 1) hold most of the
    weight (``drift_`` is 1) the rows look exchangeable, and the leave-one-out PITs
    under the static filters' mixture calibrate; otherwise the prequential ones do.
    An explicit ``calibration="loo"`` takes the leave-one-out PITs of the whole
    mixture."""
    if getattr(est, "calibration", None) is None:
        return None
    window = getattr(est, "_window", None)
    prequential = getattr(est, "_pit_counts", None)
    if window is None:
        return prequential
    static_only = est._bank_spec().learns_drift and prequential is not None  # both kept
    if static_only and est.drift_ != 1.0:
        return prequential  # the evidence says the rows drift
    kind = predictive_kind(est)  # the cache's key; every change of the belief drops it
    cached = getattr(est, "_loo_cache", None)
    if cached is not None and cached[0] == kind:
        return cached[1]
    X, Y, w = _calibration.kept_rows(window, int(est.calibration_rows))
    weights, locs, scales, dofs = mixture(est, X, kind, validated=True, static_only=static_only)
    noise_var = [noise_variance(est, noise) for _, _, noise in est._components(static_only)]
    pit = _calibration.loo_pit(Y, weights, locs, scales, np.array(noise_var), dofs, w)
    counts = _calibration.add(None, pit, w, est._n_out)
    est._loo_cache = (kind, counts)
    return counts

@staticmethod


def _mixture_quantile(dist, weights, q, component_quantiles):
    lo, hi = component_quantiles.min(axis=0), component_quantiles.max(axis=0)
    for _ in range(60):  # bisection to float64 resolution of the bracket
        mid = 0.5 * (lo + hi)
        below = np.einsum("k,knc->nc", weights, dist.cdf(mid[None])) < q
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def predict_logpdf(est, X, y):
    """Log posterior predictive density of each target, log p(y | x, data).

    Student-t (learned noise) or Gaussian (fixed noise) on the moments of
    ``predictive`` (a mixture over the bank with a prior bank);
    summed over outputs.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs.
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Targets.

    Returns
    -------
    logpdf : ndarray of shape (n_samples,)
        Log densities (nats).
    """
    weights, locs, scales, dofs = mixture(est, X, predictive_kind(est))
    Y = np.asarray(y, dtype=np.float64).reshape(locs.shape[1], -1)
    if Y.shape[1] != locs.shape[2]:
        raise ValueError(f"y has {Y.shape[1]} outputs, the estimator {locs.shape[2]}")
    dist = scipy.stats.t(dofs[:, None, :], loc=locs, scale=np.sqrt(scales))
    per = dist.logpdf(Y[None]).sum(axis=2)  # (K, n)
    return scipy.special.logsumexp(per, axis=0, b=weights[:, None])


def sample_y(est, X, n_samples=1, random_state=None):
    """Draw y from the posterior predictive: θ ~ q, σ² ~ IG(a, b) (learned noise),
    then y ~ N(f(x, θ), σ²), or with ``likelihood="student_t"`` y ~ N(f(x, θ), σ² / λ),
    λ ~ Gamma(ν / 2, ν / 2) per row (a Student-t of squared scale σ²). With the same
    ``random_state``, the draws of :meth:`sample_f` plus the noise.

    Parameters
    ----------
    X : array-like of shape (n_samples_X, n_features)
        Inputs.
    n_samples : int, default=1
        Draws per row.
    random_state : int, RandomState instance or None, default=None
        Seed of the draws.

    Returns
    -------
    y_samples : ndarray of shape (n_samples_X, n_samples) or (n_samples_X, n_outputs, n_samples)
        Draws; one parameter sample is shared by all rows of a draw.
    """
    rng, draws = est._draw_outputs(X, n_samples, random_state)
    samples = []
    for noise, f in draws:
        if noise is not None:  # σ² ~ IG(a, b) per draw and output, shared by the rows
            dof, rate = (a.astype(np.float64) for a in noise)
            var = 1.0 / rng.gamma(dof[:, None], 1.0 / rate[:, None], size=f.shape[1:])
        else:
            var = np.broadcast_to(est._obs_var[:, None], f.shape[1:])
        nu = obs_dof(est)
        if np.isfinite(nu):  # the Student-t's scale mixture, one λ per value
            var = var[None] / rng.gamma(0.5 * nu, 2.0 / nu, size=f.shape)
        samples.append(f + rng.standard_normal(f.shape) * np.sqrt(var))
    samples = np.concatenate(samples, axis=-1)
    return samples if est._multi_output else samples[:, 0, :]


def sample_f(est, X, n_samples=1, random_state=None):
    """Draw noise-free function values f(x, θ), θ ~ q, from the posterior.

    The draws of :meth:`sample_y` without the observation noise: with the same
    ``random_state`` they use the same parameter draws, so ``sample_y`` returns these
    values plus independent noise. For the linear model with the fixed noise, the
    draws of a set of rows are exactly the posterior of f, N(f(x, μ), J Σ Jᵀ); with
    a prior bank each draw comes from one filter of the bank, chosen
    with its weight. With the learned noise θ is drawn from the Gaussian belief q
    (with the coupled ``noise_posterior``, its covariance at the plug-in noise
    ``obs_variance_``), so the draws do not
    carry the Student-t factor ν / (ν − 2) that ``predict`` applies to J Σ Jᵀ.

    Parameters
    ----------
    X : array-like of shape (n_samples_X, n_features)
        Inputs.
    n_samples : int, default=1
        Draws per row.
    random_state : int, RandomState instance or None, default=None
        Seed of the draws.

    Returns
    -------
    f_samples : ndarray of shape (n_samples_X, n_samples) or (n_samples_X, n_outputs, n_samples)
        Draws; one parameter sample is shared by all rows of a draw.
    """
    _, draws = est._draw_outputs(X, n_samples, random_state)
    samples = np.concatenate([f for _, f in draws], axis=-1)
    return samples if est._multi_output else samples[:, 0, :]
