"""Which of scikit-learn's estimator checks a configuration fails, and why.

:func:`expected_failed_checks` returns the ``{check_name: reason}`` dict that
``sklearn.utils.estimator_checks.check_estimator`` and ``parametrize_with_checks`` take
as ``expected_failed_checks``. Two kinds of entry (doc: "scikit-learn compatibility"):

* ``check_sample_weight_equivalence_on_dense_data``, from the configuration's maths:
  a row of integer weight w equals w copies of it only for a conjugate update, and then
  only to float32's resolution, coarser than the check's tolerance. Each reason is one
  predicate of the configuration, registered with its text by :func:`_reason`.
* The checks in which a configuration refuses a row of the checks' unscaled data
  (``NonFiniteUpdateError``: a step that left the valid beliefs, or an absurd target)
  or misses a check's score, measured per configuration by
  ``benchmarks/bench_checks.py`` (``_MEASURED``). A configuration whose failures only a
  measurement tells (:func:`measured_only`) that was not measured gets the maths'
  entries only, with a warning.

A score threshold that a configuration does not promise is scikit-learn's
``poor_score`` tag (set by the estimators for the plain-gradient rules), not an entry.
"""

import warnings
from numbers import Integral

from sklearn.base import is_classifier

from . import engine
from ._batch.base import VariationalBase
from ._online.base import BongBase
from ._online.poisson import BongPoissonRegressor

SAMPLE_WEIGHT_CHECK = "check_sample_weight_equivalence_on_dense_data"

_MOMENT_FAMILIES = tuple(n for n, f in engine.FAMILIES.items() if f.parametrisation == "moment")
_PLAIN_RULES = tuple(n for n, r in engine.RULES.items() if not r.natural)


def _is_linear(estimator):
    sizes = estimator.hidden_layer_sizes
    return estimator.model is None and not isinstance(sizes, Integral) and len(sizes) == 0


def _family(estimator):
    """The family an unfitted estimator will use: ``family``, with ``"auto"`` resolved as
    the estimators resolve it for the small data of the checks (at most a few dozen
    parameters, within every estimator's :class:`~skbong._online.observation.Observation`
    ``full_max``: the linear model ``"full"``, a network ``"dlr"``)."""
    if estimator.family != "auto":
        return estimator.family
    return "full" if _is_linear(estimator) else "dlr"


def _is_regressor(estimator):
    """A ``BongRegressor`` (Gaussian or Student-t likelihood)."""
    return not (isinstance(estimator, BongPoissonRegressor) or is_classifier(estimator))


# --------------------------------------------------------------------------------------
# Why weighting a row is not repeating it: one predicate per reason, stated once.

_SAMPLE_WEIGHT_REASONS = []


def _reason(text):
    """Register a predicate of a Bong configuration as a reason, with its ``text``, why
    ``check_sample_weight_equivalence_on_dense_data`` fails."""

    def register(predicate):
        _SAMPLE_WEIGHT_REASONS.append((predicate, text))
        return predicate

    return register


@_reason(
    "the likelihood (Bernoulli / categorical, Poisson, Student-t) is not conjugate to the "
    "Gaussian belief: one update on a row of weight w and w updates on its copies, each "
    "from the belief the previous one left, differ at second order in the step, and the "
    "row order (the check shuffles the weighted rows) matters"
)
def _non_conjugate(estimator):
    return not _is_regressor(estimator) or not engine.likelihoods.LIKELIHOODS[estimator.likelihood].conjugate


@_reason(
    "the model is not linear: an update linearises it at the current mean, once for a row "
    "of weight w and afresh after each of its w copies, and the row order (the check "
    "shuffles the weighted rows) changes the result"
)
def _network(estimator):
    return not _is_linear(estimator)


@_reason(
    "the Monte Carlo estimators draw other parameter samples for one weighted row than for "
    "its copies, so the two fits agree in distribution, not to rtol=1e-7"
)
def _monte_carlo(estimator):
    return estimator.hessian.startswith("mc")


