"""VariationalRegressor / VariationalClassifier: the scikit-learn face of the batch
solvers, checked against closed forms and scikit-learn's own checks.

The solvers' steps themselves are pinned by tests/test_solvers.py (NumPy transcriptions
of the papers); here: the data scaling and prior reach the estimator correctly (the
exact linear-Gaussian posterior), the MLP-style epoch loop, persistence and atomicity.
"""

import pickle
import warnings

import jax
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from skbong import (
    SkippedRowsWarning,
    VariationalClassifier,
    VariationalRegressor,
    expected_failed_checks,
)
from skbong.engine.solvers import epochs

FAST = dict(max_iter=30, learning_rate=0.1, precision_rate=0.1, random_state=0)


@parametrize_with_checks(
    [VariationalRegressor(**FAST), VariationalClassifier(**FAST)],
    expected_failed_checks=expected_failed_checks,
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


@pytest.fixture(scope="module")
def linear_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.3 + 0.5 * rng.normal(size=40)
    return X, y


def _exact_posterior(X, y, prior_var, obs_var, intercept_var=100.0):
    """Conjugate linear-Gaussian posterior with parameters [w, b] (NumPy, float64)."""
    H = np.c_[X, np.ones(len(X))]
    prec = H.T @ H / obs_var + np.diag([1 / prior_var] * X.shape[1] + [1 / intercept_var])
    cov = np.linalg.inv(prec)
    return cov @ H.T @ y / obs_var, cov


@pytest.mark.parametrize("solver, curvature", [("von", "ef"), ("vogn", "ggn")])
def test_full_batch_natural_step_reaches_exact_precision(linear_data, solver, curvature):
    """Full batch, α = β = 1: the first step sets Λ = λ + XᵀX/σ² exactly (the Hessian and
    the GGN of the linear-Gaussian model are constant), whatever the samples; the mean
    lands within the sampling error of one step around the exact mean. A wrong N/M
    scale, a prior missing the intercept's 100, or a variance read from the wrong
    state fails the precision check."""
    X, y = linear_data
    mean, cov = _exact_posterior(X, y, prior_var=0.5, obs_var=0.25)
    reg = VariationalRegressor(
        solver=solver,
        family="full",
        curvature=curvature,
        learning_rate=1.0,
        precision_rate=1.0,
        batch_size=len(X),
        max_iter=3,
        prior_variance=0.5,
        obs_variance=0.25,
        dtype="float64",
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg.fit(X, y)
    np.testing.assert_allclose(reg.posterior_var_, np.diag(cov), rtol=1e-10)
    est = np.r_[reg.coef_, reg.intercept_]
    assert np.all(np.abs(est - mean) < 5 * np.sqrt(np.diag(cov)))
    _, std = reg.set_params(predictive="linmc").predict(X[:3], return_std=True)
    H = np.c_[X[:3], np.ones(3)]
    np.testing.assert_allclose(std**2, np.einsum("np,pq,nq->n", H, cov, H) + 0.25, rtol=1e-10)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # runs max_iter
def test_vogn_converges_to_exact_posterior_mean(linear_data):
    """VOGN-GGN with decaying rates (the papers' schedule) on mini-batches approaches the
    exact posterior mean (within 0.3 posterior standard deviations per coefficient)."""
    X, y = linear_data
    mean, cov = _exact_posterior(X, y, prior_var=1.0, obs_var=0.25)
    reg = VariationalRegressor(
        family="full",
        curvature="ggn",
        prior_variance=1.0,
        learning_rate=0.5,
        precision_rate=0.5,
        decay=0.51,
        batch_size=10,
        max_iter=300,
        obs_variance=0.25,
        dtype="float64",
        n_iter_no_change=300,
        random_state=0,
    ).fit(X, y)
    est = np.r_[reg.coef_, reg.intercept_]
    assert np.all(np.abs(est - mean) < 0.3 * np.sqrt(np.diag(cov)))


def test_learned_noise_is_the_residual_variance(linear_data):
    X, y = linear_data
    # 16 samples a step: the noise is a Monte Carlo estimate of E_q[(y − f)²], and with
    # one sample its error is about the parameter variance's share checked below
    reg = VariationalRegressor(
        family="full",
        learning_rate=0.1,
        precision_rate=0.1,
        mc_samples=16,
        dtype="float64",
        random_state=0,
    )
    reg.fit(X, y)
    H = np.c_[X, np.ones(len(X))]
    resid = y - H @ np.linalg.lstsq(H, y, rcond=None)[0]
    # E_q[(y − f)²] = residual² + the parameter variance's share: above the OLS residual
    # variance, by about P/N of it
    assert np.mean(resid**2) < reg.obs_variance_[0] < 1.5 * np.mean(resid**2)


@pytest.mark.parametrize("solver", ["vogn", "von", "vprop", "vadam", "slang", "bbb", "ivon"])
def test_every_solver_learns_breast_cancer(solver):
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = VariationalClassifier(solver=solver, max_iter=20, random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.95
    assert clf.n_skipped_steps_ == 0
    assert len(clf.loss_curve_) == clf.n_iter_
    assert np.all(np.isfinite(clf.posterior_var_)) and np.all(clf.posterior_var_ > 0)
    # family="auto": the full covariance for a linear model of P = 31 where the solver
    # keeps one (vogn, von), the solver's own family otherwise
    family = {"slang": "dlr", "vogn": "full", "von": "full"}.get(solver, "diag")
    assert clf.family_ == family == clf._posterior_family()
    assert family == "dlr" or clf.posterior_.cov.ndim == (2 if family == "full" else 1)


def test_partial_fit_runs_one_epoch_and_warm_start_continues(linear_data):
    X, y = linear_data
    reg = VariationalRegressor(batch_size=8, random_state=0)
    reg.partial_fit(X, y)
    assert reg.n_iter_ == 1 and reg.t_ == 5
    reg.partial_fit(X, y)
    assert reg.n_iter_ == 2 and reg.t_ == 10
    warm = VariationalRegressor(batch_size=8, max_iter=2, warm_start=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warm.fit(X, y)
        warm.fit(X, y)
    assert warm.n_iter_ == 4 and len(warm.loss_curve_) == 4
    cold = VariationalRegressor(batch_size=8, max_iter=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cold.fit(X, y).fit(X, y)
    assert cold.n_iter_ == 2


def test_structural_change_refused_and_state_kept(linear_data):
    X, y = linear_data
    reg = VariationalRegressor(max_iter=2, warm_start=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg.fit(X, y)
    before = reg.posterior_mean_.copy(), reg.n_iter_
    reg.set_params(solver="ivon")
    with pytest.raises(ValueError, match="solver"):
        reg.fit(X, y)
    np.testing.assert_array_equal(reg.posterior_mean_, before[0])
    assert reg.n_iter_ == before[1]
    with pytest.raises(ValueError, match="family='full'"):
        VariationalRegressor(solver="ivon", family="full").fit(X, y)


def test_classifier_partial_fit_needs_classes():
    with pytest.raises(ValueError, match="classes must be passed"):
        VariationalClassifier().partial_fit(np.zeros((2, 2)), [0, 1])


def test_convergence_warning_and_stop(linear_data):
    X, y = linear_data
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        VariationalRegressor(max_iter=3, random_state=0).fit(X, y)
    reg = VariationalRegressor(
        max_iter=500, n_iter_no_change=5, tol=1.0, rate_drops=0, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        reg.fit(X, y)
    assert reg.n_iter_ == 10  # two windows of 5, the second not better by tol = 1


def test_early_stopping_keeps_the_best_epoch():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    clf = VariationalClassifier(
        early_stopping=True, n_iter_no_change=3, max_iter=40, random_state=0, **{"solver": "bbb"}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    scores = clf.validation_scores_
    assert len(scores) == clf.n_iter_ and max(scores) > 0.9


def test_skipped_steps_warn_and_leave_a_finite_posterior(linear_data):
    X, y = linear_data
    reg = VariationalRegressor(solver="bbb", learning_rate=1e3, max_iter=2, random_state=0)
    with pytest.warns(SkippedRowsWarning, match="mini-batch steps of this call"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            reg.fit(X * 1e3, y)
    assert reg.n_skipped_steps_ > 0
    assert np.all(np.isfinite(reg.posterior_mean_))


def test_diverging_fit_warns(linear_data):
    X, y = linear_data
    with pytest.warns(ConvergenceWarning, match="diverged"):
        VariationalRegressor(solver="ivon", learning_rate=1e6, random_state=0).fit(X * 1e3, y)


def test_pickle_round_trip_predicts_the_same(linear_data):
    X, y = linear_data
    reg = VariationalRegressor(solver="slang", rank=2, max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg.fit(X, y)
    back = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(back.predict(X[:5]), reg.predict(X[:5]))
    back.partial_fit(X, y)
    assert back.n_iter_ == reg.n_iter_ + 1


def test_grid_over_prior_compiles_one_epoch_program(linear_data):
    X, y = linear_data
    VariationalRegressor(max_iter=1, batch_size=8, random_state=0).partial_fit(X[:32], y[:32])
    before = epochs.run_epoch._cache_size()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        GridSearchCV(
            VariationalRegressor(max_iter=2, batch_size=8, random_state=0),
            {"prior_variance": [0.1, 1.0, 10.0], "learning_rate": [0.01, 0.1]},
            cv=[(np.arange(8, 40), np.arange(8)), (np.arange(0, 32), np.arange(32, 40))],
            refit=False,  # a refit on all 40 rows is a new data shape
        ).fit(X, y)
    assert epochs.run_epoch._cache_size() == before


def test_a_first_fit_compiles_only_its_programs(compiles):
    """The prior is one program, not one per operation of the network's initialiser (13
    eager programs, 0.9 s of a 2.7 s first fit on the 2-core machine), and so is the
    linear model's M-step after each epoch (``prior_variance="auto"``; a network takes
    none)."""
    X = np.random.default_rng(11).normal(size=(40, 11))  # a width used nowhere else
    y = (X[:, 0] > 0).astype(int)
    VariationalClassifier(hidden_layer_sizes=(3,), max_iter=2, random_state=0).fit(X, y)
    assert dict(compiles) == {
        "jit(prior)": 1, "jit(run_epoch)": 1, "jit(posterior_and_kl)": 1,
    }
    compiles.clear()
    VariationalClassifier(max_iter=2, random_state=0).fit(X[:, :9], y)  # nor this one
    assert dict(compiles) == {
        "jit(prior)": 1, "jit(run_epoch)": 1, "jit(posterior_and_kl)": 1,
        "jit(second_moments)": 1,
    }


def test_does_not_change_jax_config():
    assert not jax.config.jax_enable_x64
