"""Which of scikit-learn's estimator checks a configuration fails, and why.

:func:`expected_failed_checks` returns the ``{check_name: reason}`` dict that
``sklearn.utils.estimator_checks.check_estimator`` and ``parametrize_with_checks`` take
as ``expected_failed_checks``. Two kinds of entry (doc: "scikit-learn compatibility"):

* ``check_sample_weight_equivalence_on_dense_data``, from the configuration's maths:
  a row of integer weight w equals w copies of it only for a conjugate update (the
  linear-Gaussian model with a natural rule and a family that holds the exact
  posterior), and then only to float32's resolution, coarser than the check's
  tolerance; so only such a configuration in float64 passes it.
* For the published steps that can leave the set of valid beliefs (the plain-gradient
  rules, and the moment families without ``backtrack``), the checks in which skbong
  refuses a row of the checks' unscaled data (``NonFiniteUpdateError``), measured by
  ``benchmarks/bench_checks.py`` for each family × rule at otherwise default parameters.

A score threshold that a configuration does not promise is scikit-learn's
``poor_score`` tag (set by the estimators for the plain-gradient rules), not an entry.
"""

from numbers import Integral

from . import engine
from ._base import BongBase
from ._classifier import ClassifierFace
from ._poisson import BongPoissonRegressor
from ._variational_base import VariationalBase

SAMPLE_WEIGHT_CHECK = "check_sample_weight_equivalence_on_dense_data"

_MOMENT_FAMILIES = tuple(n for n, f in engine.FAMILIES.items() if f.parametrisation == "moment")
_PLAIN_RULES = tuple(n for n, r in engine.RULES.items() if not r.natural)

_FLOAT32 = (
    "the check compares predictions of the weighted and the repeated fit at rtol=1e-7, "
    "finer than float32's resolution (2^-23 = 1.2e-7): one update of weight w and w updates "
    "of the copies, in another row order, are different float32 computations that agree "
    "only to rounding (2e-5 relative at the defaults)"
)
_NETWORK = (
    "the model is not linear: an update linearises it at the current mean, once for a row "
    "of weight w and afresh after each of its w copies, and the row order (the check "
    "shuffles the weighted rows) changes the result"
)
_MONTE_CARLO = (
    "the Monte Carlo estimators draw other parameter samples for one weighted row than for "
    "its copies, so the two fits agree in distribution, not to rtol=1e-7"
)
_EMPIRICAL_FISHER = (
    "the empirical Fisher (lin_ef) replaces the Hessian by the outer product of the "
    "gradient at the current residual, which is not the conjugate update: the residual "
    "of the second copy of a row is smaller than that of the first"
)
_PLAIN = (
    "a plain-gradient step (bog, bbb) is not the conjugate update: one step on a row of "
    "weight w moves by w times the gradient at the current belief, its w copies each by "
    "the gradient where the previous copy left it, and the row order matters"
)
_MOMENT = (
    "the moment families step the covariance to first order in the curvature "
    "(Σ' = Σ + α Σ G Σ), not by the exact (Woodbury) update, so a row of weight w and its "
    "w copies give different beliefs"
)
_DIAG = (
    "the diagonal family projects the belief onto a diagonal covariance after every "
    "update (mean field), which the conjugate update does not preserve: one projection "
    "after a weighted row and one after each copy differ, and the row order matters"
)
_LOW_RANK = (
    "the dlr family keeps a rank-R projection of the precision; the check's rows of "
    "nonzero weight span 9 directions, so below rank 9 a weighted row and its copies are "
    "truncated differently, and the row order matters"
)
_DRIFT = (
    "drift < 1 (or 'auto') or process_noise > 0 runs the forgetting (predict) step once "
    "per row: w "
    "copies of a row are forgotten w times, a row of weight w once"
)
_BANK = (
    "the bank of prior_variance='auto' or drift='auto' weights its filters by the "
    "prequential evidence: a "
    "weight w multiplies one copy's predictive log-density, while each repeated copy is "
    "scored under a belief that has seen the previous ones, so the bank's weights differ "
    "(each filter alone is exact)"
)
_NON_CONJUGATE = (
    "the Bernoulli / categorical / Poisson likelihood is not conjugate to the Gaussian belief: one "
    "update on a row of weight w and w updates on its copies, each from the belief the "
    "previous one left, differ at second order in the step, and the row order (the check "
    "shuffles the weighted rows) matters; only vanishing steps pass (learning_rate=1e-5 "
    "in float64)"
)
_VARIATIONAL = (
    "a weight w is w repeated rows in the likelihood and the Fisher, but a repeated row "
    "also changes N and the mini-batches it lands in, and the MC samples differ: the two "
    "fits agree in distribution, not to rtol=1e-7"
)

