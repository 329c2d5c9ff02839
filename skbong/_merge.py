"""Merging posteriors learned independently from one prior (:func:`merge_posteriors`).

Posteriors q₁ … q_K learned from the same prior p on disjoint shards of the data combine
as q ∝ p ∏ₖ qₖ / p, in natural parameters η = η₀ + Σₖ (ηₖ − η₀): exact for a conjugate
model, and otherwise the streaming, distributed variational Bayes rule of Broderick et
al. (2013). For the Gaussian belief N(μ, Λ⁻¹) and the prior N(μ₀, Λ₀⁻¹) this is

    Λ = Λ₀ + Σₖ (Λₖ − Λ₀),        μ = μ₀ + Λ⁻¹ Σₖ Λₖ (μₖ − μ₀)

(the second form of Λμ = Λ₀μ₀ + Σₖ (Λₖμₖ − Λ₀μ₀), in which the prior mean cancels
exactly). Every term is a difference from the prior, so merging is associative: a merge
of merges is the merge of all (a tree reduction, :func:`skbong.fit_partitions`).

The learned noise (normal–inverse-gamma, :mod:`skbong.engine.noise`) merges in the units
of the noise: the belief holds Σ = ŝ V with ŝ = b / a, and the conjugate posterior adds
V⁻¹ and V⁻¹μ as above, a = a₀ + Σₖ (aₖ − a₀), and b through the sufficient statistic
yᵀy of each shard, recovered from bₖ, μₖ, Vₖ:

    b = b₀ + Σₖ (bₖ − b₀) + ½ [Σₖ dₖᵀ Vₖ⁻¹ dₖ − dᵀ V⁻¹ d],     dₖ = μₖ − μ₀, d = μ − μ₀.

The prior bank's weights are each filter's online evidence, for the conjugate model the
log marginal likelihood, which merges through the log-partition A of the conjugate
family: log p(D) = Σₖ log p(Dₖ) + [A(η) − A(η₀)] − Σₖ [A(ηₖ) − A(η₀)]. The families
hold their precision differently; :class:`skbong._merge_math._Algebra` supplies the few operations the
merge needs in each.
"""

import copy

import jax
import numpy as np
from sklearn.utils.validation import check_is_fitted

from . import engine
from ._base import BongBase
from ._guard import _check_not_forked
from ._merge_math import ALGEBRAS, Prior, merge_evidence, merge_gaussians, merge_noise
from ._signature import structural_signature
from ._stream import _is_sound
from .exceptions import NonFiniteUpdateError

NOT_COMPARED = ("predictive", "predictive_samples", "on_error", "verbose", "random_state")
"""Parameters that need not agree: they change predictions or error handling, not the
belief. ``random_state`` draws a network's prior mean, which is compared itself."""


