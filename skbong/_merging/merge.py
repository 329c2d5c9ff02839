"""Merging posteriors learned independently from one prior (:func:`merge_posteriors`).

Posteriors q₁ … q_K learned from the same prior p on disjoint shards of the data combine
as q ∝ p ∏ₖ qₖ / p, in natural parameters η = η₀ + Σₖ (ηₖ − η₀): exact for a conjugate
model, and otherwise the streaming, distributed variational Bayes rule of Broderick et
al. (2013). For the Gaussian belief N(μ, Λ⁻¹) and the prior N(μ₀, Λ₀⁻¹) this is

    Λ = Λ₀ + Σₖ (Λₖ − Λ₀),        μ = μ₀ + Λ⁻¹ Σₖ Λₖ (μₖ − μ₀)

(the second form of Λμ = Λ₀μ₀ + Σₖ (Λₖμₖ − Λ₀μ₀), in which the prior mean cancels
exactly). Every term is a difference from the prior, so merging is associative: a merge
of merges is the merge of all (a tree reduction, :func:`skbong.fit_partitions`).

The learned noise (normal–inverse-gamma, :mod:`skbong.engine.filter.noise`) merges in the units
of the noise: the belief holds Σ = ŝ V with ŝ = b / a, and the conjugate posterior adds
V⁻¹ and V⁻¹μ as above, a = a₀ + Σₖ (aₖ − a₀), and b through the sufficient statistic
yᵀy of each shard, recovered from bₖ, μₖ, Vₖ:

    b = b₀ + Σₖ (bₖ − b₀) + ½ [Σₖ dₖᵀ Vₖ⁻¹ dₖ − dᵀ V⁻¹ d],     dₖ = μₖ − μ₀, d = μ − μ₀.

The prior bank's weights are each filter's online evidence, for the conjugate model the
log marginal likelihood, which merges through the log-partition A of the conjugate
family: log p(D) = Σₖ log p(Dₖ) + [A(η) − A(η₀)] − Σₖ [A(ηₖ) − A(η₀)]. The families
hold their precision differently; each family's record supplies (``merge``, a
:class:`~skbong.engine.families.merging.MergeAlgebra`) the few operations the
merge needs in each.
"""

import copy

import jax
import numpy as np
from sklearn.utils.validation import check_is_fitted

from .. import engine
from .._core.guard import _check_not_forked
from .._online import calibration as _calibration
from .._online.stream import _is_sound
from ..exceptions import NonFiniteUpdateError
from .algebra import Prior, merge_evidence, merge_gaussians, merge_noise
from .checks import _check_together, check_mergeable, check_online


def _filters(est):
    """The belief as a list of ``(state, noise)`` per filter (one without the bank)."""
    if est._log_evidence is None:
        return [(est._state, est._noise)]
    return [
        (tuple(a[k] for a in est._state), None if est._noise is None else tuple(a[k] for a in est._noise))
        for k in range(len(est._log_evidence))
    ]


def _as64(parts):
    return None if parts is None else tuple(np.asarray(a, np.float64) for a in parts)


def _rescale(family, state, c):
    """The same mean with the covariance × c, by the family's own ``scale``."""
    with jax.enable_x64(True):
        return _as64(family.scale(family.state_type(*state), np.float64(c)))


def _noise_scale(noise):
    """ŝ = b / a of the one output's learned noise; 1 for a fixed noise."""
    return 1.0 if noise is None else float(noise[1][0] / noise[0][0])


def _merge_filter(config, prior, beliefs, log_evidences):
    """Merge one filter's beliefs ``[(state, noise)]`` (float64) from the ``prior``; returns the merged ``(state, noise)`` and log evidence (None
    without the bank)."""
    family = config.impl.family
    noises = [n for _, n in beliefs]
    learned = noises[0] is not None
    # the learned noise merges in its own units: V = Σ / ŝ, ŝ = b / a (one output)
    states = [_rescale(family, s, 1.0 / _noise_scale(n)) for s, n in beliefs]
    state, excess = merge_gaussians(family.merge, prior, states, config.rank)
    noise0 = noise = None
    if learned:
        # the prior of a fresh fit: IG(a₀, a₀ ŝ₀) with ŝ₀ = 1, so V₀ = Σ₀
        a0 = np.full_like(noises[0][0], engine.filter.noise.PRIOR_DOF)
        noise0 = (a0, a0 * 1.0)
        noise = merge_noise(noise0, noises, excess)
        state = _rescale(family, state, _noise_scale(noise))
    evidence = None
    if log_evidences is not None:
        evidence = merge_evidence(log_evidences, excess, noise0, noises, noise)
    return (state, noise), evidence


