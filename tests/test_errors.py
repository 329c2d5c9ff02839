"""Errors: each is a clear message naming the problem, and leaves a fitted estimator
exactly as it was.

For every error we snapshot a fitted estimator (posterior_mean_, posterior_var_,
predict / predict_proba outputs, n_observations_, n_skipped_, n_features_in_,
classes_), provoke the error, and compare with ``np.array_equal`` — an error must not
change a single bit. We then stream the same further rows into the estimator and into
an untouched copy and compare again, which also catches hidden state (e.g. the step
counter that keys the MC estimators) that the snapshot cannot see.

Errors covered: NaN / inf in X or y; wrong number of features; an unseen class; classes
changed between calls; invalid parameter values (the message names the parameter);
dlr with mc_hess; a full-covariance family whose P would not fit in memory (refused
before allocating, fast); an update that becomes non-finite (NonFiniteUpdateError
naming the row, posterior unchanged) and ``on_error="skip"``, which skips such rows and
counts them in ``n_skipped_`` (for a deterministic learner the result is bitwise the
fit on the remaining rows). Failed ``fit`` calls on a fitted estimator must also leave
it as it was.
"""

import copy
import re
import time
import warnings

import numpy as np
import pandas as pd
import pytest

from skbong import BongClassifier, BongRegressor, DivergenceWarning, NonFiniteUpdateError

N, D = 24, 3
RNG = np.random.default_rng(3)
X = RNG.normal(size=(N, D))
Y = X @ [1.0, -1.0, 2.0] + 0.1 * RNG.normal(size=N)
Y_BIN = (X[:, 0] + X[:, 1] > 0).astype(int)
X_MORE = RNG.normal(size=(8, D))
Y_MORE = X_MORE @ [1.0, -1.0, 2.0]
Y_BIN_MORE = (X_MORE[:, 0] > 0).astype(int)
# An MC rule: any hidden change of the step counter would change later updates.
PARAMS = dict(family="full", hessian="mc_ef", mc_samples=2, prior_variance=1.0, random_state=0)


@pytest.fixture(scope="module")
def fitted_reg():
    return BongRegressor(**PARAMS, predictive="linmc").fit(X, Y)


@pytest.fixture(scope="module")
def fitted_clf():
    return BongClassifier(**PARAMS, predictive="linmc", predictive_samples=10).fit(X, Y_BIN)


TWINS = {}


def _copy(fitted):
    """A private copy of a fitted estimator; its untouched twin is kept in TWINS."""
    est = copy.deepcopy(fitted)
    TWINS[id(est)] = copy.deepcopy(fitted)
    return est


@pytest.fixture(params=["reg", "clf"])
def est(request, fitted_reg, fitted_clf):
    return _copy(fitted_reg if request.param == "reg" else fitted_clf)


def _labels(est, n=N, more=False):
    if isinstance(est, BongClassifier):
        return Y_BIN_MORE if more else Y_BIN[:n]
    return Y_MORE if more else Y[:n]


def _snapshot(est):
    snap = {
        "posterior_mean_": est.posterior_mean_.copy(),
        "posterior_var_": est.posterior_var_.copy(),
        "n_observations_": est.n_observations_,
        "n_skipped_": est.n_skipped_,
        "n_features_in_": est.n_features_in_,
        "predict": est.predict(X),
    }
    if isinstance(est, BongClassifier):
        snap["classes_"] = est.classes_.copy()
        snap["predict_proba"] = est.predict_proba(X)
    else:
        snap["predict_std"] = est.predict(X, return_std=True)
    return snap


def _assert_untouched(est):
    """est equals its twin now, and after streaming the same rows into both."""
    twin = TWINS.pop(id(est))
    for stage in ("now", "after more rows"):
        a, b = _snapshot(est), _snapshot(twin)
        assert a.keys() == b.keys()
        for k in a:
            assert np.array_equal(a[k], b[k]), f"{k} changed ({stage})"
        if stage == "now":
            est.partial_fit(X_MORE, _labels(est, more=True))
            twin.partial_fit(X_MORE, _labels(est, more=True))


