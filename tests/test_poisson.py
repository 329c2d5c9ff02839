"""BongPoissonRegressor: the Poisson likelihood's estimator.

* ``test_full_equals_newton_recursion``: the linear model, ``family="full"``,
  ``hessian="lin_hess"``, float64: each row is one Newton step of the log posterior from
  the previous mean, Λ ← Λ + e^{xᵀμ} x xᵀ and μ ← μ + Λ⁻¹ x (y − e^{xᵀμ}), from the prior
  N((0, …, 0, log((Σy + ½)/n)), σ₀² I). An independent numpy recursion; rtol 1e-10
  (float64 accumulation over 40 rows of condition number below 1e3). dlr of full rank is
  the same posterior.
* ``test_predictive_closed_forms``: ``linmc`` mean exp(m + v/2) and variance
  mean + (eᵛ − 1) mean² with m = xᵀμ, v = xᵀΣx from that recursion; ``plugin`` exp(m);
  the ``linmc`` log pmf against adaptive quadrature (scipy ``quad``, independent of the
  Gauss–Hermite rule in the estimator) to 1e-8; the mean of ``sample_f`` within 5
  standard errors of exp(m + v/2), which is exact for the linear model.
* ``test_default_prior_bank_mixes_each_filters_moments``: the default prior bank of the
  linear model: each filter's weight from its summed plug-in one-step-ahead log pmf
  under that recursion, and the predictive mean and variance of the weighted mixture
  (law of total variance over the filters), rtol 1e-8.
* ``test_close_to_poisson_regressor``: a real count data set (linnerud: chin-ups) and a
  synthetic one at three count scales, one pass at the defaults against
  ``sklearn.linear_model.PoissonRegressor`` (unpenalised): both estimate the same
  parameters, so they must agree to within the posterior's own uncertainty: every
  coefficient and the intercept within two posterior standard deviations of the MLE
  (one pass and a prior against the batch optimum; measured up to 1.3 sd on linnerud's
  20 rows, 0.3 sd at 2,000 rows), and held-out D² within 0.01 (synthetic sets).
* ``test_one_row_stream_and_raw_counts``: one row at a time, mean counts near 100: no
  refused row, D² within 0.01 of PoissonRegressor.
* ``test_overshoot_guard_equals_the_damped_recursion``: a first count of 0 among counts
  near 110 makes the Newton step overshoot; the default ``backtrack=20`` halves the mean
  step (keeping the precision) while it lowers the row's log-likelihood, exactly as the
  numpy recursion with that rule
  (rtol 1e-9, and the rule must act); with ``backtrack=0`` the same stream is refused
  loudly with nothing applied.
* errors: negative, non-finite and two-column counts, each named, with the fitted state
  untouched.
"""

import pickle

import numpy as np
import pytest
import scipy.integrate
import scipy.stats
from sklearn.datasets import load_linnerud
from sklearn.linear_model import PoissonRegressor
from sklearn.preprocessing import StandardScaler

from skbong import BongPoissonRegressor, NonFiniteUpdateError


