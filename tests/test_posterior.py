"""The public posterior accessor ``posterior_`` (the belief as the engine's state).

* full family, linear-Gaussian with a fixed noise, float64: ``posterior_`` is the
  closed-form posterior N(μ, Σ), Σ = (Λ₀ + XᵀX / R)⁻¹, μ = Σ Xᵀy / R, with the prior
  precision Λ₀ = diag(1/σ₀² for the weights, 1/100 for the intercept) written here in
  numpy; rtol 1e-10 (condition number below 1e3, float64).
* dlr: ``posterior_var_`` is diag((diag(Υ) + W Wᵀ)⁻¹) of the state ``posterior_`` gives,
  inverted densely in numpy (the sign of the low-rank term matters); rtol 1e-10.
* with ``prior_variance="auto"`` the arrays carry the bank's axis; the arrays are
  read-only copies (writing raises, and the estimator is unchanged).
"""

import numpy as np
import pytest

from skbong import BongClassifier, BongRegressor
from skbong.engine import DLRState, MeanCov


def _data(n=60, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X @ rng.normal(size=d) + 0.5 + 0.3 * rng.normal(size=n)


def test_full_posterior_is_the_closed_form():
    X, y = _data()
    est = BongRegressor(family="full", obs_variance=0.09, prior_variance=2.0, dtype="float64")
    post = est.fit(X, y).posterior_
    Z = np.hstack([X, np.ones((len(X), 1))])
    prec0 = np.diag([1 / 2.0] * 4 + [1 / 100.0])
    cov = np.linalg.inv(prec0 + Z.T @ Z / 0.09)
    assert isinstance(post, MeanCov) and post.cov.shape == (5, 5)
    np.testing.assert_allclose(post.mean, cov @ Z.T @ y / 0.09, rtol=1e-10)
    np.testing.assert_allclose(post.cov, cov, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("est", [BongRegressor(family="dlr", obs_variance=0.09, rank=3, prior_variance=1.0, dtype="float64"),
                                 BongClassifier(family="dlr", rank=3, prior_variance=1.0, dtype="float64")])
def test_dlr_marginal_variances_invert_the_precision(est):
    X, y = _data()
    if isinstance(est, BongClassifier):
        y = (y > np.median(y)).astype(int)
    post = est.fit(X, y).posterior_
    assert isinstance(post, DLRState) and post.prec_lr.shape == (5, 3)
    dense = np.diag(post.prec_diag) + post.prec_lr @ post.prec_lr.T
    np.testing.assert_allclose(est.posterior_var_, np.diag(np.linalg.inv(dense)), rtol=1e-10)
    np.testing.assert_array_equal(post.mean, est.posterior_mean_)


def test_bank_axis_and_read_only_copies():
    X, y = _data()
    est = BongRegressor(family="diag", prior_variance="auto").fit(X, y)
    post = est.posterior_
    assert post.mean.shape == (len(est.prior_grid_), 5) == post.cov.shape
    with pytest.raises(ValueError, match="read-only"):
        post.mean[0, 0] = 1.0
    again = est.posterior_
    assert again.mean is not post.mean
    np.testing.assert_array_equal(again.mean, post.mean)
