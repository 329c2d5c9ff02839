"""Networks learn from the data users have: duplicated rows (a precision grown past 1/ε
along repeated directions) and raw input scales (the first call's standardisation)."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special
from sklearn.base import clone

from skbong import BongClassifier, BongRegressor, VariationalRegressor
from skbong._core.inputs import INPUT_RMS_MAX
from skbong.engine import linalg


def _duplicated(seed, reps=100):
    """20 distinct rows, each repeated ``reps`` times in a shuffled order, with noise-free
    targets a network can fit exactly (y = 2x − 1): the learned noise falls toward 0 and
    the precision along the rows' directions grows past 1/ε of float32."""
    rng = np.random.default_rng(100 + seed)
    x0 = rng.normal(size=(20, 1))
    y0 = 2.0 * x0[:, 0] - 1.0
    idx = rng.permutation(np.repeat(np.arange(20), reps))
    return x0, y0, x0[idx], y0[idx]


def test_duplicated_rows_are_learned():
    # before the fallback of unit_chol_inverse every one of these fits refused an update
    # between rows 640 and 1,160
    for seed in range(3):
        x0, y0, X, y = _duplicated(seed)
        reg = BongRegressor(hidden_layer_sizes=(32,), random_state=seed).fit(X, y)
        assert reg.n_skipped_ == 0
        # the rows were seen 100 times each without noise: a model that learned them
        # predicts them far better than 1 % of the targets' spread (a model that had not
        # would be off by about their spread, 2)
        err = np.abs(reg.predict(x0) - y0)
        assert err.max() < 1e-2 * y0.std(), err.max()
        mean, std = reg.predict(x0, return_std=True)
        assert np.all(np.isfinite(std)) and np.all(std > 0)


@pytest.mark.parametrize("cls", [BongRegressor, VariationalRegressor])
def test_a_network_fit_on_copies_warns_and_learns(cls):
    """20 distinct rows (x, y) repeated 100 times: the network regressors warn that their
    noise and uncertainty shrink as if the copies were independent, and learn all the
    same; with 2,000 distinct rows, with copies of x whose targets differ (repeated
    measurements), or for the linear model (whose exact posterior is not fooled),
    nothing is said. 1,000 distinct rows of 2,000 is the threshold (at most half)."""
    kw = dict(max_iter=2) if cls is VariationalRegressor else {}
    net = cls(hidden_layer_sizes=(4,), random_state=0, **kw)
    x0, y0, X, y = _duplicated(0)
    with pytest.warns(UserWarning, match=r"only 20 of the 2000 rows \(x, y\) are distinct"):
        net.fit(X, y)
    assert np.all(np.isfinite(net.predict(x0)))
    rng = np.random.default_rng(3)
    noisy = y + 0.1 * rng.normal(size=y.size)  # the same x, measured again
    half = np.r_[X[:1000, 0] + np.arange(1000), X[:1000, 0] + np.arange(1000)][:, None]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="only .* distinct")
        clone(net).fit(rng.normal(size=X.shape), y)
        clone(net).fit(X, noisy)
        BongRegressor().fit(X, y)
        clone(net).fit(np.r_[half[:1000], half[:1000] + 0.5], y)  # 2,000 distinct rows
    with pytest.warns(UserWarning, match="only 1000 of the 2000"):
        clone(net).fit(half, np.r_[y[:1000], y[:1000]])


def _inner(k=11, p=200, big=1e5, seed=0):
    """I + AᵀA (float32) with one column of A nearly parallel to a large one: cond ≈ big²."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(p, k))
    a[:, 1] = a[:, 0] * (1 + 1e-6)
    a[:, :2] *= big
    a = jnp.asarray(a, jnp.float32)
    return jnp.eye(k, dtype=jnp.float32) + a.T @ a


def test_unit_chol_inverse_falls_back_only_where_the_factorisation_fails():
    ill = _inner()
    assert not np.all(np.isfinite(np.asarray(linalg.tril_inverse(linalg.cholesky(ill)))))
    m = np.asarray(jax.jit(linalg.unit_chol_inverse)(ill), np.float64)
    assert np.all(np.isfinite(m))
    # Mᵀ M = inner⁻¹ with every eigenvalue of inner clamped at its exact bound 1, so M's
    # singular values are at most 1 (up to float32 rounding of the eigenvectors)
    assert np.linalg.norm(m, 2) <= 1 + 1e-5
    # a well-conditioned inner keeps its Cholesky factor, bit for bit
    good = _inner(big=1.0)
    chol = np.asarray(jax.jit(lambda a: linalg.tril_inverse(linalg.cholesky(linalg.sym(a))))(good))
    np.testing.assert_array_equal(np.asarray(jax.jit(linalg.unit_chol_inverse)(good)), chol)
    # overflow still gives NaN (a dropped update would be silent)
    assert np.all(np.isnan(np.asarray(linalg.unit_chol_inverse(good.at[0, 0].set(jnp.inf)))))


def test_clamped_inverse_root_is_an_inverse_root():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(30, 6))
    inner = np.eye(6) + a.T @ a
    with jax.enable_x64(True):
        m = np.asarray(linalg._clamped_inverse_root(jnp.asarray(inner)))
    np.testing.assert_allclose(m.T @ m @ inner, np.eye(6), atol=1e-12)


def _raw(n, scale, seed, classify=False):
    """z ~ N(0, 1) in 5 columns seen as x = scale · z + 3 · scale (an offset of 3 s.d.),
    with y from the known function of z."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 5))
    f = np.sin(2 * z[:, 0]) + z[:, 1]
    y = (f > 0).astype(int) if classify else f + 0.1 * rng.normal(size=n)
    return scale * z + 3 * scale, y, z