@_reason(
    "the empirical Fisher (lin_ef) replaces the Hessian by the outer product of the "
    "gradient at the current residual, which is not the conjugate update: the residual "
    "of the second copy of a row is smaller than that of the first"
)
def _empirical_fisher(estimator):
    return estimator.hessian == "lin_ef"


@_reason(
    "a plain-gradient step (bog, bbb) is not the conjugate update: one step on a row of "
    "weight w moves by w times the gradient at the current belief, its w copies each by "
    "the gradient where the previous copy left it, and the row order matters"
)
def _plain_rule(estimator):
    return estimator.rule in _PLAIN_RULES


@_reason(
    "the moment families step the covariance to first order in the curvature "
    "(Σ' = Σ + α Σ G Σ), not by the exact (Woodbury) update, so a row of weight w and its "
    "w copies give different beliefs"
)
def _moment_family(estimator):
    return _family(estimator) in _MOMENT_FAMILIES


@_reason(
    "the diagonal family projects the belief onto a diagonal covariance after every "
    "update (mean field), which the conjugate update does not preserve: one projection "
    "after a weighted row and one after each copy differ, and the row order matters"
)
def _diagonal_family(estimator):
    return engine.FAMILIES[_family(estimator)].hess_kind == "diag"  # a diagonal covariance


@_reason(
    "the dlr family keeps a rank-R projection of the precision; the check's rows of "
    "nonzero weight span 9 directions, so below rank 9 a weighted row and its copies are "
    "truncated differently, and the row order matters"
)
def _low_rank(estimator):
    return engine.FAMILIES[_family(estimator)].low_rank and estimator.rank < 9


@_reason(
    "drift < 1 (or 'auto') or process_noise > 0 runs the forgetting (predict) step once "
    "per row: w copies of a row are forgotten w times, a row of weight w once"
)
def _forgetting(estimator):
    return estimator.drift != 1 or estimator.process_noise != 0


@_reason(
    "a bank of filters (prior_variance='bank', 'auto' for the linear model, or "
    "drift='auto') weights its filters by the prequential evidence: a weight w multiplies "
    "one copy's predictive log-density, while each repeated copy is scored under a belief "
    "that has seen the previous ones, so the bank's weights differ (each filter alone is "
    "exact)"
)
def _bank(estimator):
    return estimator._bank_spec().is_bank


_FLOAT32 = (
    "the check compares predictions of the weighted and the repeated fit at rtol=1e-7, "
    "finer than float32's resolution (2^-23 = 1.2e-7): one update of weight w and w updates "
    "of the copies, in another row order, are different float32 computations that agree "
    "only to rounding (2e-5 relative at the defaults)"
)
_VARIATIONAL = (
    "a weight w is w repeated rows in the likelihood and the Fisher, but a repeated row "
    "also changes N and the mini-batches it lands in, and the MC samples differ: the two "
    "fits agree in distribution, not to rtol=1e-7"
)


def _sample_weight_reasons(estimator):
    """Why weighting a row is not repeating it, to rtol=1e-7, for a Bong estimator: the
    reasons whose predicate holds, and float32's resolution, the one reason of a
    conjugate configuration in float32."""
    reasons = [text for predicate, text in _SAMPLE_WEIGHT_REASONS if predicate(estimator)]
    if estimator._dtype_name() == "float32":
        reasons.append(_FLOAT32 + ("" if reasons else "; with dtype='float64' it passes"))
    return reasons


# --------------------------------------------------------------------------------------
# Refused rows: the steps that can leave the set of valid beliefs on unscaled data.