_REFUSED_MOMENT = (
    "the published moment step (Σ' = Σ + α Σ G Σ, or Σ + (α/2) G for the plain rules) "
    "loses positive definiteness on a row more informative than the current belief, "
    "which on the checks' unscaled data is one of the first rows; skbong refuses the row "
    "(NonFiniteUpdateError) instead of returning a corrupt posterior, and the check fails "
    "on the refusal (measured at otherwise default parameters; backtrack=20 with "
    "rule='bong' or 'blr' passes)"
)
_REFUSED_PLAIN = (
    "the plain-gradient step at this learning_rate drives the belief out of the valid set "
    "on the checks' unscaled data (features and targets in the tens to hundreds); skbong "
    "refuses the row (NonFiniteUpdateError) instead of returning a corrupt posterior, and "
    "the check fails on the refusal (measured at otherwise default parameters; the rows "
    "refused depend on the learning rate and the data's scale)"
)

_EVERY = {
    "regressor": (
        "dict_unchanged dont_overwrite_parameters dtype_object estimators_dtypes "
        "estimators_fit_returns_self estimators_nan_inf estimators_overwrite_params "
        "estimators_partial_fit_n_features estimators_pickle "
        "f_contiguous_array_estimator fit2d_1feature fit2d_1sample fit2d_predict1d "
        "fit_check_is_fitted fit_idempotent fit_score_takes_y "
        "methods_sample_order_invariance methods_subset_invariance n_features_in "
        "n_features_in_after_fitting pipeline_consistency positive_only_tag_during_fit "
        "readonly_memmap_input regressor_data_not_an_array regressor_multioutput "
        "regressors_int regressors_no_decision_function regressors_train "
        "sample_weights_list sample_weights_not_an_array sample_weights_not_overwritten "
        "sample_weights_pandas_series sample_weights_shape supervised_y_2d"
    ),
    "classifier": (
        "classifier_data_not_an_array classifiers_classes "
        "classifiers_one_label_sample_weights classifiers_train dict_unchanged "
        "dont_overwrite_parameters dtype_object estimators_dtypes "
        "estimators_fit_returns_self estimators_overwrite_params "
        "estimators_partial_fit_n_features estimators_pickle "
        "f_contiguous_array_estimator fit2d_1feature fit2d_predict1d "
        "fit_check_is_fitted fit_idempotent fit_score_takes_y "
        "methods_sample_order_invariance methods_subset_invariance n_features_in "
        "n_features_in_after_fitting pipeline_consistency positive_only_tag_during_fit "
        "readonly_memmap_input sample_weights_list sample_weights_not_an_array "
        "sample_weights_not_overwritten sample_weights_pandas_series "
        "sample_weights_shape"
    ),
}
"""Per estimator kind, the union of the checks in ``_REFUSED`` (without the ``check_``
prefix): for the regressor, every check that fits on the checks' data."""

