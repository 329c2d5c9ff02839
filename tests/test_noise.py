"""The learned observation noise (``obs_variance="auto"``) against the closed-form
normal–inverse-gamma (NIG) posterior of Bayesian linear regression with unknown noise.

The reference is written here from the textbook conjugate formulas (batch, in numpy,
nothing from skbong): prior θ | σ² ~ N(0, σ² V₀), σ² ~ IG(a₀, b₀), and

    V = (V₀⁻¹ + Xᵀ W X)⁻¹,  μ = V Xᵀ W y,  a = a₀ + Σw / 2,
    b = b₀ + (yᵀ W y − μᵀ V⁻¹ μ) / 2,

with predictive Student-t(2a, xᵀμ, (b / a)(1 + xᵀ V x)). skbong starts from a₀ = 1,
ŝ₀ = b₀ / a₀ = 1 and the prior covariance diag(σ₀², …, σ₀², 100) (weights, intercept),
which is V₀ at ŝ₀ = 1. Its belief holds Σ = (b / a) V. Agreement is to float64 rounding
of an O(n P²) computation (tolerance 1e-9 relative), for any data order, mini-batch
size, one-row ``partial_fit`` calls, a pickle in the middle, and weights that stand for
repeated rows.
"""

import pickle
import warnings

import numpy as np
import pytest
import scipy.stats

from skbong import BongRegressor
from skbong._online import regression_face
from skbong.engine.models import OUTPUT_BIAS_VARIANCE

PRIOR_VAR = 0.5
RTOL = 1e-9