def _invalid(family, state, noise):
    """What is wrong with a merged belief, or None (the estimators' own checks)."""
    with jax.enable_x64(state[0].dtype == np.float64):
        valid = bool(family.is_valid(family.state_type(*state)))
    if not valid or not _is_sound(family, state):
        return f"a non-finite, non-positive or not positive-definite precision in {state[0].dtype}"
    if noise is not None and not (np.all(np.isfinite(noise[1])) and np.all(noise[1] > 0)):
        return "a non-positive noise rate b"
    return None


def _merge_valid(first, config, prior, beliefs, log_evidences):
    """:func:`_merge_filter` in the estimator's dtypes; refused unless it is a valid
    belief."""
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            (state, noise), evidence = _merge_filter(config, prior, beliefs, log_evidences)
        state = tuple(a.astype(first._state[0].dtype) for a in state)
        noise = None if noise is None else tuple(a.astype(first._noise[0].dtype) for a in noise)
        problem = _invalid(config.impl.family, state, noise)
    except np.linalg.LinAlgError:  # a Cholesky factorisation of the merged precision failed
        problem = "a precision that is not positive definite"
    if problem:
        raise NonFiniteUpdateError(
            f"the merged posterior has {problem} (family={first.family!r}, rule={first.rule!r}): "
            "a shard's precision fell below the prior's in some direction (possible for "
            "non-conjugate updates), so the sum of natural parameters is not a Gaussian; merge "
            "fewer or larger shards, or use family='dlr' / rule='bong'"
        )
    return (state, noise), evidence


def _stack(parts):
    return None if parts[0] is None else tuple(np.stack(a) for a in zip(*parts))


def merge_fitted(estimators, compare_model=True):
    """:func:`merge_posteriors` of a non-empty list; ``compare_model=False`` skips the
    comparison of the ``model`` parameter, for copies of one estimator that came back
    from other processes (:func:`skbong.fit_partitions`)."""
    _check_not_forked()
    for est in estimators:
        check_online(est)
        check_is_fitted(est, "_state")
        est._config()  # refuses a structural parameter changed since that estimator's fit
    first = estimators[0]
    config = first._config()
    check_mergeable(first, config)
    _check_together(estimators, compare_model)
    bank = first._log_evidence is not None
    # the prior as the estimator built it: N(μ₀, diag(σ₀²)) in its dtype, per filter
    lam0s = 1.0 / np.atleast_2d(first._prior_variances(config)).astype(first._state[0].dtype)
    means = [e._prior_mean.astype(np.float64) for e in estimators]
    shard_means = None if all(np.array_equal(m, means[0]) for m in means) else means
    per_est = [_filters(e) for e in estimators]
    merged, evidence = [], []
    for k, lam0 in enumerate(lam0s.astype(np.float64)):
        logs = [float(e._log_evidence[k]) for e in estimators] if bank else None
        if bank and not np.all(np.isfinite(logs)):  # dropped from the bank in a shard
            merged.append(per_est[0][k])
            evidence.append(-np.inf)
            continue
        beliefs = [tuple(_as64(part) for part in filters[k]) for filters in per_est]
        prior = Prior(means[0], lam0, shard_means)
        belief, ev = _merge_valid(first, config, prior, beliefs, logs)
        merged.append(belief)
        evidence.append(ev)
    out = copy.deepcopy(first)
    out._state, out._noise = merged[0]
    if bank:
        out._state, out._noise = (_stack([b[i] for b in merged]) for i in (0, 1))
        out._log_evidence = np.asarray(evidence, np.float64)
    out.n_observations_ = sum(e.n_observations_ for e in estimators)
    out.n_skipped_ = sum(e.n_skipped_ for e in estimators)
    out._n_steps = sum(e._n_steps for e in estimators)
    counts = [getattr(e, "_pit_counts", None) for e in estimators]
    if any(c is not None for c in counts):  # each shard's PITs are out-of-sample: they pool
        out._pit_counts = sum(c for c in counts if c is not None)
    windows = [w for w in (getattr(e, "_window", None) for e in estimators) if w is not None]
    out._loo_cache = None
    rows = first._observation(config.model).window_rows
    if windows and rows:  # the kept rows of every shard, the last shard's last, as many as one keeps
        kept = (_calibration.kept_rows(w, rows) for w in windows)
        out._window = (tuple(np.array(np.concatenate(a)[-rows:]) for a in zip(*kept)),)
    out._publish(config)
    return out