_REFUSED_REASONS = (
    (
        lambda est: est.rule in _PLAIN_RULES,
        "the plain-gradient step (bog, bbb) moves the mean by the learning rate times the "
        "gradient, which on the checks' unscaled data (features and targets in the tens to "
        "hundreds) overshoots and drives the belief out of the valid set; backtrack "
        "shortens the step but does not stop the mean from diverging",
    ),
    (
        lambda est: _family(est) in _MOMENT_FAMILIES and est.backtrack == 0,
        "the published moment step (Σ' = Σ + α Σ G Σ) loses positive definiteness on a row "
        "more informative than the current belief, which on the checks' unscaled data is "
        "one of the first rows (backtrack=20 halves the step until it keeps Σ positive "
        "definite)",
    ),
    (
        lambda est: isinstance(est, BongPoissonRegressor) and est.backtrack == 0,
        "the Poisson mean e^f makes a Newton step from a rate far below a count land far "
        "above it, an overshoot that on the checks' unscaled data overflows; "
        "backtrack (default 20) shortens such a step until the row's likelihood does not "
        "drop",
    ),
)
"""(predicate, mechanism) of each way a configuration can refuse a row of the checks'
data."""

_REFUSAL = (
    "; skbong refuses the row (NonFiniteUpdateError) instead of returning a corrupt "
    "posterior, and the check fails on the refusal (some checks because the refusal comes "
    "before the error they expect; measured for this configuration by "
    "benchmarks/bench_checks.py)"
)
_OUTLIER = (
    "fitted on the checks' unscaled data (targets in the tens to hundreds), this "
    "configuration's belief meets a target more than 1e6 predictive standard deviations "
    "from its prediction "
    "(engine.OUTLIER_Z): skbong refuses such an absurd row (NonFiniteUpdateError) "
    "instead of learning it, and the check fails on the refusal (measured for this "
    "configuration by benchmarks/bench_checks.py)"
)
_SCORE = (
    "one pass of this configuration over the check's data does not reach the score the "
    "check asserts (R² 0.5 or accuracy 0.83; measured for this configuration by "
    "benchmarks/bench_checks.py)"
)

NETWORK = (4,)
"""``hidden_layer_sizes`` of the measured configurations' ``model="network"``."""

_NOT_FIT = ("predictive", "predictive_samples", "verbose")
"""Parameters that no fit reads: a measured configuration matches whatever they are."""