# ------------------------------------------------------------------ the checks
def _equal(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return a is not None and b is not None and np.array_equal(a, b)
    return bool(a == b)


def _fitted_facts(est):
    """What each fit learned about its input and target, which must agree."""
    return {
        "n_features_in_": est.n_features_in_,
        "feature_names_in_": getattr(est, "feature_names_in_", None),
        "classes_": getattr(est, "classes_", None),
        "number of outputs": est._n_out,
        "output shape (y 1-D or 2-D)": getattr(est, "_multi_output", None),
    }


def _is_linear(config):
    return engine.models.is_linear(config.model)


def _bank_refusal(est, config):
    """Why the bank's weights cannot merge exactly (None when they can)."""
    n_params = config.model.n_params()
    if config.likelihood != "gaussian":
        return f"the {config.likelihood} likelihood is not conjugate"
    if not _is_linear(config):
        return (
            "a network or user model is not conjugate, and its evidence forgets older rows "
            "(0.99 per row), so it depends on their time order"
        )
    if config.family == "dlr" and config.rank < n_params:
        return f"family='dlr' with rank={est.rank} < P={n_params} is not exact"
    if config.family not in ("full", "dlr"):
        return f"family={config.family!r} is not exact"
    if (config.rule, config.hessian) != ("bong", "lin_hess"):
        return f"rule={config.rule!r} with hessian={config.hessian!r} is not the exact update"
    if int(est.batch_size) != 1:
        return f"with batch_size={est.batch_size} the evidence sums per-row predictives"
    return None


def check_online(est):
    """Raise TypeError unless ``est`` is one of skbong's online estimators (BongBase)."""
    if not isinstance(est, BongBase):
        raise TypeError(
            "merging takes skbong's online estimators (BongRegressor, BongClassifier), "
            f"whose belief is filtered from the prior; got {type(est).__name__}"
        )


def check_mergeable(est, config):
    """Refuse, with the reason, an estimator whose posterior cannot be merged.

    Reads the parameters and the engine configuration only, so it also runs before any
    data is seen (:func:`skbong.fit_partitions`).

    Parameters
    ----------
    est : BongBase
        The estimator.
    config : skbong.engine.Config
        Its engine configuration.

    Raises
    ------
    TypeError
        For an estimator that is not an online BONG estimator.
    ValueError
        For a configuration whose shard posteriors depend on the order of the rows, or
        whose learned noise or prior bank has no exact merge.
    """
    check_online(est)
    if config.dynamic:
        raise ValueError(
            f"cannot merge estimators with drift={est.drift} and process_noise="
            f"{est.process_noise}: the predict step before every row forgets older rows, so "
            "a shard's posterior depends on where its rows sat in the stream (time order "
            "matters) and no sum of shard updates reproduces a forgetting filter; merge "
            "static models (drift=1, process_noise=0)"
        )
    if config.learn_noise and config.noise_discount != 1.0:
        raise ValueError(
            f"cannot merge the learned noise with noise_discount={est.noise_discount!r} "
            f"(δ = {config.noise_discount}; 'auto' is 0.99 for networks): discounting forgets "
            "the noise evidence of older rows, so it depends on their time order; use "
            "noise_discount=1 (the exact conjugate update) or a fixed obs_variance"
        )
    if config.learn_noise and config.model.n_outputs > 1:
        raise ValueError(
            f"cannot merge the learned noise of {config.model.n_outputs} outputs: the engine "
            "shares one covariance scale between them (the geometric mean of their noise "
            "ratios), an approximation with no exact merge; use a fixed obs_variance or one "
            "estimator per output"
        )
    if config.evidence:
        reason = _bank_refusal(est, config)
        if reason is not None:
            raise ValueError(
                "cannot merge prior_variance='auto': the bank's weights are each filter's "
                "online evidence, which combines exactly across shards only when it is the "
                "log marginal likelihood (the linear-Gaussian model, family='full' or 'dlr' "
                f"with rank >= P, rule='bong', hessian='lin_hess', batch_size=1); here {reason}. "
                "Fit the shards with a fixed prior_variance (e.g. prior_variance_ of a first fit)"
            )


def _check_together(estimators, compare_model):
    """Refuse estimators that do not share a class, parameters, input and prior."""
    first = estimators[0]
    for est in estimators[1:]:
        if type(est) is not type(first):
            raise TypeError(
                "all estimators must be of one class; got "
                f"{type(first).__name__} and {type(est).__name__}"
            )
    names = [n for n in first.get_params(deep=False) if n not in NOT_COMPARED]
    if not compare_model:
        names.remove("model")
    reference = structural_signature(first, names)
    facts = _fitted_facts(first)
    for i, est in enumerate(estimators[1:], start=1):
        differ = [n for (n, v), (_, w) in zip(reference, structural_signature(est, names)) if v != w]
        if differ:
            raise ValueError(
                f"parameter(s) {differ} of estimator {i} differ from estimator 0 "
                f"({[first.get_params(deep=False)[n] for n in differ]} vs "
                f"{[est.get_params(deep=False)[n] for n in differ]}): posteriors merge only when they "
                "share the prior and the structure; fit every shard from clones of one estimator"
            )
        for name, value in _fitted_facts(est).items():
            if not _equal(value, facts[name]):
                hint = " (pass classes= to partial_fit so every shard knows every class)"
                raise ValueError(
                    f"the fitted {name} of estimator {i} differs from estimator 0 "
                    f"({value!r} vs {facts[name]!r}){hint if name == 'classes_' else ''}"
                )
        if (est._noise is None) != (first._noise is None) or (
            est._noise is None and not np.array_equal(est._obs_var, first._obs_var)
        ):
            raise ValueError(
                f"estimator {i} and estimator 0 learned with different observation noise "
                "(one learned it, or their fixed values differ)"
            )
        if not np.array_equal(est._prior_mean, first._prior_mean):
            _check_rebase(first, i, est)


def _check_rebase(first, i, est):
    """Refuse shards whose prior means differ, unless each can be divided by its own prior:
    a linear model whose noise and prior variance are not learned (the conjugate noise
    and evidence merges assume one prior). A network's prior mean is drawn from
    ``random_state``, and networks started from different draws hold their hidden units
    in different places: their posteriors do not describe the same parameters."""
    config = first._config()
    if not _is_linear(config):
        raise ValueError(
            f"the prior mean of estimator {i} differs from estimator 0's: a network's prior "
            "mean is drawn from random_state, and networks started from different draws hold "
            "their hidden units in different places, so their posteriors cannot be combined; "
            f"fit every shard with one integer random_state (got {first.random_state!r} and "
            f"{est.random_state!r})"
        )
    if config.learn_noise or config.evidence:
        raise ValueError(
            f"the prior mean of estimator {i} differs from estimator 0's, and the learned "
            "noise and prior bank merge exactly only for shards of one prior"
        )


# ------------------------------------------------------------------ the merge
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
    cls = engine.DLRState if family == "dlr" else engine.MeanCov
    with jax.enable_x64(True):
        return _as64(engine.FAMILIES[family].scale(cls(*state), np.float64(c)))


def _noise_scale(noise):
    """ŝ = b / a of the one output's learned noise; 1 for a fixed noise."""
    return 1.0 if noise is None else float(noise[1][0] / noise[0][0])


def _merge_filter(config, prior, beliefs, log_evidences):
    """Merge one filter's beliefs ``[(state, noise)]`` (float64) from the ``prior``; returns the merged ``(state, noise)`` and log evidence (None
    without the bank)."""
    family = config.family
    noises = [n for _, n in beliefs]
    learned = noises[0] is not None
    # the learned noise merges in its own units: V = Σ / ŝ, ŝ = b / a (one output)
    states = [_rescale(family, s, 1.0 / _noise_scale(n)) for s, n in beliefs]
    state, excess = merge_gaussians(ALGEBRAS[family], prior, states, config.rank)
    noise0 = noise = None
    if learned:
        # the prior of a fresh fit: IG(a₀, a₀ ŝ₀) with ŝ₀ = 1, so V₀ = Σ₀
        a0 = np.full_like(noises[0][0], engine.noise.PRIOR_DOF)
        noise0 = (a0, a0 * 1.0)
        noise = merge_noise(noise0, noises, excess)
        state = _rescale(family, state, _noise_scale(noise))
    evidence = None
    if log_evidences is not None:
        evidence = merge_evidence(log_evidences, excess, noise0, noises, noise)
    return (state, noise), evidence


def _invalid(family, state, noise):
    """What is wrong with a merged belief, or None (the estimators' own checks)."""
    cls = engine.DLRState if family == "dlr" else engine.MeanCov
    with jax.enable_x64(state[0].dtype == np.float64):
        valid = bool(engine.FAMILIES[family].is_valid(cls(*state)))
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
        problem = _invalid(first.family, state, noise)
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
    * Learned noise (``obs_variance="auto"``, one output, ``noise_discount=1``): the
      normal–inverse-gamma posterior merges exactly, its rate b through each shard's
      sufficient statistic yᵀy recovered from bₖ, μₖ and Vₖ.
    * Prior bank (``prior_variance="auto"``): each filter merges with its own prior, and
      the weights through the exact log marginal likelihood of all rows, for the
      conjugate configurations above only.

    Refused with the reason: different classes, parameters (other than ``predictive``,
    ``predictive_samples``, ``on_error``, ``verbose``, ``random_state``), inputs,
    classes or prior means; ``drift`` < 1 or ``process_noise`` > 0, and
    ``noise_discount`` < 1, whose posteriors depend on the time order of the rows; the
    learned noise of several outputs; a prior bank whose weights cannot merge exactly.

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
        ``n_observations_`` and ``n_skipped_`` summed; it continues with ``partial_fit``.
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
