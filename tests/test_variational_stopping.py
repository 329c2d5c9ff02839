"""VariationalRegressor / VariationalClassifier: the stopping rule, the rate drops, the
ConvergenceWarning, the epoch early stopping keeps, and the starting precision.

Each expected value is computed here independently of the code under test: the rule's
epoch count by hand, the schedule by replaying it as two plain fits, the best epoch by
refitting to exactly that epoch, the starting precision from its documented formula.
"""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

from skbong import VariationalClassifier, VariationalRegressor
from skbong._batch.base import _stalled


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    y = np.sin(2 * X[:, 0]) + X[:, 1] + 0.3 * rng.normal(size=60)
    return X, y


def _fit_quiet(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


# ------------------------------------------------------------------ the rule itself
def _stalled_oracle(curve, window, tol):
    """The documented rule, spelled out: the running means of ``window`` epochs; stalled
    when the last ``window`` of them are none below the best before them by ``tol``."""
    if len(curve) < 2 * window:
        return False
    means = [np.mean(curve[i : i + window]) for i in range(len(curve) - window + 1)]
    best = np.inf
    for i, m in enumerate(means):
        if m < best - tol:
            best, last_new = m, i
    return len(means) - 1 - last_new >= window


@pytest.mark.parametrize("seed", range(20))
def test_stalled_matches_its_definition(seed):
    rng = np.random.default_rng(seed)
    curve = list(np.cumsum(rng.normal(-0.01, 0.05, size=rng.integers(1, 40))))
    for window in (1, 3, 5):
        for tol in (0.0, 0.02):
            assert _stalled(curve, window, tol) == _stalled_oracle(curve, window, tol)


def test_a_steady_fall_under_noise_is_not_a_plateau():
    """A loss that falls by 0.01 an epoch under ±0.03 alternating noise improves by 0.1
    every window of 10: no plateau however long it runs (the rule of single window
    comparisons would be fooled only by larger noise, this one by none that the running
    mean damps below the fall)."""
    curve = list(1.0 - 0.01 * np.arange(200) + 0.03 * (-1.0) ** np.arange(200))
    assert not any(_stalled(curve[:n], 10, 1e-4) for n in range(1, 201))
    assert _stalled(curve + [curve[-1]] * 30, 10, 1e-4)


# ------------------------------------------------- convergence, max_iter and warnings
def test_warns_when_max_iter_runs_out(data):
    X, y = data
    with pytest.warns(ConvergenceWarning, match=r"max_iter=3 .*raise max_iter"):
        reg = VariationalRegressor(max_iter=3, random_state=0).fit(X, y)
    assert reg.n_iter_ == 3 and len(reg.loss_curve_) == 3


@pytest.mark.parametrize("drops", [0, 1, 2])
def test_rule_fires_after_each_rate_and_does_not_warn(data, drops):
    """tol = 10 nats: every phase plateaus as soon as the rule can look, after 2 × 3
    epochs; the fit stops after drops + 1 phases, converged (warnings are errors)."""
    X, y = data
    reg = VariationalRegressor(
        max_iter=500, n_iter_no_change=3, tol=10.0, rate_drops=drops, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        reg.fit(X, y)
    assert reg.n_iter_ == 6 * (drops + 1)
    assert reg.n_rate_drops_ == drops


def test_warns_when_max_iter_ends_a_phase_before_the_last(data):
    """max_iter = 6 with one drop left: the first plateau comes at epoch 6, so the fit
    ends at the lower rate's start, not converged."""
    X, y = data
    reg = VariationalRegressor(max_iter=6, n_iter_no_change=3, tol=10.0, rate_drops=1)
    with pytest.warns(ConvergenceWarning, match="max_iter=6"):
        reg.set_params(random_state=0).fit(X, y)
    assert reg.n_iter_ == 6 and reg.n_rate_drops_ == 1


def test_rate_drop_is_a_refit_at_a_tenth_of_both_rates(data):
    """One plateau and one drop = a converged fit at (α, β), continued with
    ``warm_start`` at (α/10, β/10): the same keys, steps and noise, so the same
    posterior to the last bit. A drop that forgets β, or α, or does not happen, fails."""
    X, y = data
    common = dict(n_iter_no_change=3, tol=10.0, dtype="float64", random_state=0)
    one = VariationalRegressor(
        learning_rate=0.5, precision_rate=0.5, rate_drops=1, max_iter=100, **common
    ).fit(X, y)
    two = VariationalRegressor(
        learning_rate=0.5, precision_rate=0.5, rate_drops=0, warm_start=True, **common
    ).fit(X, y)
    two.set_params(learning_rate=0.05, precision_rate=0.05).fit(X, y)
    assert one.n_iter_ == two.n_iter_ == 12
    np.testing.assert_array_equal(one.posterior_mean_, two.posterior_mean_)
    np.testing.assert_array_equal(one.posterior_var_, two.posterior_var_)
    np.testing.assert_array_equal(one.obs_variance_, two.obs_variance_)


# ----------------------------------------------------- which epoch early stopping keeps
def test_early_stopping_keeps_the_best_validation_epoch(data):
    """The kept posterior is the one after the epoch with the highest validation score
    (the first such epoch; tol = 0): its R² on the held-out rows is that score, and it is
    the posterior of the same fit stopped by ``max_iter`` at that epoch (the trajectory to
    it is the same). A fit that kept its first or its last epoch fails; the test checks
    that the best epoch is neither and that their scores differ."""
    X, y = data
    est = VariationalRegressor(
        hidden_layer_sizes=(8,),
        learning_rate=0.3,
        precision_rate=0.3,
        early_stopping=True,
        validation_fraction=0.3,
        n_iter_no_change=4,
        tol=0.0,
        max_iter=100,
        dtype="float64",
        random_state=0,
    )
    fitted = _fit_quiet(clone(est), X, y)
    scores = np.asarray(fitted.validation_scores_)
    best = int(np.argmax(scores)) + 1  # epochs count from 1
    assert len(scores) == fitted.n_iter_
    assert 1 < best < fitted.n_iter_, "the set-up must put the best epoch in the middle"
    # the held-out rows, as the estimator draws them (its seed; scikit-learn's split)
    _, X_val, _, y_val = train_test_split(X, y, test_size=0.3, random_state=fitted._seed)
    assert len(set(scores[[0, best - 1, -1]])) == 3  # first, best and last tell apart
    np.testing.assert_allclose(fitted.score(X_val, y_val), scores[best - 1], rtol=1e-12)
    oracle = _fit_quiet(clone(est).set_params(max_iter=best), X, y)
    assert oracle.n_iter_ == best and np.argmax(oracle.validation_scores_) == best - 1
    np.testing.assert_array_equal(fitted.posterior_mean_, oracle.posterior_mean_)
    np.testing.assert_array_equal(fitted.posterior_var_, oracle.posterior_var_)
    np.testing.assert_array_equal(fitted.obs_variance_, oracle.obs_variance_)
    np.testing.assert_array_equal(oracle.validation_scores_, scores[:best])


# ------------------------------------------------------------- the starting precision
def _expected_start(n, d, hidden, prior_var, unit, noise):
    """λ + N / σ² from the documented prior (fan-in scaled weights of a network, the
    linear model's σ₀², the intercept's 100; in units of ``unit``), in the parameter
    order W₁, b₁, W₂, b₂."""
    if hidden:
        var = np.r_[
            np.full(d * hidden, prior_var / d),
            np.full(hidden, prior_var),
            np.full(hidden, prior_var / hidden),
            100.0,
        ]
    else:
        var = np.r_[np.full(d, prior_var), 100.0]
    return 1.0 / (var * unit) + n / noise


@pytest.mark.parametrize("hidden", [0, 4])
def test_regressor_starting_precision_divides_by_the_noise(data, hidden):
    """With β = 10⁻³⁰⁰ one epoch leaves the precision where it started (1 − β = 1 and
    β (Ĝ + λ) vanishes in float64), so the fitted variance is 1 / (λ + N / σ²) with
    σ² = Var(y) = 25 (the noise the fit starts from) and the prior in units of Var(y).
    A start that multiplied by the noise variance is off by 25² = 625."""
    X, y = data
    y = 5.0 * (y - y.mean()) / y.std()  # Var(y) = 25 exactly
    reg = VariationalRegressor(
        hidden_layer_sizes=(hidden,) if hidden else (),
        prior_variance=0.5,
        learning_rate=1e-300,
        precision_rate=1e-300,
        dtype="float64",
        random_state=0,
    ).partial_fit(X, y)
    expected = _expected_start(len(X), 3, hidden, 0.5, unit=25.0, noise=25.0)
    np.testing.assert_allclose(1.0 / reg.posterior_var_, expected, rtol=1e-12)


def test_regressor_starting_precision_with_a_fixed_noise(data):
    """A fixed ``obs_variance`` σ² is the noise of the start, and the prior is absolute."""
    X, y = data
    reg = VariationalRegressor(
        obs_variance=0.04,
        learning_rate=1e-300,
        precision_rate=1e-300,
        dtype="float64",
        random_state=0,
    ).partial_fit(X, 7.0 * y)
    expected = _expected_start(len(X), 3, 0, 1.0, unit=1.0, noise=0.04)
    np.testing.assert_allclose(1.0 / reg.posterior_var_, expected, rtol=1e-12)


def test_classifier_starting_precision(data):
    """Classification: λ + N, the prior absolute (the likelihood has no noise scale);
    the intercept's prior is σ₀² like the weights'."""
    X, y = data
    clf = VariationalClassifier(
        prior_variance=0.5,
        learning_rate=1e-300,
        precision_rate=1e-300,
        dtype="float64",
        random_state=0,
    ).partial_fit(X, y > 0, classes=[False, True])
    np.testing.assert_allclose(1.0 / clf.posterior_var_, 1.0 / 0.5 + len(X), rtol=1e-12)


def test_prior_stays_in_units_of_the_targets_variance(data):
    """With the learned noise the prior is N(0, Var(y) V₀) for the whole fit, not in
    units of the noise learned since. Full batch, α = β = 1 and the Gauss–Newton
    curvature of the linear-Gaussian model: an epoch sets Λ = λ + HᵀH / σ² exactly,
    with σ² the noise learned by the epoch before. A prior that followed the learned
    noise (λ = 1 / (σ₀² σ²)) fails."""
    X, y = data
    y = 4.0 * y
    common = dict(
        family="full",
        curvature="ggn",
        learning_rate=1.0,
        precision_rate=1.0,
        batch_size=len(X),
        max_iter=1,
        prior_variance=0.5,
        warm_start=True,
        dtype="float64",
        random_state=0,
    )
    reg = _fit_quiet(VariationalRegressor(**common), X, y)
    noise = reg.obs_variance_[0]
    assert not np.isclose(noise, np.var(y))  # the noise has moved: the two units differ
    _fit_quiet(reg, X, y)
    H = np.c_[X, np.ones(len(X))]
    prior = 1.0 / (np.r_[np.full(3, 0.5), 100.0] * np.var(y))
    cov = np.linalg.inv(np.diag(prior) + H.T @ H / noise)
    np.testing.assert_allclose(reg.posterior_var_, np.diag(cov), rtol=1e-10)