def _counts(n, base, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = rng.poisson(np.exp(base + X @ np.array([0.3, -0.2, 0.1, 0.25]))).astype(float)
    return X, y


def _newton(X, y, prior_var, intercept=True, backtrack=0, centre=None):
    """The oracle: the Newton recursion of the module docstring, float64, from the
    intercept's prior centre ``centre`` (default log((Σy + ½)/n)). With ``backtrack``,
    the mean step is halved (the precision kept) while it lowers the row's
    log-likelihood below its value at the current mean by more than √ε (1 + |ℓ₀|).
    Returns the mean, the covariance and the number of halvings taken."""
    Z = np.hstack([X, np.ones((len(X), 1))]) if intercept else X
    mean = np.zeros(Z.shape[1])
    if intercept:
        mean[-1] = np.log((y.sum() + 0.5) / len(y)) if centre is None else centre
    prec = np.eye(Z.shape[1]) / prior_var
    halvings = 0
    for z, t in zip(Z, y):
        rate = np.exp(z @ mean)
        start = t * (z @ mean) - rate
        prec = prec + rate * np.outer(z, z)
        step = np.linalg.solve(prec, z * (t - rate))
        for k in range(backtrack + 1):  # the mean's line search, t = 1, 1/2, ...
            f = z @ (mean + 0.5**k * step)
            with np.errstate(over="ignore"):
                if t * f - np.exp(f) >= start - np.sqrt(np.finfo(float).eps) * (1 + abs(start)):
                    break
        mean, halvings = mean + 0.5**k * step, halvings + k
    return mean, np.linalg.inv(prec), halvings


@pytest.fixture(scope="module")
def stream():
    X, y = _counts(40, 1.0, 0)
    mean, cov, halvings = _newton(X, y, 0.5, backtrack=20)
    assert halvings == 0  # no overshoot on this stream: the default guard changes nothing
    return X, y, mean, cov


@pytest.mark.parametrize("family", ["full", "dlr"])
def test_full_equals_newton_recursion(stream, family):
    X, y, mean, cov = stream
    # one pass (refine=0): the reference is the one-pass Newton recursion
    est = BongPoissonRegressor(family=family, rank=5, prior_variance=0.5, dtype="float64",
                               refine=0)
    est.fit(X, y)
    np.testing.assert_allclose(est.posterior_mean_, mean, rtol=1e-10)
    np.testing.assert_allclose(est.posterior_var_, np.diag(cov), rtol=1e-10)
    np.testing.assert_allclose(est.coef_, mean[:-1], rtol=1e-10)
    assert est.intercept_ == pytest.approx(mean[-1], rel=1e-10)
    assert est.prior_intercept_ == pytest.approx(np.log((y.sum() + 0.5) / len(y)), rel=1e-15)
    assert est.n_observations_ == len(y) and est.n_skipped_ == 0


def test_no_intercept_keeps_a_zero_prior_mean(stream):
    X, y, _, _ = stream
    est = BongPoissonRegressor(family="full", fit_intercept=False, prior_variance=0.5,
                               dtype="float64", refine=0).fit(X, y)
    mean, _, _ = _newton(X, y, 0.5, intercept=False, backtrack=20)
    np.testing.assert_allclose(est.posterior_mean_, mean, rtol=1e-10)


def test_predictive_closed_forms(stream):
    X, y, mean, cov = stream
    est = BongPoissonRegressor(family="full", prior_variance=0.5, dtype="float64",
                               refine=0).fit(X, y)
    Xt = np.random.default_rng(5).normal(size=(6, 4))
    Z = np.hstack([Xt, np.ones((6, 1))])
    m, v = Z @ mean, np.einsum("np,pq,nq->n", Z, cov, Z)
    mu, std = est.predict(Xt, return_std=True)
    np.testing.assert_allclose(mu, np.exp(m + v / 2), rtol=1e-10)
    np.testing.assert_allclose(std**2, mu + np.expm1(v) * mu**2, rtol=1e-10)
    assert np.all(mu > np.exp(m))  # the parameter uncertainty raises the mean rate
    plugin = est.set_params(predictive="plugin")
    np.testing.assert_allclose(plugin.predict(Xt), np.exp(m), rtol=1e-10)
    np.testing.assert_allclose(plugin.predict(Xt, return_std=True)[1] ** 2, np.exp(m), rtol=1e-10)
    est.set_params(predictive="linmc")

    counts = np.array([0.0, 1.0, 2.0, 3.0, 5.0, 8.0])
    ref = []
    for mi, vi, k in zip(m, v, counts):
        sd = np.sqrt(vi)
        integrand = lambda f, mi=mi, sd=sd, k=k: (  # noqa: E731
            scipy.stats.poisson.pmf(k, np.exp(f)) * scipy.stats.norm.pdf(f, mi, sd)
        )
        val, _ = scipy.integrate.quad(integrand, mi - 12 * sd, mi + 12 * sd, epsabs=0, epsrel=1e-12)
        ref.append(np.log(val))
    np.testing.assert_allclose(est.predict_logpmf(Xt, counts), ref, rtol=1e-8)
    np.testing.assert_allclose(
        plugin.set_params(predictive="plugin").predict_logpmf(Xt, counts),
        scipy.stats.poisson.logpmf(counts, np.exp(m)),
        rtol=1e-10,
    )
    est.set_params(predictive="linmc")

    n = 4000
    rates = est.sample_f(Xt, n_samples=n, random_state=0)
    assert rates.shape == (6, n)
    se = np.sqrt((np.exp(v) - 1) * np.exp(2 * m + v) / n)  # sd of the log-normal mean
    assert np.all(np.abs(rates.mean(axis=1) - np.exp(m + v / 2)) < 5 * se)
    draws = est.sample_y(Xt, n_samples=n, random_state=0)
    assert np.array_equal(draws, np.round(draws)) and draws.min() >= 0
    assert np.all(np.abs(draws.mean(axis=1) - mu) < 5 * std / np.sqrt(n))


def test_default_prior_bank_mixes_each_filters_moments(stream):
    """The default ``prior_variance="auto"`` (the bank, for the linear model): each filter
    is the Newton recursion at its σ₀², its weight the exp of its summed plug-in
    one-step-ahead log pmf, and ``predict(return_std=True)`` the mixture's moments:
    mean Σ wₖ μₖ and variance Σ wₖ (vₖ + μₖ²) − mean², with μₖ and vₖ each filter's
    log-normal–Poisson moments (filters below weight 1e-9 left out, as documented)."""
    X, y, _, _ = stream
    est = BongPoissonRegressor(family="full", dtype="float64", refine=0).fit(X, y)
    grid = 10.0 ** np.arange(-3, 4)
    Z = np.hstack([X, np.ones((len(X), 1))])
    log_ev, moments = [], []
    Xt = np.random.default_rng(5).normal(size=(6, 4))
    Zt = np.hstack([Xt, np.ones((6, 1))])
    for prior_var in grid:
        ev = 0.0
        for n in range(len(y)):  # the plug-in log pmf of row n under the first n rows' mean
            mean_n = _newton(X[:n], y[:n], prior_var, backtrack=20, centre=est.prior_intercept_)[0]
            ev += scipy.stats.poisson.logpmf(y[n], np.exp(Z[n] @ mean_n))
        mean, cov, _ = _newton(X, y, prior_var, backtrack=20)
        m, v = Zt @ mean, np.einsum("np,pq,nq->n", Zt, cov, Zt)
        mu = np.exp(m + v / 2)
        log_ev.append(ev)
        moments.append((mu, mu + np.expm1(v) * mu**2))
    weights = np.exp(np.array(log_ev) - max(log_ev))
    weights /= weights.sum()
    np.testing.assert_allclose(est.prior_weights_, weights, rtol=1e-8, atol=1e-12)
    assert np.sum(weights > 0.01) >= 2  # a real mixture, not one filter
    keep = weights >= 1e-9
    w = weights[keep] / weights[keep].sum()
    mus = np.array([mu for mu, _ in moments])[keep]
    variances = np.array([var for _, var in moments])[keep]
    mix_mean = w @ mus
    mix_var = w @ (variances + mus**2) - mix_mean**2
    mu, std = est.predict(Xt, return_std=True)
    np.testing.assert_allclose(mu, mix_mean, rtol=1e-8)
    np.testing.assert_allclose(std**2, mix_var, rtol=1e-8)


def _linnerud():
    data = load_linnerud()
    return StandardScaler().fit_transform(data.target), data.data[:, 0]  # chin-ups


@pytest.mark.parametrize("case", ["linnerud", 0.5, 2.0, 4.6])
def test_close_to_poisson_regressor(case):
    if case == "linnerud":  # 20 rows: no held-out set (in-sample, the MLE's D² is the best)
        X, y = _linnerud()
        Xtr, ytr, Xte, yte = X, y, None, None
    else:
        X, y = _counts(3000, case, 1)
        Xtr, ytr, Xte, yte = X[:2000], y[:2000], X[2000:], y[2000:]
    ref = PoissonRegressor(alpha=0.0, tol=1e-10, max_iter=1000).fit(Xtr, ytr)
    # σ₀² = 1: the default prior bank's empirical-Bayes prior shrinks linnerud's 20-row
    # fit toward zero, as a penalised fit would, and the comparison is with the MLE
    est = BongPoissonRegressor(prior_variance=1.0, dtype="float64").fit(Xtr, ytr)
    sd = np.sqrt(est.posterior_var_)
    diff = np.abs(np.append(est.coef_, est.intercept_) - np.append(ref.coef_, ref.intercept_))
    assert np.all(diff < 2 * sd), (diff, sd)
    if Xte is not None:
        assert est.score(Xte, yte) == pytest.approx(ref.score(Xte, yte), abs=0.01)


def test_one_row_stream_and_raw_counts():
    X, y = _counts(400, 4.6, 2)  # mean count ≈ 110; the first count sets the centre
    est = BongPoissonRegressor(family="full")
    for i in range(100):
        est.partial_fit(X[i : i + 1], y[i : i + 1])
    est.partial_fit(X[100:300], y[100:300])
    assert est.prior_intercept_ == pytest.approx(np.log(y[0] + 0.5))
    assert est.n_skipped_ == 0 and est.n_observations_ == 300
    ref = PoissonRegressor(alpha=0.0).fit(X[:300], y[:300])
    assert est.score(X[300:], y[300:]) == pytest.approx(ref.score(X[300:], y[300:]), abs=0.01)


def _far_first_count():
    X, y = _counts(400, 4.6, 2)  # counts near 110, after a first count of 0
    return np.vstack([X[:1], X]), np.concatenate([[0.0], y])


def test_overshoot_guard_equals_the_damped_recursion():
    X, y = _far_first_count()
    X, y = X[:30], y[:30]
    est = BongPoissonRegressor(family="full", prior_variance=0.5, dtype="float64")
    for i in range(len(y)):  # the first call's count (0) centres the prior
        est.partial_fit(X[i : i + 1], y[i : i + 1])
    mean, cov, halvings = _newton(X, y, 0.5, backtrack=20, centre=np.log(0.5))
    assert halvings > 0  # the guard acted
    np.testing.assert_allclose(est.posterior_mean_, mean, rtol=1e-9)
    np.testing.assert_allclose(est.posterior_var_, np.diag(cov), rtol=1e-9)
    assert est.n_skipped_ == 0


def test_a_first_count_far_from_the_rest():
    """With ``backtrack=0`` (the published algorithm) a one-row stream from a first
    count of 0 among counts near 110 overshoots and is refused loudly, nothing applied;
    with the default guard it learns with no refused row and recovers on this stream:
    held-out D² within 0.1 of PoissonRegressor's after 350 rows (how far it recovers
    depends on the stream: benchmarks/bench_poisson.py, docs "Limits")."""
    X, y = _far_first_count()
    est = BongPoissonRegressor(family="full", prior_variance=1.0, backtrack=0).partial_fit(X[:1], y[:1])
    with pytest.raises(NonFiniteUpdateError, match="nothing from this call was applied"):
        for i in range(1, 20):
            before = pickle.dumps(est)
            est.partial_fit(X[i : i + 1], y[i : i + 1])
    assert pickle.dumps(est) == before  # the refused call changed nothing
    assert est.n_observations_ == i and est.n_skipped_ == 0

    est = BongPoissonRegressor(family="full")
    for i in range(100):
        est.partial_fit(X[i : i + 1], y[i : i + 1])
    est.partial_fit(X[100:350], y[100:350])
    assert est.n_skipped_ == 0
    ref = PoissonRegressor(alpha=0.0).fit(X[1:350], y[1:350]).score(X[350:], y[350:])
    assert est.score(X[350:], y[350:]) > ref - 0.1


def test_network_learns_counts():
    X, y = _counts(1500, 2.0, 3)
    est = BongPoissonRegressor(hidden_layer_sizes=(16,), random_state=0).fit(X[:1000], y[:1000])
    ref = PoissonRegressor(alpha=0.0).fit(X[:1000], y[:1000]).score(X[1000:], y[1000:])
    assert est.n_skipped_ == 0
    assert est.score(X[1000:], y[1000:]) > ref - 0.03  # the true log-rate is linear


@pytest.mark.parametrize(
    ("y", "match"),
    [
        (np.array([1.0, -1.0, 2.0, 0.0]), "non-negative counts"),
        (np.array([1.0, np.nan, 2.0, 0.0]), "NaN"),
        (np.ones((4, 2)), "1d array"),
    ],
)
def test_bad_counts_are_refused_and_change_nothing(y, match):
    X, counts = _counts(20, 0.5, 4)
    est = BongPoissonRegressor(family="full").fit(X, counts)
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match=match):
        est.partial_fit(X[:4], y)
    assert pickle.dumps(est) == before
    with pytest.raises(ValueError, match=match):
        BongPoissonRegressor().fit(X[:4], y)


def test_pickle_round_trip_predicts_the_same(stream):
    X, y, _, _ = stream
    est = BongPoissonRegressor(random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    again.partial_fit(X[:3], y[:3])
    est.partial_fit(X[:3], y[:3])
    np.testing.assert_array_equal(again.posterior_mean_, est.posterior_mean_)