def _linear_r2(z, y, zt, yt):
    """Test R² of least squares on z (the independent baseline of the regressor)."""
    design = np.c_[z, np.ones(len(z))]
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    pred = np.c_[zt, np.ones(len(zt))] @ coef
    return 1 - np.mean((yt - pred) ** 2) / np.var(yt)


@pytest.mark.parametrize("scale", [1e2, 1e4])
def test_regressor_learns_from_raw_inputs(scale):
    X, y, z = _raw(2000, scale, 0)
    Xt, yt, zt = _raw(1000, scale, 1)
    reg = BongRegressor(hidden_layer_sizes=(32,), random_state=0).fit(X, y)
    r2 = reg.score(Xt, yt)
    # the noise (0.1) leaves R² ≤ 1 − 0.01 / Var(y) ≈ 0.99; the linear model of z gets
    # about 0.65 (sin(2z) is far from linear): the network must beat it clearly
    linear = _linear_r2(z, y, zt, yt)
    assert r2 > max(0.85, linear + 0.15), (r2, linear)
    np.testing.assert_allclose(reg.input_mean_, X.mean(axis=0))
    np.testing.assert_allclose(reg.input_scale_, X.std(axis=0))


@pytest.mark.parametrize("scale", [1e2, 1e4])
def test_classifier_learns_from_raw_inputs(scale):
    X, y, z = _raw(2000, scale, 0, classify=True)
    Xt, yt, zt = _raw(1000, scale, 1, classify=True)
    clf = BongClassifier(hidden_layer_sizes=(32,), random_state=0).fit(X, y)
    # the labels are a deterministic function of z (Bayes accuracy 1); the best linear
    # rule (sign of z₁ + 2 z₀ near the origin) is about 0.8 accurate
    linear = np.mean(((z[:, 1] + 2 * z[:, 0]) > 0) == y)
    assert clf.score(Xt, yt) > max(0.9, linear + 0.05), (clf.score(Xt, yt), linear)


def _standardised(X, est):
    return (X - est.input_mean_) / est.input_scale_


@pytest.mark.parametrize("hidden", [(8,), ()], ids=["network", "linear"])
@pytest.mark.parametrize("cls", [BongRegressor, BongClassifier])
def test_raw_predictions_equal_the_standardised_models(cls, hidden):
    """The model fitted on raw rows is, bit for bit, the one fitted on the rows
    standardised with its input_mean_ / input_scale_ (which are used as given), in fit,
    partial_fit and every prediction; input gradients follow the chain rule. The linear
    model's coef_ and intercept_ are on the raw scale: they give its predictions."""
    classify = cls is BongClassifier
    X, y, _ = _raw(600, 1e4, 2, classify=classify)
    X2, y2, _ = _raw(300, 1e2, 3, classify=classify)  # a later call on another scale
    Xt, _, _ = _raw(50, 1e4, 4, classify=classify)
    kw = dict(refine=0) if classify else {}  # one pass: the same rows, the same steps
    if classify and not hidden:  # one prior: predict_proba is σ(score), not a mixture
        kw["prior_variance"] = 1.0
    raw = cls(hidden_layer_sizes=hidden, random_state=0, **kw).fit(X, y).partial_fit(X2, y2)
    std = clone(raw).fit(_standardised(X, raw), y).partial_fit(_standardised(X2, raw), y2)
    np.testing.assert_array_equal(std.input_mean_, 0.0)  # used as given
    np.testing.assert_array_equal(std.input_scale_, 1.0)
    assert raw.input_mean_[0] > 1e4  # the first call's statistics, kept by partial_fit
    np.testing.assert_array_equal(raw._state[0], std._state[0])
    Zt = _standardised(Xt, raw)
    if not hidden:  # W (x − m) / s + b = (W / s) x + (b − (W / s) m), in rounding
        scores = (Xt @ raw.coef_.T + raw.intercept_).ravel()
        if classify:  # two classes, the plugin predictive: σ(score)
            scores, expect = scipy.special.expit(scores), std.predict_proba(Zt)[:, 1]
        else:
            expect = std.predict(Zt)
        # the standardised path rounds in the working dtype: |Δscore| ≲ ε Σⱼ|wⱼ zⱼ| (a
        # few rounding steps of each term), and σ' ≤ 1 / 4
        terms = np.abs(Zt) @ np.abs(raw.coef_.ravel() * raw.input_scale_) + 1.0
        eps = np.finfo(raw._state[0].dtype).eps
        np.testing.assert_allclose(scores, expect, rtol=0, atol=4 * eps * terms.max())
    if classify:
        np.testing.assert_array_equal(raw.predict_proba(Xt), std.predict_proba(Zt))
        return
    for a, b in zip(raw.predict(Xt, return_std=True), std.predict(Zt, return_std=True)):
        np.testing.assert_array_equal(a, b)
    _, grad_raw = raw.predict(Xt[:1], return_mean_grad=True)
    _, grad_std = std.predict(Zt[:1], return_mean_grad=True)
    np.testing.assert_allclose(grad_raw, grad_std / raw.input_scale_, rtol=1e-12)