def merge_posteriors(estimators):
    """Combine estimators fitted on disjoint shards of the data into one.

    Posteriors learned from the same prior p on disjoint shards combine as
    q ∝ p ∏ₖ qₖ / p, that is in natural parameters η = η₀ + Σₖ (ηₖ − η₀): the precision
    Λ = Λ₀ + Σₖ (Λₖ − Λ₀) and the mean μ = μ₀ + Λ⁻¹ Σₖ Λₖ (μₖ − μ₀). For the
    linear-Gaussian model with ``family="full"`` (or ``"dlr"`` with ``rank`` ≥ P) and
    ``rule="bong"``, ``hessian="lin_hess"`` this is the exact posterior of all rows, for
    any partition of them; otherwise it is the streaming distributed variational Bayes
    rule of Broderick et al. (2013), an approximation (see :doc:`/user_guide/scaling_out`).

    * ``full`` / ``diag`` (and their moment forms): natural-parameter addition.
    * ``dlr``: the diagonals add and the low-rank factors are stacked,
      Υ + [W₁ … W_K][W₁ … W_K]ᵀ, then projected back to rank R with the family's own
      projection (the top R directions, the rest of the diagonal kept in Υ); exact when
      R ≥ P, an approximation otherwise.
    * Learned noise (``obs_variance="auto"``, one output, ``noise_discount=1``, the
      coupled ``noise_posterior="conjugate"``, which ``"auto"`` is for the linear model
      only): the normal–inverse-gamma posterior merges exactly, its rate b through each shard's
      sufficient statistic yᵀy recovered from bₖ, μₖ and Vₖ.
    * Prior bank (a prior bank): each filter merges with its own prior, and
      the weights through the exact log marginal likelihood of all rows, for the
      conjugate configurations above only.

    Refused with the reason: different classes, parameters (other than ``predictive``,
    ``predictive_samples``, ``on_error``, ``verbose``, ``random_state``), inputs,
    classes or prior means; ``drift`` < 1 or ``process_noise`` > 0, and
    ``noise_discount`` < 1, whose posteriors depend on the time order of the rows; the
    factorised learned noise (``noise_posterior="factorised"``, the default for networks),
    whose covariance is not Σ = ŝ V; the learned noise of several outputs; a prior bank
    whose weights cannot merge exactly.

    Parameters
    ----------
    estimators : sequence of BongRegressor or BongClassifier
        Fitted estimators of one class, with the same parameters, each fitted from the
        prior (``fit``, or ``partial_fit`` on a fresh estimator) on its own rows. The
        prior is read from the parameters in use: do not change ``prior_variance`` after
        fitting a shard. With ``sample_weight`` the merge of the bank's evidence assumes
        unit weights.

    Returns
    -------
    estimator : BongRegressor or BongClassifier
        A new fitted estimator: a copy of the first with the merged belief, and
        ``n_observations_``, ``n_skipped_`` and the interval calibration's PIT histograms
        summed (each shard's predictions were out-of-sample); it continues with
        ``partial_fit``.
        The inputs are left unchanged.

    Raises
    ------
    TypeError
        Estimators of different classes, or not skbong's online estimators.
    ValueError
        Estimators that cannot be merged, with the reason.
    NonFiniteUpdateError
        When the merged precision is not positive definite (possible for non-conjugate
        updates whose precision fell below the prior's).

    See Also
    --------
    fit_partitions : Fit on a dask collection, one partition per task, and merge.

    References
    ----------
    T. Broderick, N. Boyd, A. Wibisono, A. C. Wilson, M. I. Jordan. Streaming variational
    Bayes. NeurIPS 2013.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import clone
    >>> from skbong import BongRegressor, merge_posteriors
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 2))
    >>> y = X @ [1.0, -2.0] + 0.1 * rng.normal(size=60)
    >>> est = BongRegressor(family="full", dtype="float64")
    >>> shards = [clone(est).fit(X[i::3], y[i::3]) for i in range(3)]
    >>> merged = merge_posteriors(shards)
    >>> bool(np.allclose(merged.coef_, clone(est).fit(X, y).coef_))
    True
    """
    estimators = list(estimators)
    if not estimators:
        raise ValueError("merge_posteriors needs at least one fitted estimator; got none")
    return merge_fitted(estimators)


__all__ = ["merge_posteriors"]