_MEASURED = (
    (
        {"estimator": "BongPoissonRegressor", "model": "linear"},
        "none",
        (
            ""
        ),
    ),
    (
        {"estimator": "BongRegressor", "family": "full_moment", "rule": "bog", "hessian": "mc_ef", "model": "network", "backtrack": 20, "likelihood": "student_t"},
        "step",
        (
            "dict_unchanged dont_overwrite_parameters dtype_object estimators_dtypes "
            "estimators_fit_returns_self estimators_overwrite_params "
            "estimators_partial_fit_n_features estimators_pickle f_contiguous_array_estimator "
            "fit2d_predict1d fit_check_is_fitted fit_idempotent fit_score_takes_y "
            "methods_sample_order_invariance methods_subset_invariance n_features_in "
            "n_features_in_after_fitting pipeline_consistency positive_only_tag_during_fit "
            "readonly_memmap_input regressors_int regressors_train sample_weights_list "
            "sample_weights_not_overwritten sample_weights_shape supervised_y_2d"
        ),
    ),
    (
        {"estimator": "BongRegressor", "family": "diag_moment", "rule": "bbb", "hessian": "lin_ef", "model": "linear", "backtrack": 0, "likelihood": "gaussian"},
        "step",
        (
            "dict_unchanged dont_overwrite_parameters dtype_object estimators_dtypes "
            "estimators_fit_returns_self estimators_overwrite_params "
            "estimators_partial_fit_n_features estimators_pickle f_contiguous_array_estimator "
            "fit2d_1feature fit2d_1sample fit2d_predict1d fit_check_is_fitted fit_idempotent "
            "fit_score_takes_y methods_sample_order_invariance methods_subset_invariance "
            "n_features_in n_features_in_after_fitting pipeline_consistency "
            "positive_only_tag_during_fit readonly_memmap_input regressor_data_not_an_array "
            "regressor_multioutput regressors_int regressors_no_decision_function "
            "regressors_train sample_weights_list sample_weights_not_an_array "
            "sample_weights_not_overwritten sample_weights_pandas_series sample_weights_shape "
            "supervised_y_2d"
        ),
    ),
    (
        {"estimator": "BongPoissonRegressor", "family": "diag", "rule": "blr", "hessian": "lin_hess", "model": "network", "backtrack": 0},
        "none",
        (
            ""
        ),
    ),
    (
        {"estimator": "BongRegressor", "family": "diag", "rule": "bong", "hessian": "mc_hess", "model": "network", "backtrack": 0, "likelihood": "gaussian"},
        "score",
        (
            "regressors_train"
        ),
    ),
    (
        {"estimator": "BongRegressor", "family": "full", "rule": "bog", "hessian": "lin_ef", "model": "network", "backtrack": 0, "likelihood": "student_t"},
        "step",
        (
            "dict_unchanged dont_overwrite_parameters dtype_object estimators_dtypes "
            "estimators_fit_returns_self estimators_nan_inf estimators_overwrite_params "
            "estimators_partial_fit_n_features estimators_pickle f_contiguous_array_estimator "
            "fit2d_1feature fit2d_predict1d fit_check_is_fitted fit_idempotent "
            "fit_score_takes_y methods_sample_order_invariance methods_subset_invariance "
            "n_features_in_after_fitting pipeline_consistency positive_only_tag_during_fit "
            "readonly_memmap_input regressor_data_not_an_array regressor_multioutput "
            "regressors_int regressors_no_decision_function regressors_train "
            "sample_weights_list sample_weights_not_an_array sample_weights_not_overwritten "
            "sample_weights_pandas_series sample_weights_shape supervised_y_2d"
        ),
    ),
    (
        {"estimator": "BongClassifier", "family": "dlr", "rule": "bbb", "hessian": "mc_ef", "model": "network", "backtrack": 0},
        "none",
        (
            ""
        ),
    ),
    (
        {"estimator": "BongPoissonRegressor", "family": "diag", "rule": "bog", "hessian": "mc_ef", "model": "linear", "backtrack": 20},
        "none",
        (
            ""
        ),
    ),
    (
        {"estimator": "BongRegressor", "family": "full_moment", "rule": "bbb", "hessian": "lin_hess", "model": "linear", "backtrack": 20, "likelihood": "gaussian"},
        "none",
        (
            ""
        ),
    ),
    (
        {"estimator": "BongPoissonRegressor", "family": "diag_moment", "rule": "bong", "hessian": "lin_ef", "model": "network", "backtrack": 20},
        "step",
        (
            "estimators_dtypes"
        ),
    ),
    (
        {"estimator": "BongClassifier", "family": "full_moment", "rule": "blr", "hessian": "mc_hess", "model": "network", "backtrack": 0},
        "step",
        (
            "sample_weights_not_overwritten"
        ),
    ),
    (
        {"estimator": "BongRegressor", "family": "full", "rule": "blr", "hessian": "mc_ef", "model": "network", "backtrack": 0, "likelihood": "gaussian"},
        "none",
        (
            ""
        ),
    ),
    (
        {"estimator": "BongClassifier", "family": "diag_moment", "rule": "bog", "hessian": "lin_hess", "model": "network", "backtrack": 0},
        "step",
        (
            "dict_unchanged dont_overwrite_parameters fit2d_predict1d "
            "methods_sample_order_invariance methods_subset_invariance "
            "positive_only_tag_during_fit sample_weights_not_overwritten sample_weights_shape"
        ),
    ),
    (
        {"estimator": "BongPoissonRegressor", "family": "full", "rule": "bbb", "hessian": "mc_hess", "model": "linear", "backtrack": 0},
        "none",
        (
            ""
        ),
    ),
    (
        {"estimator": "BongRegressor", "family": "diag_moment", "rule": "bong", "hessian": "mc_ef", "model": "network", "backtrack": 20, "likelihood": "student_t"},
        "none",
        (
            ""
        ),
    ),
    (
        {"estimator": "BongRegressor", "family": "dlr", "rule": "bog", "hessian": "lin_ef", "model": "network", "backtrack": 20, "likelihood": "gaussian"},
        "none",
        (
            ""
        ),
    ),
    (
        {"estimator": "BongClassifier", "family": "full_moment", "rule": "bong", "hessian": "lin_ef", "model": "linear", "backtrack": 0},
        "none",
        (
            ""
        ),
    ),
    (
        {"estimator": "BongRegressor", "family": "diag", "rule": "bbb", "hessian": "lin_ef", "model": "network", "backtrack": 0, "likelihood": "student_t"},
        "step",
        (
            "dict_unchanged dont_overwrite_parameters estimators_fit_returns_self "
            "estimators_overwrite_params fit2d_predict1d methods_sample_order_invariance "
            "methods_subset_invariance n_features_in_after_fitting readonly_memmap_input "
            "regressors_int sample_weights_list sample_weights_not_overwritten"
        ),
    ),
)
"""The measured failures beyond the sample-weight check, each ``(configuration,
mechanism, checks)``: the estimator's class name and the parameters set (others at
their defaults, ``random_state=0``; ``model`` is ``"linear"`` or ``"network"``,
``hidden_layer_sizes=(4,)``), ``"step"`` (a row refused because the step left the
valid beliefs, :data:`_REFUSED_REASONS`), ``"outlier"`` (an absurd target refused),
``"score"``, or ``"none"`` (measured: nothing beyond the sample-weight check), and the
checks, without the ``check_`` prefix. Printed by
``python benchmarks/bench_checks.py --table`` (doc/results/checks.txt)."""


