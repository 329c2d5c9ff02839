"""The batch estimators' data-dependent defaults: the learned prior variance
(``prior_variance="auto"``), ``family="auto"`` and the input standardisation."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import BayesianRidge

from skbong import VariationalClassifier, VariationalRegressor


@pytest.fixture
def linear_data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.3 + 0.5 * rng.normal(size=200)
    return X, y


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


def test_learned_prior_is_the_evidence_maximum(linear_data):
    """Variational EM over σ₀² with the full Gaussian family (exact for the linear-
    Gaussian model) and the learned noise converges to the type-II maximum likelihood
    that BayesianRidge finds by MacKay's fixed point (an independent implementation):
    σ₀² Var(y) = 1 / lambda_ and the noise 1 / alpha_. The tolerance: the solver's mean
    is within about 0.3 posterior s.d. of the exact one (test_variational), a relative
    error of ≈ 2 · 0.3 s.d. / |w| ≈ 5 % in |w|² here; 10 % is allowed."""
    X, y = linear_data
    reg = _fit(
        VariationalRegressor(
            curvature="ggn", learning_rate=0.5, precision_rate=0.5, decay=0.51,
            batch_size=20, max_iter=300, n_iter_no_change=300, mc_samples=8,
            dtype="float64", random_state=0,
        ),
        X,
        y,
    )
    assert reg.family_ == "full"  # family="auto": a linear model of P = 5
    br = BayesianRidge().fit(X, y)
    np.testing.assert_allclose(reg.prior_variance_ * np.var(y), 1.0 / br.lambda_, rtol=0.1)
    np.testing.assert_allclose(reg.obs_variance_[0], 1.0 / br.alpha_, rtol=0.1)
    np.testing.assert_allclose(reg.coef_, br.coef_, atol=0.05)


def test_learned_prior_is_the_m_step_of_the_final_posterior(linear_data):
    """prior_variance_ = mean over the weights (not the intercept, whose broad prior
    does not scale with σ₀²) of (μⱼ² + Σⱼⱼ) / Var(y): the ELBO's maximiser at the
    posterior the fit ends with."""
    X, y = linear_data
    reg = _fit(VariationalRegressor(max_iter=30, dtype="float64", random_state=0), X, y)
    w = slice(0, X.shape[1])
    second = reg.posterior_mean_[w] ** 2 + reg.posterior_var_[w]
    np.testing.assert_allclose(reg.prior_variance_, np.mean(second) / np.var(y), rtol=1e-10)


def test_classifier_learns_its_prior_and_a_fixed_one_stays():
    """The linear classifier's σ₀² follows the data: separable classes ask for a wide
    prior, pure noise for a narrow one; a number is used as given."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    separable = (X[:, 0] > 0).astype(int)
    noise = rng.integers(0, 2, size=300)
    wide = _fit(VariationalClassifier(random_state=0), X, separable)
    narrow = _fit(VariationalClassifier(random_state=0), X, noise)
    assert narrow.prior_variance_ < 0.1 < 1.0 < wide.prior_variance_
    fixed = _fit(VariationalClassifier(prior_variance=2.0, max_iter=5, random_state=0), X, noise)
    assert fixed.prior_variance_ == 2.0


@pytest.mark.parametrize("cls", [VariationalRegressor, VariationalClassifier])
def test_networks_take_the_wide_prior_under_auto_and_keep_it(cls, linear_data):
    """A built-in network's σ₀² under "auto" is NETWORK_PRIOR_VARIANCE (10),
    unchanged by the epochs (no M-step: it would shrink the prior with the mean-field variances); the
    hyperparameters the solver ran with carry it (λ = 1 / (10 vⱼ u)); a number is used
    as given."""
    from skbong.engine.models import NETWORK_PRIOR_VARIANCE

    X, y = linear_data
    target = (y > np.median(y)).astype(int) if cls is VariationalClassifier else y
    net = _fit(cls(hidden_layer_sizes=(8,), max_iter=20, random_state=0), X, target)
    assert NETWORK_PRIOR_VARIANCE == 10.0
    assert net.prior_variance_ == 10.0
    assert net.family_ == "diag"
    fixed = _fit(cls(hidden_layer_sizes=(8,), prior_variance=10.0, max_iter=20,
                     random_state=0), X, target)
    np.testing.assert_array_equal(net.posterior_mean_, fixed.posterior_mean_)
    unit = _fit(cls(hidden_layer_sizes=(8,), prior_variance=1.0, max_iter=20,
                    random_state=0), X, target)
    assert unit.prior_variance_ == 1.0
    assert not np.allclose(net.posterior_var_, unit.posterior_var_)