def test_inputs_on_the_priors_scale_are_used_as_given():
    rng = np.random.default_rng(5)
    X = INPUT_RMS_MAX * 0.99 * rng.normal(size=(200, 3)) / 1.2  # every column's RMS ≤ 3
    assert np.sqrt(np.mean(X**2, axis=0)).max() <= INPUT_RMS_MAX
    y = X[:, 0]
    net = BongRegressor(hidden_layer_sizes=(4,), random_state=0).fit(X, y)
    np.testing.assert_array_equal(net.input_mean_, 0.0)
    np.testing.assert_array_equal(net.input_scale_, 1.0)
    lin = BongRegressor().fit(X, y)
    np.testing.assert_array_equal(lin.input_mean_, 0.0)
    np.testing.assert_array_equal(lin.input_scale_, 1.0)
    # one row says nothing of the spread: used as given
    one = BongRegressor(hidden_layer_sizes=(4,), random_state=0).partial_fit(100 * X[:1], y[:1])
    np.testing.assert_array_equal(one.input_scale_, 1.0)


def test_the_statistics_weigh_rows_by_their_sample_weight():
    rng = np.random.default_rng(6)
    X = 50 * rng.normal(size=(40, 2)) + 200
    y = rng.normal(size=40)
    w = rng.integers(0, 4, size=40)
    weighted = BongRegressor(hidden_layer_sizes=(4,), random_state=0).fit(X, y, sample_weight=w)
    rep = np.repeat(np.arange(40), w)
    np.testing.assert_allclose(weighted.input_mean_, X[rep].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(weighted.input_scale_, X[rep].std(axis=0), rtol=1e-12)


def test_without_an_intercept_the_linear_inputs_are_only_scaled():
    """fit_intercept=False: x / s with s the column's root mean square (centring would
    add the intercept the user left out); with an intercept, the mean and the s.d."""
    rng = np.random.default_rng(8)
    X = 40 * rng.normal(size=(100, 2)) + [300, -5]
    y = X @ [0.01, 0.02] + 0.1 * rng.normal(size=100)
    through = BongRegressor(fit_intercept=False).fit(X, y)
    np.testing.assert_array_equal(through.input_mean_, 0.0)
    np.testing.assert_allclose(through.input_scale_, np.sqrt(np.mean(X**2, axis=0)), rtol=1e-12)
    np.testing.assert_array_equal(through.intercept_, 0.0)
    line = BongRegressor().fit(X, y)
    np.testing.assert_allclose(line.input_mean_, X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(line.input_scale_, X.std(axis=0), rtol=1e-12)


def test_a_column_that_a_few_corrupt_rows_dominate_is_used_as_given():
    """Two entries of 1e30 would set a column's scale, and standardised with it the other
    rows would be one value: that column is used as given (its rows judged as any
    other: skipped here, with on_error="skip"), while a column of large but ordinary
    spread beside it is standardised; a rare binary column is not dominated."""
    rng = np.random.default_rng(9)
    X = np.c_[rng.normal(size=60), 100 * rng.normal(size=60), rng.random(60) < 0.05]
    y = X @ [1.0, 0.01, 1.0] + 0.1 * rng.normal(size=60)
    X[[3, 40], 0] = 1e30
    est = BongRegressor(on_error="skip", dtype="float32").fit(X, y)
    assert est.input_mean_[0] == 0.0 and est.input_scale_[0] == 1.0
    assert est.input_scale_[1] > 50 and est.input_scale_[2] != 1.0
    assert est.n_skipped_ == 2
    clean = np.ones(60, bool)
    clean[[3, 40]] = False
    assert est.score(X[clean], y[clean]) > 0.9


def test_a_constant_column_is_centred_not_scaled():
    rng = np.random.default_rng(7)
    X = np.c_[100 * rng.normal(size=50), np.full(50, 7.0)]
    net = BongRegressor(hidden_layer_sizes=(4,), random_state=0).fit(X, rng.normal(size=50))
    assert net.input_scale_[1] == 1.0 and net.input_mean_[1] == 7.0
    assert np.all(np.isfinite(net.predict(X)))


def test_sklearn_n_features_in_check_passes_for_the_network_classifier():
    from sklearn.utils.estimator_checks import check_n_features_in

    # X = N(100, 1): before the standardisation the classifier refused row ~110
    check_n_features_in("BongClassifier", BongClassifier(hidden_layer_sizes=(32,)))