_REFUSED = {
    ("regressor", "full", "bog"): (
        "dtype_object regressor_data_not_an_array regressor_multioutput"
    ),
    ("regressor", "full", "bbb"): ("regressor_data_not_an_array regressor_multioutput"),
    ("regressor", "full_moment", "bong"): ("*"),
    ("regressor", "full_moment", "bog"): ("* -regressor_data_not_an_array -regressor_multioutput"),
    ("regressor", "full_moment", "blr"): ("*"),
    ("regressor", "full_moment", "bbb"): ("* -regressor_data_not_an_array -regressor_multioutput"),
    ("regressor", "diag", "bog"): ("regressor_data_not_an_array regressor_multioutput"),
    ("regressor", "diag", "bbb"): ("regressor_data_not_an_array regressor_multioutput"),
    ("regressor", "diag_moment", "bong"): ("*"),
    ("regressor", "diag_moment", "bog"): (
        "* -dtype_object -fit2d_1sample -regressor_data_not_an_array "
        "-regressor_multioutput -supervised_y_2d"
    ),
    ("regressor", "diag_moment", "blr"): ("*"),
    ("regressor", "diag_moment", "bbb"): ("* -regressor_data_not_an_array -regressor_multioutput"),
    ("regressor", "dlr", "bog"): ("fit_check_is_fitted fit_idempotent n_features_in"),
    ("regressor", "dlr", "bbb"): (
        "* -estimators_dtypes -estimators_fit_returns_self -estimators_nan_inf "
        "-estimators_overwrite_params -fit2d_1feature -fit2d_1sample -fit_check_is_fitted "
        "-fit_idempotent -fit_score_takes_y -n_features_in -positive_only_tag_during_fit "
        "-readonly_memmap_input -regressors_int -regressors_no_decision_function "
        "-sample_weights_list -supervised_y_2d"
    ),
    ("classifier", "full", "bog"): ("classifiers_train estimators_pickle pipeline_consistency"),
    ("classifier", "full_moment", "bong"): (
        "* -classifiers_train -fit2d_1feature -fit_score_takes_y "
        "-sample_weights_not_an_array -sample_weights_pandas_series"
    ),
    ("classifier", "full_moment", "bog"): (
        "* -classifier_data_not_an_array -classifiers_classes "
        "-classifiers_one_label_sample_weights -estimators_pickle -fit2d_1feature "
        "-n_features_in_after_fitting -pipeline_consistency"
    ),
    ("classifier", "full_moment", "blr"): (
        "estimators_partial_fit_n_features fit_check_is_fitted fit_idempotent "
        "n_features_in sample_weights_not_overwritten"
    ),
    ("classifier", "full_moment", "bbb"): (
        "* -classifiers_classes -classifiers_one_label_sample_weights "
        "-classifiers_train -estimators_pickle -fit2d_1feature -fit_score_takes_y "
        "-pipeline_consistency"
    ),
    ("classifier", "diag", "bog"): ("classifiers_train fit_idempotent"),
    ("classifier", "diag_moment", "bong"): (
        "* -classifiers_classes -classifiers_one_label_sample_weights "
        "-classifiers_train -dtype_object -estimators_pickle -fit2d_1feature "
        "-fit_score_takes_y -pipeline_consistency -sample_weights_list "
        "-sample_weights_not_an_array -sample_weights_pandas_series"
    ),
    ("classifier", "diag_moment", "bog"): (
        "classifiers_train estimators_fit_returns_self estimators_overwrite_params "
        "estimators_partial_fit_n_features fit_check_is_fitted fit_idempotent "
        "n_features_in positive_only_tag_during_fit readonly_memmap_input "
        "sample_weights_list sample_weights_not_overwritten sample_weights_shape"
    ),
    ("classifier", "diag_moment", "blr"): (
        "estimators_partial_fit_n_features fit_check_is_fitted fit_idempotent "
        "n_features_in sample_weights_not_overwritten"
    ),
    ("classifier", "diag_moment", "bbb"): (
        "estimators_dtypes estimators_fit_returns_self estimators_overwrite_params "
        "estimators_partial_fit_n_features fit2d_1feature fit_check_is_fitted "
        "fit_idempotent n_features_in readonly_memmap_input sample_weights_not_an_array "
        "sample_weights_not_overwritten sample_weights_pandas_series "
        "sample_weights_shape"
    ),
}
"""(estimator kind, family, rule) -> the checks, without the ``check_`` prefix, that
fail by a refused row at otherwise default parameters, measured by
``python benchmarks/bench_checks.py --table`` (which prints this table;
doc/results/checks.txt); ``*`` is every check of ``_EVERY`` and ``-name`` leaves one
out. A combination not listed refuses no row of the checks' data."""


def _refused(kind, family, rule):
    words = _REFUSED.get((kind, family, rule), "").split()
    if words[:1] == ["*"]:
        left_out = {word[1:] for word in words[1:]}
        words = [name for name in _EVERY[kind].split() if name not in left_out]
    return ["check_" + name for name in words]