@pytest.mark.parametrize(
    "params, family",
    [
        ({}, "full"),
        ({"solver": "ivon"}, "diag"),
        ({"solver": "slang"}, "dlr"),
        ({"hidden_layer_sizes": (4,)}, "diag"),
        ({"family": "diag"}, "diag"),
    ],
)
def test_auto_family(params, family):
    """family="auto": full for a linear model up to 128 parameters where the solver keeps
    it, the solver's own family otherwise; 130 features (P = 131) take diag."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 3)), rng.integers(0, 2, size=50)
    clf = _fit(VariationalClassifier(max_iter=1, random_state=0, **params), X, y)
    assert clf.family_ == family
    wide = _fit(VariationalClassifier(max_iter=1, random_state=0), rng.normal(size=(50, 130)), y)
    assert wide.family_ == "diag"


@pytest.mark.parametrize("hidden", [(), (6,)])
def test_raw_inputs_are_standardised_for_the_solver(hidden):
    """Inputs of magnitude 10²-10⁴ (root mean square above 3) are learned as the model a
    StandardScaler in front would learn: the same predictions, and for the linear model
    coef_ and intercept_ on the user's scale (predict = X coef_ + intercept_)."""
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(120, 3))
    y = Z @ np.array([1.0, -1.0, 0.5]) + 0.2 * rng.normal(size=120)
    scale, shift = np.array([100.0, 1e3, 1e4]), np.array([500.0, -2e3, 3e4])
    X = Z * scale + shift
    mean, std = X.mean(0), X.std(0)
    kw = dict(hidden_layer_sizes=hidden, max_iter=5, dtype="float64", random_state=0,
              predictive="plugin")
    raw = _fit(VariationalRegressor(**kw), X, y)
    scaled = _fit(VariationalRegressor(**kw), (X - mean) / std, y)
    np.testing.assert_allclose(raw.input_mean_, mean, rtol=1e-12)
    np.testing.assert_allclose(raw.input_scale_, std, rtol=1e-12)
    np.testing.assert_array_equal(scaled.input_scale_, np.ones(3))
    np.testing.assert_allclose(raw.predict(X), scaled.predict((X - mean) / std), rtol=1e-8)
    if not hidden:
        np.testing.assert_allclose(raw.predict(X), X @ raw.coef_ + raw.intercept_, rtol=1e-10)


def test_without_intercept_the_inputs_are_only_scaled():
    """fit_intercept=False: centring would add an intercept to the model; the columns
    are only divided by their standard deviation."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2)) * 50.0 + 10.0
    y = X @ np.array([0.02, -0.01])
    reg = _fit(VariationalRegressor(fit_intercept=False, max_iter=3, random_state=0), X, y)
    np.testing.assert_array_equal(reg.input_mean_, np.zeros(2))
    assert np.all(reg.input_scale_ > 10)
    np.testing.assert_allclose(reg.intercept_, 0.0, atol=0)



def test_the_batch_estimators_predict_with_the_linearised_predictive():
    # the mean-field posterior's parameter uncertainty enters the default probabilities
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    default = VariationalClassifier(max_iter=30, random_state=0).fit(X, y)
    assert default.predictive_ == "linmc"
    plugin = VariationalClassifier(max_iter=30, predictive="plugin", random_state=0).fit(X, y)
    assert np.max(np.abs(plugin.predict_proba(X) - default.predict_proba(X))) > 1e-3
    assert VariationalRegressor().predictive == "linmc"
