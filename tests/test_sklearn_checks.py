"""scikit-learn's estimator checks on both estimators' defaults and on five more
configurations that, with the defaults, cover every family, rule and hessian.

Each check set costs a few dozen fits, most of them compiling new programs, so the
configurations are split between the two estimators instead of repeated for both: the
likelihood-independent parts (families, rules, estimators) are shared code, and each
estimator's own code (targets, labels, outputs) is checked by its default and by the
other configurations it carries.

Expected failures are listed per check with the reason its premise does not hold
for an online, non-conjugate Bayesian learner; nothing else is skipped.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skbong import BongClassifier, BongRegressor

REGRESSOR_CONFIGS = [
    {},
    {"family": "dlr", "rule": "blr", "rank": 3, "n_iter": 2, "drift": 0.999},
    {"family": "full", "rule": "bog", "hessian": "lin_ef", "learning_rate": 0.05},
    {
        "family": "diag_moment",
        "rule": "bbb",
        "hessian": "mc_hess",
        "n_iter": 2,
        "mc_samples": 4,
        "learning_rate": 1e-5,
        "prior_variance": 0.1,
    },
]
CLASSIFIER_CONFIGS = [
    {},
    # α = 1e-5 barely moves the belief from its prior (for the sample-weight check, below):
    # the plugin predictive's argmax still separates the classes, the linearised
    # predictive's average over a near-prior covariance does not (accuracy under 0.83).
    {
        "family": "full_moment",
        "rule": "blr",
        "n_iter": 2,
        "learning_rate": 1e-5,
        "prior_variance": 0.1,
        "predictive": "plugin",
    },
    {"family": "diag", "rule": "blr", "hessian": "mc_ef", "n_iter": 2, "mc_samples": 4},
]
CONFIGS = REGRESSOR_CONFIGS + CLASSIFIER_CONFIGS

SAMPLE_WEIGHT_REASON = (
    "a row of weight 2 is one update with a doubled log-likelihood, while its duplicate is two "
    "sequential approximate updates; they coincide only in the conjugate case, and not to "
    "rtol=1e-7 in float32"
)


SLOW_RATE_REASON = (
    "a plain-gradient / moment rule at a learning rate small enough to keep the covariance "
    "positive definite on the checks' unscaled inputs (x ≈ 100) learns too little in one "
    "pass to reach the accuracy threshold"
)
TRAIN_CHECKS = ("check_classifiers_train", "check_regressors_train")
MOMENT_GD_REASON = (
    "BBB on (μ, σ²) is a plain-gradient step on σ² whose KL curvature grows like 1/σ⁴, so on "
    "the checks' unscaled inputs (x ≈ 100) any fixed learning rate steps σ² below zero within "
    "a few rows, and skbong refuses the update instead of returning a corrupt posterior"
)
LOC_100_CHECKS = ("check_fit_idempotent", "check_fit_check_is_fitted", "check_n_features_in")
BOG_REASON = (
    "BOG's plain-gradient step adds 2α Σ G Σ to the precision: with the intercept's prior "
    "variance 100 and these checks' unscaled targets (|y| in the hundreds) it leaves a "
    "precision ill-conditioned beyond the dtype within 34 rows (measured: rows 0-33 at "
    "α = 0.02-0.1, float32 and float64), and skbong refuses the update; at α = 0.05 one pass "
    "on the standardised train data reaches R² 0.49, under the check's 0.5"
)
BOG_CHECKS = (
    "check_regressors_train",
    "check_regressors_train(readonly_memmap=True)",
    "check_regressors_train(readonly_memmap=True,X_dtype=float32)",
    "check_regressor_data_not_an_array",
    "check_regressor_multioutput",
    "check_dtype_object",
)


def _expected_failures(estimator):
    failures = {}
    # With a deterministic estimator and α ≤ 1e-5 a doubled step and two steps differ by
    # O(α²) relative, inside the check's rtol: that configuration must pass.
    tiny_steps = estimator.hessian.startswith("lin") and estimator.learning_rate <= 1e-5
    if estimator.rule == "bong" or not tiny_steps:
        failures["check_sample_weight_equivalence_on_dense_data"] = SAMPLE_WEIGHT_REASON
    if estimator.family == "diag_moment" and estimator.rule == "bbb":
        for name in TRAIN_CHECKS:
            failures[name] = SLOW_RATE_REASON
        for name in LOC_100_CHECKS:
            failures[name] = MOMENT_GD_REASON
    if estimator.family == "full" and estimator.rule == "bog":
        for name in BOG_CHECKS:
            failures[name] = BOG_REASON
    return failures


def _estimators():
    for cls, configs in ((BongRegressor, REGRESSOR_CONFIGS), (BongClassifier, CLASSIFIER_CONFIGS)):
        for params in configs:
            yield cls(random_state=0, **params)


@parametrize_with_checks(list(_estimators()), expected_failed_checks=_expected_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_configs_cover_everything():
    """The configurations above jointly cover every family, rule and hessian."""
    families = {p.get("family", "dlr") for p in CONFIGS}
    rules = {p.get("rule", "bong") for p in CONFIGS}
    hessians = {p.get("hessian", "lin_hess") for p in CONFIGS}
    assert families == {"full", "full_moment", "diag", "diag_moment", "dlr"}
    assert rules == {"bong", "bog", "blr", "bbb"}
    assert hessians == {"lin_hess", "lin_ef", "mc_ef", "mc_hess"}