def _is_linear(estimator):
    sizes = estimator.hidden_layer_sizes
    return estimator.model is None and not isinstance(sizes, Integral) and len(sizes) == 0


def _family(estimator, kind):
    """The family an unfitted estimator will use: ``family``, with ``"auto"`` resolved as
    the estimators resolve it for the small data of the checks (the regressor's linear
    model: ``"full"``; otherwise ``"dlr"``)."""
    if estimator.family != "auto":
        return estimator.family
    return "full" if kind == "regressor" and _is_linear(estimator) else "dlr"


def _sample_weight_reasons(estimator, kind):
    """Why weighting a row is not repeating it, to rtol=1e-7, for a Bong estimator."""
    if kind in ("classifier", "poisson"):
        return [_NON_CONJUGATE]
    reasons = []
    if not _is_linear(estimator):
        reasons.append(_NETWORK)
    if estimator.hessian.startswith("mc"):
        reasons.append(_MONTE_CARLO)
    elif estimator.hessian == "lin_ef":
        reasons.append(_EMPIRICAL_FISHER)
    if estimator.rule in _PLAIN_RULES:
        reasons.append(_PLAIN)
    family = _family(estimator, kind)
    if family in _MOMENT_FAMILIES:
        reasons.append(_MOMENT)
    elif family == "diag":
        reasons.append(_DIAG)
    elif family == "dlr" and estimator.rank < 9:
        reasons.append(_LOW_RANK)
    if estimator.drift != 1 or estimator.process_noise != 0:
        reasons.append(_DRIFT)
    if isinstance(estimator.prior_variance, str) or isinstance(estimator.drift, str):
        reasons.append(_BANK)
    if estimator._dtype_name() == "float32":  # the conjugate case: exact in float64
        reasons.append(_FLOAT32 + ("; with dtype='float64' it passes" if not reasons else ""))
    return reasons


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
        unless the configuration is conjugate (the linear ``BongRegressor`` with
        ``rule='bong'`` or ``'blr'``, ``hessian='lin_hess'``, ``family='full'`` or
        ``'dlr'`` with ``rank >= 9``, no drift, a fixed ``prior_variance``) and in
        float64; for a plain-gradient rule, or a moment family without ``backtrack``,
        also the checks in which a row of the checks' data is refused (measured at
        otherwise default parameters by ``benchmarks/bench_checks.py``). For
        ``BongPoissonRegressor`` only the sample-weight check (not conjugate); its refused
        rows were measured for the natural-parameter families with ``bong`` and ``blr``
        only (none).

    Examples
    --------
    >>> from sklearn.utils.estimator_checks import check_estimator
    >>> from skbong import BongRegressor, expected_failed_checks
    >>> est = BongRegressor(dtype="float32")
    >>> sorted(expected_failed_checks(est))
    ['check_sample_weight_equivalence_on_dense_data']
    >>> sorted(expected_failed_checks(BongRegressor()))  # the linear model in float64
    []
    >>> check_estimator(est, expected_failed_checks=expected_failed_checks(est))  # doctest: +SKIP
    """
    if isinstance(estimator, VariationalBase):
        return {SAMPLE_WEIGHT_CHECK: _VARIATIONAL}
    if not isinstance(estimator, BongBase):
        raise TypeError(
            f"expected_failed_checks takes a skbong estimator, got {type(estimator).__name__}"
        )
    kind = "classifier" if isinstance(estimator, ClassifierFace) else "regressor"
    if isinstance(estimator, BongPoissonRegressor):
        kind = "poisson"
    expected = {}
    reasons = _sample_weight_reasons(estimator, kind)
    if reasons:
        expected[SAMPLE_WEIGHT_CHECK] = "; ".join(reasons)
    family = _family(estimator, kind)
    moment = family in _MOMENT_FAMILIES and (
        estimator.backtrack == 0 or estimator.rule in _PLAIN_RULES
    )
    if (moment or estimator.rule in _PLAIN_RULES) and kind != "poisson":
        reason = _REFUSED_MOMENT if moment else _REFUSED_PLAIN
        for name in _refused(kind, family, estimator.rule):
            expected[name] = reason
    return expected