def _data(n=40, d=3, seed=0, noise=0.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ np.array([1.0, -2.0, 0.5]) + 3.0 + noise * rng.normal(size=n)
    return X, y


def nig_posterior(X, y, w=None, prior_var=PRIOR_VAR, a0=1.0, b0=1.0):
    """Closed-form NIG posterior (mean, V, a, b) with an intercept column last."""
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    H = np.column_stack([X, np.ones(len(y))])
    v0_inv = np.diag(1.0 / np.r_[np.full(X.shape[1], prior_var), OUTPUT_BIAS_VARIANCE])
    prec = v0_inv + H.T @ (w[:, None] * H)
    V = np.linalg.inv(prec)
    mean = V @ (H.T @ (w * y))
    a = a0 + 0.5 * w.sum()
    b = b0 + 0.5 * (y @ (w * y) - mean @ prec @ mean)
    return mean, V, a, b


def _check(est, X, y, w=None):
    mean, V, a, b = nig_posterior(X, y, w)
    np.testing.assert_allclose(est.coef_, mean[:-1], rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(est.intercept_, mean[-1], rtol=RTOL)
    np.testing.assert_allclose(est.obs_variance_, [b / a], rtol=RTOL)
    np.testing.assert_allclose(est.noise_dof_, [2 * a], rtol=RTOL)
    # the belief's covariance is (b / a) V
    np.testing.assert_allclose(est.posterior_var_, b / a * np.diag(V), rtol=RTOL)


def _reg(**kw):
    params = dict(family="full", prior_variance=PRIOR_VAR, dtype="float64", random_state=0)
    return BongRegressor(**{**params, **kw})


@pytest.mark.parametrize("family", ["full", "dlr"])
def test_fit_equals_closed_form_nig(family):
    X, y = _data()
    est = _reg(family=family, rank=X.shape[1] + 1).fit(X, y)
    assert est.obs_variance == "auto"  # the default
    _check(est, X, y)


def test_any_order_batch_size_and_row_by_row():
    X, y = _data(seed=1)
    order = np.random.default_rng(5).permutation(len(y))
    _check(_reg().fit(X[order], y[order]), X, y)
    _check(_reg(batch_size=7).fit(X, y), X, y)  # 40 rows: five of 7, one padded step
    est = _reg()
    for i in range(len(y)):
        est.partial_fit(X[i : i + 1], y[i : i + 1])
        if i == 17:
            est = pickle.loads(pickle.dumps(est))  # the noise posterior survives pickling
    _check(est, X, y)


def test_weight_is_repeated_rows():
    X, y = _data(n=20, seed=2)
    w = np.random.default_rng(3).integers(1, 4, size=len(y)).astype(float)
    _check(_reg().fit(X, y, sample_weight=w), X, y, w)
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    _check(_reg().fit(X[rep], y[rep]), X, y, w)


def test_predictive_is_student_t():
    X, y = _data(seed=4)
    Xt, yt = _data(n=9, seed=5)
    est = _reg(calibration=None).fit(X, y)  # the model's own quantiles (test_calibration)
    mean, V, a, b = nig_posterior(X, y)
    H = np.column_stack([Xt, np.ones(len(yt))])
    loc = H @ mean
    scale = np.sqrt(b / a * (1 + np.einsum("np,pq,nq->n", H, V, H)))
    ref = scipy.stats.t(2 * a, loc=loc, scale=scale)
    np.testing.assert_allclose(est.predict_logpdf(Xt, yt), ref.logpdf(yt), rtol=1e-9)
    m, std = est.predict(Xt, return_std=True)
    np.testing.assert_allclose(m, loc, rtol=1e-9)
    np.testing.assert_allclose(std, ref.std(), rtol=1e-9)
    lo, hi = est.predict_interval(Xt, coverage=0.8)
    np.testing.assert_allclose(lo, ref.ppf(0.1), rtol=1e-9)
    np.testing.assert_allclose(hi, ref.ppf(0.9), rtol=1e-9)


@pytest.mark.parametrize("weight, discount", [(0.1, 1.0), (0.5, 1.0), (0.1, 0.8)])
def test_student_t_std_at_few_degrees_of_freedom(weight, discount):
    """The standard deviation of a Student-t is its scale × √(ν / (ν − 2)), and infinite
    for 1 < ν ≤ 2: against scipy, at ν = 2 + 2w after two rows of weight w (a = 1 + w),
    and at 1 < ν < 2 where a discount of 0.8 forgets the prior's a = 1 faster than rows of
    weight 0.1 add to it."""
    X, y = _data(n=2, seed=6)
    Xt, _ = _data(n=3, seed=7)
    est = _reg(calibration=None, noise_discount=discount)
    est.fit(X, y, sample_weight=np.full(2, weight))
    dof = est.noise_dof_[0]
    if discount == 1.0:
        assert dof == pytest.approx(2.0 + 2.0 * weight, rel=1e-12)
    else:
        assert 1.0 < dof < 2.0
    ref = scipy.stats.t(dof, *_loc_scale(est, Xt))
    np.testing.assert_allclose(est.predict(Xt, return_std=True)[1], ref.std(), rtol=1e-12)


def test_learns_the_noise_scale_of_raw_targets():
    # y on any scale: the noise estimate follows it (NIG is scale-equivariant but for the
    # IG(1, 1) prior, worth two rows). A broad relative prior keeps the weights' prior
    # term out of b, so the estimate is near the residual variance of least squares.
    X, y = _data(n=400, seed=6, noise=0.3)
    H = np.column_stack([X, np.ones(len(y))])
    resid = y - H @ np.linalg.lstsq(H, y, rcond=None)[0]
    for scale in (1.0, 1000.0):
        est = BongRegressor(prior_variance=100.0, random_state=0).fit(X, scale * y + 5 * scale)
        ratio = est.obs_variance_[0] / (scale**2 * np.mean(resid**2))
        assert 0.95 < ratio < 1.1, ratio


def test_fixed_noise_and_switching():
    X, y = _data(seed=7)
    est = _reg(obs_variance=0.25).fit(X, y)
    np.testing.assert_array_equal(est.obs_variance_, [0.25])
    assert np.isinf(est.noise_dof_).all()
    # switched to "auto" after a fit: learning starts from the value in use
    est.set_params(obs_variance="auto").partial_fit(X[:1], y[:1])
    assert est.noise_dof_[0] == 3.0 and est.obs_variance_[0] != 0.25
    # and back to a number: used from the next update, never ignored
    est.set_params(obs_variance=0.5).partial_fit(X[:1], y[:1])
    np.testing.assert_array_equal(est.obs_variance_, [0.5])


def discounted_nig(X, y, delta, prior_var=PRIOR_VAR, a0=1.0, b0=1.0):
    """West & Harrison's discounted NIG filter, row by row (their section 10.8): the
    unit-noise Kalman step of (μ, V) and a ← δ a + 1/2, b ← δ b + e² / (2 (hᵀVh + 1))."""
    H = np.column_stack([X, np.ones(len(y))])
    V = np.diag(np.r_[np.full(X.shape[1], prior_var), OUTPUT_BIAS_VARIANCE])
    mean, a, b = np.zeros(H.shape[1]), a0, b0
    for h, t in zip(H, y):
        e, s = t - h @ mean, h @ V @ h + 1.0
        gain = V @ h / s
        mean, V = mean + gain * e, V - np.outer(gain, V @ h)
        a, b = delta * a + 0.5, delta * b + 0.5 * e * e / s
    return mean, V, a, b


@pytest.mark.parametrize("delta", [1.0, 0.9])
def test_discounted_noise_equals_west_harrison(delta):
    # δ = 1 must also equal the batch closed form: the sequential oracle is checked too
    X, y = _data(seed=9)
    mean, V, a, b = discounted_nig(X, y, delta)
    if delta == 1.0:
        ref = nig_posterior(X, y)
        np.testing.assert_allclose([a, b], ref[2:], rtol=RTOL)
    est = _reg(noise_discount=delta).fit(X, y)
    np.testing.assert_allclose(est.coef_, mean[:-1], rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(est.obs_variance_, [b / a], rtol=RTOL)
    np.testing.assert_allclose(est.noise_dof_, [2 * a], rtol=RTOL)
    np.testing.assert_allclose(est.posterior_var_, b / a * np.diag(V), rtol=RTOL)


def test_noise_discount_auto_and_set_params():
    X, y = _data(seed=10)
    n = len(y)

    def dof(delta):  # 2a after n rows from a₀ = 1: a ← δ a + 1/2
        return 2 * (delta**n + 0.5 * sum(delta**k for k in range(n)))

    lin = _reg().fit(X, y)  # "auto" is the exact NIG (δ = 1) for the linear model
    np.testing.assert_allclose(lin.noise_dof_, [dof(1.0)], rtol=RTOL)
    net = _reg(family="diag", hidden_layer_sizes=(3,), passes=1).fit(X, y)  # networks: δ = 0.99
    np.testing.assert_allclose(net.noise_dof_, [dof(0.99)], rtol=RTOL)
    net = _reg(family="diag", hidden_layer_sizes=(3,), noise_discount=1.0, passes=1).fit(X, y)
    np.testing.assert_allclose(net.noise_dof_, [dof(1.0)], rtol=RTOL)
    # changed after a fit: used from the next update (a = δ a + 1/2 for that row)
    dof = lin.noise_dof_[0]
    lin.set_params(noise_discount=0.5).partial_fit(X[:1], y[:1])
    np.testing.assert_allclose(lin.noise_dof_, [0.5 * dof + 1.0], rtol=RTOL)
    with pytest.raises(ValueError, match="noise_discount"):
        _reg(noise_discount=1.5).fit(X, y)


def test_sample_y_integrates_the_noise():
    X, y = _data(n=6, seed=8)
    est = _reg().fit(X, y)
    draws = est.sample_y(X[:1], n_samples=20000, random_state=0)[0]
    _, std = est.predict(X[:1], return_std=True)
    # Student-t with 2a = 8 dof: the sample sd estimates std within a few percent
    assert abs(draws.std() / std[0] - 1) < 0.05


def nig_log_evidence(X, y, prior_var, a0=1.0, b0=1.0):
    """log p(y | X) of the NIG model: the ratio of normalisers, prior over posterior."""
    mean, V, a, b = nig_posterior(X, y, prior_var=prior_var, a0=a0, b0=b0)
    v0 = np.r_[np.full(X.shape[1], prior_var), OUTPUT_BIAS_VARIANCE]
    return (
        scipy.special.gammaln(a)
        - scipy.special.gammaln(a0)
        + a0 * np.log(b0)
        - a * np.log(b)
        + 0.5 * (np.linalg.slogdet(V)[1] - np.sum(np.log(v0)))
        - 0.5 * len(y) * np.log(2 * np.pi)
    )


def gaussian_log_evidence(X, y, prior_var, obs_var):
    """log N(y; 0, H V₀ Hᵀ + R I): the marginal likelihood at a fixed noise."""
    H = np.column_stack([X, np.ones(len(y))])
    v0 = np.r_[np.full(X.shape[1], prior_var), OUTPUT_BIAS_VARIANCE]
    cov = H @ np.diag(v0) @ H.T + obs_var * np.eye(len(y))
    return scipy.stats.multivariate_normal(np.zeros(len(y)), cov).logpdf(y)


@pytest.mark.parametrize("obs_variance", ["auto", 0.3])
def test_bank_evidence_is_the_marginal_likelihood(obs_variance):
    from skbong._online.bank import PRIOR_GRID

    X, y = _data(n=30, seed=9)
    est = _reg(prior_variance="bank", obs_variance=obs_variance)
    est.fit(X[:11], y[:11]).partial_fit(X[11:], y[11:])  # any split of the stream
    if obs_variance == "auto":
        ref = [nig_log_evidence(X, y, v) for v in PRIOR_GRID]
    else:
        ref = [gaussian_log_evidence(X, y, v, obs_variance) for v in PRIOR_GRID]
    np.testing.assert_allclose(est.log_evidence_, ref, rtol=1e-9)
    weights = np.exp(np.array(ref) - max(ref))
    np.testing.assert_allclose(est.prior_weights_, weights / weights.sum(), atol=1e-9)
    assert est.prior_variance_ == PRIOR_GRID[np.argmax(ref)]
    # each filter is the exact posterior of its prior variance; the mean is their mixture
    means = [nig_posterior(X, y, prior_var=v)[0] for v in PRIOR_GRID]
    mixed = np.einsum("k,kp->p", est.prior_weights_, means)
    if obs_variance == "auto":
        np.testing.assert_allclose(est.coef_, mixed[:-1], rtol=1e-8)


def test_network_bank_evidence_is_discounted():
    """A network's bank weights forget: log_evidence_ of filter k is
    Σₜ δ^(n−1−t) log p(yₜ | xₜ, past) with δ = 0.99, each term after the first the
    one-step-ahead predictive density of a filter run alone at that prior variance (its
    ``predict_logpdf`` before it learns the row; linearised Student-t, as in the stream);
    the first row's term is the bank's own after one row. The stream is split in two
    calls, so the old evidence must be discounted by δ per new row. float64: rtol 1e-9."""
    from skbong._online.bank import PRIOR_GRID

    X, y = _data(n=12, seed=12)
    n, kw = len(y), dict(hidden_layer_sizes=(3,), family="dlr", rank=4)
    bank = _reg(prior_variance="bank", **kw).fit(X[:5], y[:5]).partial_fit(X[5:], y[5:])
    later = []
    for v in PRIOR_GRID:
        alone = _reg(prior_variance=v, passes=1, **kw).fit(X[:1], y[:1])
        terms = []
        for t in range(1, n):
            terms.append(alone.predict_logpdf(X[t : t + 1], y[t : t + 1])[0])
            alone.partial_fit(X[t : t + 1], y[t : t + 1])
        later.append(terms)
    row0 = _reg(prior_variance="bank", **kw).fit(X[:1], y[:1]).log_evidence_
    expected = 0.99 ** (n - 1) * row0 + np.array(later) @ 0.99 ** np.arange(n - 2, -1, -1.0)
    np.testing.assert_allclose(bank.log_evidence_, expected, rtol=1e-9)
    assert not np.allclose(bank.log_evidence_, row0 + np.sum(later, axis=1), rtol=1e-6)


def test_bank_predictive_is_the_mixture():
    X, y = _data(n=25, seed=10)
    Xt, yt = _data(n=5, seed=11)
    bank = _reg(prior_variance="bank", calibration=None).fit(X, y)
    parts = [_reg(prior_variance=v).fit(X, y) for v in bank.prior_grid_]
    w = bank.prior_weights_
    dens = np.array([np.exp(p.predict_logpdf(Xt, yt)) for p in parts])
    np.testing.assert_allclose(np.exp(bank.predict_logpdf(Xt, yt)), w @ dens, rtol=1e-9)
    means = np.array([p.predict(Xt) for p in parts])
    np.testing.assert_allclose(bank.predict(Xt), w @ means, rtol=1e-9)
    lo, hi = bank.predict_interval(Xt, coverage=0.9)
    cdf = lambda v: sum(  # noqa: E731
        wk * scipy.stats.t(p.noise_dof_[0], *_loc_scale(p, Xt)).cdf(v) for wk, p in zip(w, parts)
    )
    np.testing.assert_allclose(cdf(lo), 0.05, atol=1e-9)
    np.testing.assert_allclose(cdf(hi), 0.95, atol=1e-9)


def _loc_scale(est, X):
    mean, V_scale = regression_face.mixture(est, X, "linmc")[1:3]
    return mean[0, :, 0], np.sqrt(V_scale[0, :, 0])


# ---------------------------------------------------------------- the factorised belief
# noise_posterior="factorised" (the default for networks and user models): the variational-
# Bayes adaptive Kalman filter's q(θ) q(σ²), whose covariance the noise never rescales.


def _tanh_init(key, n_features, n_outputs):  # a fixed prior mean, not drawn from the key
    return np.array([0.3, 0.8, -0.5, 0.7])


def _tanh_apply(theta, X):
    """f(θ, x) = θ₀ + θ₁ tanh(θ₂ x₁ + θ₃ x₂): nonlinear in θ, P = 4."""
    import jax.numpy as jnp

    return (theta[0] + theta[1] * jnp.tanh(theta[2] * X[:, 0] + theta[3] * X[:, 1]))[:, None]


def _tanh_f_jac(theta, x):
    """f and its gradient in θ at one row, by hand."""
    t = np.tanh(theta[2] * x[0] + theta[3] * x[1])
    dt = theta[1] * (1 - t * t)
    return theta[0] + theta[1] * t, np.array([1.0, t, dt * x[0], dt * x[1]])


def _linear_f_jac(theta, x):
    h = np.r_[x, 1.0]
    return h @ theta, h


def factorised_filter(X, y, f_jac, mean, cov, delta, a0=1.0, b0=1.0):
    """The factorised noise-adaptive EKF row by row, written from the recursion (Särkkä &
    Nummenmaa 2009, with the rate increment of skbong.engine.filter.noise): the EKF step at
    R = b / a, Σ not rescaled, then a ← δ a + 1/2, b ← δ b + max(e e', 0) / 2 with e and
    e' the residuals at the mean before and after the step."""
    a, b = a0, b0
    for x, t in zip(X, y):
        f, j = f_jac(mean, x)
        r = b / a
        s = j @ cov @ j + r
        gain = cov @ j / s
        mean, cov = mean + gain * (t - f), cov - np.outer(gain, j @ cov)
        e_post = t - f_jac(mean, x)[0]
        a, b = delta * a + 0.5, delta * b + 0.5 * max((t - f) * e_post, 0.0)
    return mean, cov, a, b


def _tanh_data(n=30, seed=13):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = 0.5 + 1.5 * np.tanh(1.2 * X[:, 0] - 0.4 * X[:, 1]) + 0.2 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("delta", [1.0, 0.95])
def test_factorised_equals_the_vb_adaptive_filter_on_a_nonlinear_model(delta):
    X, y = _tanh_data()
    mean, cov, a, b = factorised_filter(
        X, y, _tanh_f_jac, _tanh_init(None, 2, 1), PRIOR_VAR * np.eye(4), delta
    )
    kw = dict(model=(_tanh_init, _tanh_apply), noise_discount=delta, passes=1)
    est = _reg(**kw).fit(X, y)  # "auto" is factorised for a user model
    row = _reg(**kw)  # one row per call, pickled in the middle
    for i in range(len(y)):
        row.partial_fit(X[i : i + 1], y[i : i + 1])
        if i == 11:
            row = pickle.loads(pickle.dumps(row))
    for e in (est, row):
        np.testing.assert_allclose(e.posterior_mean_, mean, rtol=1e-10)
        np.testing.assert_allclose(e.posterior_var_, np.diag(cov), rtol=1e-10)
        np.testing.assert_allclose(e.obs_variance_, [b / a], rtol=1e-10)
        np.testing.assert_allclose(e.noise_dof_, [2 * a], rtol=1e-10)
    # the predictive: Student-t with 2a dof, squared scale J Σ Jᵀ + b / a
    Xt, yt = _tanh_data(n=5, seed=14)
    loc, jac = np.array([_tanh_f_jac(mean, x)[0] for x in Xt]), np.array(
        [_tanh_f_jac(mean, x)[1] for x in Xt]
    )
    scale = np.sqrt(np.einsum("np,pq,nq->n", jac, cov, jac) + b / a)
    ref = scipy.stats.t(2 * a, loc=loc, scale=scale)
    np.testing.assert_allclose(est.predict_logpdf(Xt, yt), ref.logpdf(yt), rtol=1e-10)
    # the coupled belief on the same model is another posterior
    coupled = _reg(noise_posterior="conjugate", **kw).fit(X, y)
    assert not np.allclose(coupled.posterior_var_, np.diag(cov), rtol=1e-3)


def test_factorised_linear_model_is_the_kalman_filter_at_the_learned_noise():
    X, y = _data(seed=15)
    prior = np.diag(np.r_[np.full(X.shape[1], PRIOR_VAR), OUTPUT_BIAS_VARIANCE])
    mean, cov, a, b = factorised_filter(X, y, _linear_f_jac, np.zeros(4), prior, 1.0)
    est = _reg(noise_posterior="factorised", batch_size=1).fit(X, y)
    np.testing.assert_allclose(est.coef_, mean[:-1], rtol=1e-10)
    np.testing.assert_allclose(est.intercept_, mean[-1], rtol=1e-10)
    np.testing.assert_allclose(est.posterior_var_, np.diag(cov), rtol=1e-10)
    np.testing.assert_allclose(est.obs_variance_, [b / a], rtol=1e-10)
    # not the NIG posterior: its covariance is (b / a) V
    _, V, a_nig, b_nig = nig_posterior(X, y)
    np.testing.assert_allclose([a], [a_nig], rtol=RTOL)
    assert not np.allclose(est.posterior_var_, b_nig / a_nig * np.diag(V), rtol=1e-3)


def test_noise_posterior_auto_is_conjugate_for_the_linear_model_only():
    X, y = _data(seed=16)
    net = dict(family="diag", hidden_layer_sizes=(3,))

    def fitted(**kw):
        est = _reg(**kw).fit(X, y)
        return np.r_[est.posterior_mean_, est.posterior_var_, est.obs_variance_]

    np.testing.assert_array_equal(fitted(), fitted(noise_posterior="conjugate"))
    assert not np.allclose(fitted(), fitted(noise_posterior="factorised"), rtol=1e-3)
    np.testing.assert_array_equal(fitted(**net), fitted(noise_posterior="factorised", **net))
    assert not np.allclose(fitted(**net), fitted(noise_posterior="conjugate", **net), rtol=1e-3)
    user = dict(model=(_tanh_init, _tanh_apply))
    np.testing.assert_array_equal(fitted(**user), fitted(noise_posterior="factorised", **user))
    # a fixed noise ignores it; an unknown value is refused
    np.testing.assert_array_equal(
        fitted(obs_variance=0.3, **net), fitted(obs_variance=0.3, noise_posterior="conjugate", **net)
    )
    with pytest.raises(ValueError, match="noise_posterior"):
        _reg(noise_posterior="coupled").fit(X, y)


def test_noise_posterior_set_params_takes_effect_from_the_next_update():
    X, y = _data(seed=17)
    est = _reg(noise_posterior="factorised").fit(X[:20], y[:20])
    est.set_params(noise_posterior="conjugate").partial_fit(X[20:21], y[20:21])
    ref = _reg(noise_posterior="factorised").fit(X[:20], y[:20])
    before = ref.obs_variance_[0]
    ref.partial_fit(X[20:21], y[20:21])
    ratio = est.obs_variance_[0] / before
    # the same noise update; the conjugate step rescales the covariance by ŝ' / ŝ
    np.testing.assert_allclose(est.obs_variance_, ref.obs_variance_, rtol=1e-12)
    np.testing.assert_allclose(est.posterior_var_, ratio * ref.posterior_var_, rtol=1e-10)


def test_factorised_network_warns_on_raw_scale_targets():
    """A network's factorised learned noise keeps its prior in the units of y, so raw
    targets (|y| ≫ 10) fit poorly: the first call says so and names the remedies; the
    coupled belief, the linear model and standardised targets do not warn."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=30)
    net = dict(hidden_layer_sizes=(4,), random_state=0)
    with pytest.warns(UserWarning, match=r"\|y\| = 1e\+03.*noise_posterior='conjugate'"):
        BongRegressor(**net).fit(X, 1000.0 + y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BongRegressor(**net).fit(X, y)
        BongRegressor(**net, noise_posterior="conjugate").fit(X, 1000.0 + y)
        BongRegressor(random_state=0).fit(X, 1000.0 + y)