# ----------------------------------------------------------------- bad input data
@pytest.mark.parametrize("where", ["X", "y"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_input(est, where, value):
    Xb, yb = X[:6].copy(), _labels(est, 6).astype(float)
    (Xb if where == "X" else yb)[2] = value
    word = "NaN" if np.isnan(value) else "infinity"
    with pytest.raises(ValueError, match=f"Input {where}.*{word}"):
        est.partial_fit(Xb, yb)
    _assert_untouched(est)


def test_non_finite_predict_input(est):
    Xb = X[:4].copy()
    Xb[1, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        est.predict(Xb)
    _assert_untouched(est)


def test_wrong_number_of_features(est):
    with pytest.raises(ValueError, match=r"X has 4 features.*expecting 3 features"):
        est.partial_fit(np.ones((5, 4)), _labels(est, 5))
    with pytest.raises(ValueError, match=r"X has 2 features.*expecting 3 features"):
        est.predict(np.ones((5, 2)))
    _assert_untouched(est)


def test_bad_sample_weight(est):
    for w, msg in (
        ([1.0, -1.0, 1.0], "sample_weight must be non-negative"),
        ([1.0, np.nan, 1.0], "Input sample_weight contains NaN"),
        ([1.0, 1.0], r"sample_weight\.shape == \(2,\), expected \(3,\)"),
    ):
        with pytest.raises(ValueError, match=msg):
            est.partial_fit(X[:3], _labels(est, 3), sample_weight=np.array(w))
    _assert_untouched(est)


def test_regressor_target_shape_changed(fitted_reg):
    est = _copy(fitted_reg)
    with pytest.raises(ValueError, match=r"y has 2 dimension\(s\) but .* fitted with 1-dimensional y"):
        est.partial_fit(X[:3], np.ones((3, 2)))
    _assert_untouched(est)


def test_unseen_class(fitted_clf):
    est = _copy(fitted_clf)
    with pytest.raises(ValueError, match=r"label\(s\) \[2\] not in classes_"):
        est.partial_fit(X[:3], [0, 2, 1])
    _assert_untouched(est)


def test_unseen_integer_label_between_and_beyond_the_classes():
    """The fast path for integer labels (a plain numpy stream) refuses a label between
    two classes, below the first and past the last, as the validated path does."""
    est = BongClassifier(random_state=0).fit(X[:6], np.array([0, 2, 5, 0, 2, 5]))
    for label in (1, 3, -1, 9):
        with pytest.raises(ValueError, match=rf"label\(s\) \[{label}\] not in classes_"):
            est.partial_fit(X[:2], np.array([2, label]))
    assert est.n_observations_ == 6


def test_classes_changed(fitted_clf):
    est = _copy(fitted_clf)
    with pytest.raises(ValueError, match=r"classes=\[0, 1, 2\] differs from the classes"):
        est.partial_fit(X[:3], [0, 1, 1], classes=[0, 1, 2])
    _assert_untouched(est)


def test_classifier_label_errors():
    with pytest.raises(ValueError, match="at least 2 classes"):
        BongClassifier().fit(X, np.zeros(N))
    with pytest.raises(ValueError, match="classes contains duplicate"):
        BongClassifier().partial_fit(X, Y_BIN, classes=[0, 1, 1])
    with pytest.raises(ValueError, match="classes must be passed"):
        BongClassifier().partial_fit(X, Y_BIN)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        BongClassifier().fit(X, Y)


def test_not_fitted():
    from sklearn.exceptions import NotFittedError

    for est in (BongRegressor(), BongClassifier()):
        with pytest.raises(NotFittedError, match=f"This {type(est).__name__} instance is not fitted"):
            est.predict(X)
    with pytest.raises(NotFittedError, match="This BongRegressor instance is not fitted"):
        BongRegressor().sample_y(X)


# ----------------------------------------------------------------- bad parameters
BAD_PARAMS = [
    ("family", "nope"),
    ("rule", "sgd"),
    ("hessian", "exact"),
    ("rank", 0),
    ("n_iter", 0),
    ("mc_samples", 0),
    ("learning_rate", 0.0),
    ("prior_variance", -1.0),
    ("drift", 1.5),
    ("process_noise", -0.1),
    ("batch_size", 0),
    ("predictive", "exact"),
    ("predictive_samples", 0),
    ("dtype", "float16"),
    ("on_error", "ignore"),
    ("activation", "swish"),
    ("hidden_layer_sizes", (4, 0)),
    ("model", object()),
]


@pytest.mark.parametrize("name, value", BAD_PARAMS, ids=[p for p, _ in BAD_PARAMS])
def test_invalid_parameter_names_it(name, value):
    for cls, y in ((BongRegressor, Y), (BongClassifier, Y_BIN)):
        own = name in ("hidden_layer_sizes", "model")  # checked by skbong, not sklearn
        message = rf"{name} must be" if own else rf"The '{name}' parameter of {cls.__name__} must"
        with pytest.raises(ValueError, match=message):
            cls(**{name: value}).fit(X, y)


def test_invalid_combinations_name_the_parameter(fitted_reg):
    with pytest.raises(ValueError, match="The 'obs_variance' parameter of BongRegressor must"):
        BongRegressor(obs_variance=0.0).fit(X, Y)
    with pytest.raises(ValueError, match=r"learning_rate=2\.0 must be in \(0, 1\] for rule='blr'"):
        BongClassifier(rule="blr", learning_rate=2.0).fit(X, Y_BIN)
    with pytest.raises(ValueError, match="n_samples must be a positive integer, got 0"):
        fitted_reg.sample_y(X, n_samples=0)


@pytest.mark.parametrize(
    "name, value, msg",
    [
        ("prior_variance", -1.0, "The 'prior_variance' parameter of Bong.* must be"),
        # equal to the fitted True, but not a bool: the parameter snapshot compares types
        ("fit_intercept", 1, "The 'fit_intercept' parameter of Bong.* must be"),
        ("family", "diag", r"\['family'\] changed"),
        ("hidden_layer_sizes", (2,), r"\['hidden_layer_sizes'.*\] changed"),
        ("dtype", "float64", r"\['dtype'\] changed"),
    ],
)
def test_invalid_parameter_on_fitted(est, name, value, msg):
    old = est.get_params()[name]
    est.set_params(**{name: value})
    with pytest.raises(ValueError, match=msg):
        est.partial_fit(X[:3], _labels(est, 3))
    est.set_params(**{name: old})
    _assert_untouched(est)


def test_dlr_with_mc_hess(est):
    with pytest.raises(ValueError, match="mc_hess.*dlr"):
        type(est)(family="dlr", hessian="mc_hess").fit(X, _labels(est))
    est.set_params(family="dlr", hessian="mc_hess")
    with pytest.raises(ValueError, match="mc_hess.*dlr"):
        est.partial_fit(X[:3], _labels(est, 3))
    est.set_params(family="full", hessian="mc_ef")
    _assert_untouched(est)


def test_full_family_too_big_is_refused_quickly(est):
    big = dict(family="full", hidden_layer_sizes=(1000, 1000))  # P ~ 1.0e6
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"family='full' with P=\d+ .*GiB.*'dlr'"):
        type(est)(**big).fit(X, _labels(est))
    assert time.perf_counter() - start < 5.0  # no P×P allocation, nothing compiled
    old = est.get_params()
    est.set_params(**big)
    with pytest.raises(ValueError, match=r"P=\d+"):
        est.fit(X, _labels(est))
    est.set_params(**old)
    _assert_untouched(est)


# ----------------------------------------------------------------- failed fit calls
def test_failed_fit_keeps_input_checks(fitted_clf):
    """A fit that fails on its inputs must not change n_features_in_ or classes_."""
    est = _copy(fitted_clf)
    with pytest.raises(ValueError, match="at least 2 classes"):
        est.fit(RNG.normal(size=(6, 5)), np.zeros(6))
    _assert_untouched(est)


def test_failed_fit_keeps_target_encoding(fitted_reg):
    """A fit refused for memory must not keep the new y's shape or obs_variance_."""
    est = _copy(fitted_reg)
    old = est.get_params()
    est.set_params(hidden_layer_sizes=(1000, 1000), obs_variance="auto")
    with pytest.raises(ValueError, match=r"P=\d+"):
        est.fit(X, np.column_stack([Y, 2 * Y]))
    est.set_params(**old)
    _assert_untouched(est)


def test_failed_fit_keeps_feature_names():
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    est = BongRegressor(**PARAMS).fit(df, Y)
    Xb = X.copy()
    Xb[0, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        est.fit(Xb, Y)
    assert list(getattr(est, "feature_names_in_", [])) == ["a", "b", "c"]


# ----------------------------------------------------------------- non-finite updates
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_non_finite_update_raises_and_names_row(est):
    Xb = X_MORE.copy()
    if isinstance(est, BongClassifier):
        # A logistic gradient is bounded by |x| and its curvature by x²/4 (a 1e30 row
        # gives a huge but finite step); 1e39 is finite in float64 (passes validation)
        # but inf in the float32 working dtype.
        Xb[5] = [1e39, -1e39, 1e39]
    else:
        Xb[5] = 1e30  # float32: the gradient x (y − f) / r ~ x² overflows to inf
    with pytest.raises(NonFiniteUpdateError, match=r"\brow 5\b"):
        est.partial_fit(Xb, _labels(est, more=True))
    assert issubclass(NonFiniteUpdateError, ValueError)
    _assert_untouched(est)


def test_non_finite_update_names_rows_of_batch():
    # 1e39 passes validation in float64 and is inf in the float32 working dtype, so the
    # update is non-finite on every backend. (A 1e30 row in the float64 that ``dtype``
    # chooses for this small problem leaves Σ with an eigenvalue ≈ 1e-60, below float64's
    # ε: refused on the CPU as not positive definite, accepted on an H200, by rounding.)
    # The rows come after a first call, whose statistics would standardise them.
    est = _copy(BongRegressor(family="full", batch_size=2, dtype="float32").fit(X, Y))
    Xb = X.copy()
    Xb[7] = 1e39
    with pytest.raises(NonFiniteUpdateError, match=r"rows 6\.\.7"):
        est.partial_fit(Xb, Y)
    _assert_untouched(est)


def _wide_linear(n, d=100, seed=0):
    rng = np.random.default_rng(seed)
    Xw = rng.normal(size=(n, d))
    return Xw, Xw @ (rng.normal(size=d) / np.sqrt(d)) + 0.1 * rng.normal(size=n)


def test_a_diverging_stream_warns_and_names_the_family():
    # VD-EKF on a 100-feature linear model: the diagonal gain Σᵢ σᵢ² xᵢ² / R is far above
    # one, every step overshoots its target and the mean oscillates outward; each update
    # is finite, so nothing is refused. The warning is what makes it loud.
    Xw, yw = _wide_linear(400)
    with pytest.warns(DivergenceWarning, match=r"family='diag'.*Most likely to help: family='diag'"):
        est = BongRegressor(family="diag", prior_variance=1.0, random_state=0).fit(Xw, yw)
    assert est.n_skipped_ == 0 and np.sqrt(np.mean((est.predict(Xw) - yw) ** 2)) > 10 * np.std(yw)
    # the exact posterior on the same rows learns them, silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        good = BongRegressor(random_state=0).fit(Xw, yw)
    assert np.sqrt(np.mean((good.predict(Xw) - yw) ** 2)) < 0.5 * np.std(yw)


def test_no_divergence_warning_for_short_calls_or_constant_targets():
    Xw, yw = _wide_linear(400)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = BongRegressor(family="diag", prior_variance=1.0, random_state=0)
        for start in range(0, 57, 19):  # calls of 19 rows: too few to judge
            est.partial_fit(Xw[start : start + 19], yw[start : start + 19])
        # a constant target: its variance is 0, its mean square is not
        BongRegressor(random_state=0).fit(Xw[:60, :3], np.full(60, 5.0))


def test_on_error_skip_counts_and_skips():
    Xb = X.copy()
    bad = [4, 11, 12]
    Xb[bad] = 1e30
    good = np.setdiff1d(np.arange(N), bad)
    est = BongRegressor(family="full", on_error="skip", dtype="float32").fit(Xb, Y)
    assert est.n_skipped_ == 3
    ref = BongRegressor(family="full", dtype="float32").fit(X[good], Y[good])
    assert np.array_equal(est.posterior_mean_, ref.posterior_mean_)
    assert np.array_equal(est.posterior_var_, ref.posterior_var_)
    est.partial_fit(Xb[:5], Y[:5])
    assert est.n_skipped_ == 4


def test_partial_last_batch_names_and_counts_real_rows():
    """The last mini-batch of 5 rows with batch_size=2 holds one real row (and padding)."""
    Xb = X[:5].copy()
    Xb[4] = 1e30
    with pytest.raises(NonFiniteUpdateError, match=r"\brow 4\b"):
        BongRegressor(family="full", batch_size=2, dtype="float32").fit(Xb, Y[:5])
    est = BongRegressor(family="full", batch_size=2, on_error="skip", dtype="float32").fit(Xb, Y[:5])
    assert est.n_skipped_ == 1


def test_moment_bog_divergence():
    """bog on full_moment subtracts (α/2) x xᵀ / r from Σ each row: Σ soon stops being
    positive definite, an invalid posterior that must be refused. (α = 0.1 keeps the first
    rows valid: the first step is PD iff (α/2)|x₀|²/r < 1, and |x₀|² ≈ 4 here.)"""
    rng = np.random.default_rng(0)
    Xl = 2.5 * rng.normal(size=(64, D))  # (a root mean square below 3: used as given)
    yl = Xl @ [1.0, -1.0, 2.0]
    params = dict(family="full_moment", rule="bog", learning_rate=0.1, prior_variance=1.0, dtype="float64")
    assert 0.5 * 0.1 * np.sum(Xl[0] ** 2) < 1.0
    with pytest.raises(NonFiniteUpdateError, match=r"row (\d+)") as info:
        BongRegressor(**params).fit(Xl, yl)
    row = int(re.search(r"row (\d+)", str(info.value)).group(1))
    ok = BongRegressor(**params).fit(Xl[:row], yl[:row])  # rows before it are fine
    snap = (ok.posterior_mean_.copy(), ok.posterior_var_.copy(), ok.predict(Xl))
    with pytest.raises(NonFiniteUpdateError, match=f"row {0}"):
        ok.partial_fit(Xl[row:], yl[row:])
    assert np.array_equal(snap[0], ok.posterior_mean_)
    assert np.array_equal(snap[1], ok.posterior_var_)
    assert np.array_equal(snap[2], ok.predict(Xl))
    skip = BongRegressor(**params, on_error="skip").fit(Xl, yl)
    assert 0 < skip.n_skipped_ <= 64 - row
    assert skip.n_observations_ == 64
    assert np.all(np.isfinite(skip.posterior_mean_)) and np.all(skip.posterior_var_ > 0)