def may_refuse_rows(estimator):
    """Whether a configuration takes a step that can leave the set of valid beliefs on
    the checks' unscaled data, and so may refuse one of their rows: a plain-gradient
    rule, a moment family without ``backtrack``, or the Poisson likelihood without
    ``backtrack``."""
    return isinstance(estimator, BongBase) and any(p(estimator) for p, _ in _REFUSED_REASONS)


def _draws_random_numbers(estimator):
    """Whether a fit draws random numbers: a network's initial mean, an MC estimator."""
    return not _is_linear(estimator) or estimator.hessian.startswith("mc")


def _fit_params(estimator, random_state=None):
    """The parameters a fit reads, ``random_state`` replaced by ``random_state`` where
    the fit draws no random numbers (it is then irrelevant)."""
    params = estimator.get_params()
    if random_state is not None and not _draws_random_numbers(estimator):
        params["random_state"] = random_state
    sizes = params["hidden_layer_sizes"]
    params["hidden_layer_sizes"] = (sizes,) if isinstance(sizes, Integral) else tuple(sizes)
    return {k: v for k, v in params.items() if k not in _NOT_FIT}


def measured_only(estimator):
    """Whether which checks a Bong configuration fails beyond the sample-weight check is
    known only by measuring it: one that can refuse rows (:func:`may_refuse_rows`), a
    network or user model (which on the checks' unscaled data may meet an absurd target
    or miss a score), or the Poisson likelihood. The others (the linear model with the
    Gaussian, Student-t, Bernoulli or categorical likelihood, a natural rule, and a
    natural family or ``backtrack``) fail none."""
    return may_refuse_rows(estimator) or not _is_linear(estimator) or (
        isinstance(estimator, BongPoissonRegressor)
    )


def _step_reason(estimator):
    """Why a step of this configuration left the valid beliefs: the mechanisms of
    :data:`_REFUSED_REASONS` that apply, or (measured where none does) the plain fact."""
    reason = "; ".join(text for p, text in _REFUSED_REASONS if p(estimator))
    if not reason:
        reason = (
            "on the checks' unscaled data (features and targets in the tens to hundreds), "
            "a step of this configuration left the set of valid beliefs (a non-finite mean "
            "or an invalid covariance)"
        ) + (" even after backtrack's halvings" if estimator.backtrack else "")
    return reason + _REFUSAL


