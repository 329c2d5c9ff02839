"""The checks before a merge (:func:`skbong.merge_posteriors`): each estimator is fitted
online, its configuration merges exactly or by a documented approximation, and all of
them share one structure, prior and classes. Each refusal says why, in the user's terms.
"""

import numpy as np

from .. import engine
from .._core.signature import structural_signature
from .._online.base import BongBase

NOT_COMPARED = ("predictive", "predictive_samples", "on_error", "verbose", "random_state")
"""Parameters that need not agree: they change predictions or error handling, not the
belief. ``random_state`` draws a network's prior mean, which is compared itself."""


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
        "input_mean_": getattr(est, "input_mean_", None),
        "input_scale_": getattr(est, "input_scale_", None),
        # "auto" is one σ₀² for a network's fit and another for its partial_fit
        "prior variance": est._bank_spec().priors,
    }


def _is_linear(config):
    return engine.models.is_linear(config.model)


def _bank_refusal(est, config):
    """Why the bank's weights cannot merge exactly (None when they can)."""
    n_params = config.model.n_params()
    lik = config.impl.likelihood
    if not lik.conjugate:
        return f"the {config.likelihood} likelihood is not conjugate"
    if not _is_linear(config):
        return (
            "a network or user model is not conjugate, and its evidence forgets older rows "
            "(0.99 per row), so it depends on their time order"
        )
    exact = config.impl.family.merge_exact
    if not exact(config.rank, n_params):
        # a family exact at full rank is inexact for its rank alone
        at = f" with rank={est.rank} < P={n_params}" if exact(n_params, n_params) else ""
        return f"family={config.family!r}{at} is not exact"
    if not config.kalman_step:
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
    if config.learn_noise and not config.noise_coupled:
        raise ValueError(
            f"cannot merge the learned noise with noise_posterior={est.noise_posterior!r} "
            "('auto' is 'factorised' for networks and user models): the merge adds the shard "
            "updates in the units of the noise, V = Σ / ŝ, which is the belief only when it is "
            "coupled to the noise (the normal–inverse-gamma Σ = ŝ V); use "
            "noise_posterior='conjugate' with noise_discount=1, or a fixed obs_variance"
        )
    if config.learn_noise and config.impl.likelihood.takes_dof:
        raise ValueError(
            f"cannot merge the learned noise of the {config.likelihood} likelihood: its rows "
            "enter the noise posterior weighted by their own residuals, so the shards' "
            "posteriors have no normal–inverse-gamma sufficient statistics to add; use a fixed "
            "obs_variance (the merge is then the streaming variational Bayes rule)"
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
                "cannot merge a prior bank: the bank's weights are each filter's "
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
        differ = [
            n for (n, v), (_, w) in zip(reference, structural_signature(est, names)) if v != w
        ]
        if differ:
            raise ValueError(
                f"parameter(s) {differ} of estimator {i} differ from estimator 0 "
                f"({[first.get_params(deep=False)[n] for n in differ]} vs "
                f"{[est.get_params(deep=False)[n] for n in differ]}): posteriors merge only when they "
                "share the prior and the structure; fit every shard from clones of one estimator"
            )
        for name, value in _fitted_facts(est).items():
            if not _equal(value, facts[name]):
                hints = {
                    "classes_": " (pass classes= to partial_fit so every shard knows every class)",
                    "input_mean_": " (each shard's first call standardised inputs off the "
                    "prior's scale with its own statistics: standardise X before fitting "
                    "the shards)",
                }
                hints["input_scale_"] = hints["input_mean_"]
                hints["prior variance"] = (
                    " (a network's prior_variance='auto' is one σ₀² for fit's tempered "
                    "passes and another for a first partial_fit: fit the shards alike, or "
                    "pass a fixed prior_variance)"
                )
                raise ValueError(
                    f"the fitted {name} of estimator {i} differs from estimator 0 "
                    f"({value!r} vs {facts[name]!r}){hints.get(name, '')}"
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