def _measured_failures(estimator):
    """``{check name: reason}`` measured for this configuration beyond the sample-weight
    check, or ``None`` if it was not measured."""
    found = None
    reasons = {"step": _step_reason(estimator), "outlier": _OUTLIER, "score": _SCORE, "none": None}
    for config, mechanism, checks in _MEASURED:
        params = dict(config)
        if params.pop("estimator") != type(estimator).__name__:
            continue
        params["hidden_layer_sizes"] = () if params.pop("model") == "linear" else NETWORK
        if _fit_params(type(estimator)(random_state=0, **params)) == _fit_params(estimator, 0):
            found = found or {}
            found.update({"check_" + name: reasons[mechanism] for name in checks.split()})
    return found


def expected_failed_checks(estimator):
    """The scikit-learn estimator checks this configuration fails, with the reason of each.

    Pass the result to ``check_estimator(estimator, expected_failed_checks=...)`` or to
    ``parametrize_with_checks``. The dict depends on the configuration (the estimator's
    parameters), not on a fit: see :ref:`sklearn-compat` for what passes, what fails and
    why.

    Parameters
    ----------
    estimator : BongRegressor, BongClassifier, BongPoissonRegressor, VariationalRegressor or VariationalClassifier
        The configuration to be checked.

    Returns
    -------
    expected : dict of str to str
        ``{check_name: reason}``. ``check_sample_weight_equivalence_on_dense_data``
        unless the configuration is conjugate (the linear Gaussian ``BongRegressor``
        with ``rule='bong'`` or ``'blr'``, ``hessian='lin_hess'``, ``family='full'`` or
        ``'dlr'`` with ``rank >= 9``, no drift, a fixed ``prior_variance``) and in
        float64. For a configuration measured by ``benchmarks/bench_checks.py``, also
        the checks in which it refuses a row of the checks' unscaled data or misses
        their score.

    Warns
    -----
    UserWarning
        For a configuration whose failures beyond the sample-weight check are known only
        by measuring (a plain-gradient rule, a moment family or the Poisson likelihood
        without ``backtrack``, a network, the Poisson likelihood) that was not measured:
        they depend on every parameter of the fit and on the data, so the dict then
        holds the sample-weight check alone, and more checks may fail.

    Examples
    --------
    >>> from sklearn.utils.estimator_checks import check_estimator
    >>> from skbong import BongRegressor, expected_failed_checks
    >>> est = BongRegressor(prior_variance=1.0, dtype="float32")
    >>> sorted(expected_failed_checks(est))
    ['check_sample_weight_equivalence_on_dense_data']
    >>> expected_failed_checks(est.set_params(dtype="float64"))  # conjugate, in float64
    {}
    >>> check_estimator(est, expected_failed_checks=expected_failed_checks(est))  # doctest: +SKIP
    """
    if isinstance(estimator, VariationalBase):
        return {SAMPLE_WEIGHT_CHECK: _VARIATIONAL}
    if not isinstance(estimator, BongBase):
        raise TypeError(
            f"expected_failed_checks takes a skbong estimator, got {type(estimator).__name__}"
        )
    expected = {}
    reasons = _sample_weight_reasons(estimator)
    if reasons:
        expected[SAMPLE_WEIGHT_CHECK] = "; ".join(reasons)
    failures = _measured_failures(estimator)
    if failures is None and measured_only(estimator):
        warnings.warn(
            f"which checks {type(estimator).__name__} with these parameters fails beyond "
            "the sample-weight check depends on its fit on the checks' unscaled data (a "
            "step that can leave the valid beliefs, a network, or the Poisson likelihood) "
            "and was not measured: expected_failed_checks lists the sample-weight check "
            "only. Run check_estimator with on_fail=None and a callback to see them "
            "(benchmarks/bench_checks.py)",
            UserWarning,
            stacklevel=2,
        )
    for name, reason in (failures or {}).items():  # the sample-weight check keeps its own
        expected.setdefault(name, reason)
    return expected
