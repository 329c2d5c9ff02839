"""``fit``'s further passes (``refine``): the iterated filter, LIN-HESS linearised at the
previous pass's mean (engine: :mod:`skbong.engine.filter.newton`, :func:`skbong.engine.filter.curvature.lin_hess`).

The references are independent: the expansion's gradient written out in numpy, the
mode of the log posterior found by scipy's optimiser, and the Laplace precision (the
Hessian of the negative log posterior at the mode) in numpy."""

import warnings

import jax
import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning

import skbong.engine as E
from skbong import BongClassifier, BongPoissonRegressor, BongRegressor
from skbong.engine.filter.curvature import lin_hess
from skbong.exceptions import DivergenceWarning


def _state(p, seed):
    rng = np.random.default_rng(seed)
    return E.MeanCov(rng.normal(size=p), np.eye(p))


@pytest.mark.parametrize("likelihood", ["gaussian", "bernoulli"])
def test_lin_hess_at_a_point_is_the_expansion_about_it(likelihood):
    """g at μ of the log-likelihood's second-order expansion about f̄ = f(θ̄):
    Jᵀ w [∇_f log p(f̄) − Λ(f̄) J (μ − θ̄)], and the curvature Jᵀ w Λ(f̄) J, for the
    linear model (J = [x, 1]). For the Gaussian likelihood the expansion is exact, so
    every θ̄ gives the filter's own step (point=None)."""
    rng = np.random.default_rng(0)
    b, d = 5, 3
    x, w = rng.normal(size=(b, d)), rng.uniform(0.5, 2.0, size=b)
    y = (rng.normal(size=(b, 1)) > 0).astype(float) if likelihood == "bernoulli" else rng.normal(size=(b, 1))
    model = E.MLP(d, 1, hidden=(), activation="identity", fit_intercept=True)
    config = E.Config(model, likelihood, "full", 4, "bong", "lin_hess")
    family = E.FAMILIES["full"]
    state, point = _state(d + 1, 1), rng.normal(size=d + 1)
    obs_var = np.array([0.7])
    with jax.enable_x64(True):
        g, curv = lin_hess(config, family, state, x, y, w, obs_var, None, point=point)
        g0, curv0 = lin_hess(config, family, state, x, y, w, obs_var, None)
        g, G = np.asarray(g), np.asarray(curv.factor @ curv.factor.T)
        g0, G0 = np.asarray(g0), np.asarray(curv0.factor @ curv0.factor.T)
    J = np.c_[x, np.ones(b)]
    f_bar = J @ point
    if likelihood == "gaussian":
        grad, lam = (y[:, 0] - f_bar) / 0.7, np.full(b, 1 / 0.7)
        np.testing.assert_allclose(g, g0, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(G, G0, rtol=1e-12)
    else:
        p = expit(f_bar)
        grad, lam = y[:, 0] - p, p * (1 - p)
    expected = J.T @ (w * (grad - lam * (J @ (state.mean - point))))
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(G, J.T @ ((w * lam)[:, None] * J), rtol=1e-12, atol=1e-14)


def _logistic_data(n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (rng.uniform(size=n) < expit(X @ np.array([2.0, -1.5, 0.5]) + 0.3)).astype(int)
    return X, y


def _mode_and_laplace(X, y, prior_var):
    """The mode of log p(y | θ) + log N(θ; 0, σ₀² I) by L-BFGS, and the Laplace covariance."""
    H = np.c_[X, np.ones(len(X))]

    def neg(theta):
        f = H @ theta
        return np.sum(np.logaddexp(0, f) - y * f) + 0.5 * theta @ theta / prior_var

    def grad(theta):
        return H.T @ (expit(H @ theta) - y) + theta / prior_var

    res = minimize(neg, np.zeros(H.shape[1]), jac=grad, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000})
    p = expit(H @ res.x)
    prec = H.T @ ((p * (1 - p))[:, None] * H) + np.eye(H.shape[1]) / prior_var
    return res.x, np.linalg.inv(prec)


def test_refined_fit_is_the_laplace_posterior_at_the_mode():
    """The passes' fixed point (Newton / IRLS) is the mode of the log posterior, with the
    Laplace-GGN covariance (exact Hessian for the canonical link). Tolerance: the passes
    stop when the mean moves by ≤ 1e-4 (1 + |θ|); Newton converges quadratically, so
    the mode is then within ~(1e-4)² · C, and 1e-6 covers C up to 100. The covariance
    is the curvature at the last linearisation point θ̄, within 1e-4 (1 + |θ|) ≈ 4e-4
    of the mode: p(1 − p) moves by at most |x| / 4 times that, so rtol 2e-3."""
    X, y = _logistic_data()
    clf = BongClassifier(prior_variance=1.0, dtype="float64", refine=50, random_state=0).fit(X, y)
    assert clf.family_ == "full" and 1 < clf.n_refine_passes_ < 50
    mode, cov = _mode_and_laplace(X, y, 1.0)
    np.testing.assert_allclose(clf.posterior_mean_, mode, atol=1e-6)
    np.testing.assert_allclose(clf.posterior_.cov, cov, rtol=2e-3, atol=1e-8)
    one_pass = BongClassifier(prior_variance=1.0, dtype="float64", refine=0, random_state=0).fit(X, y)
    assert one_pass.n_refine_passes_ == 0
    assert np.max(np.abs(one_pass.posterior_mean_ - mode)) > 1e-3  # one pass is not the mode


def test_refine_is_fit_only_and_partial_fit_continues_from_it():
    """partial_fit is one pass of the filter (a stream has no second pass); a partial_fit
    after fit continues from the refined posterior."""
    X, y = _logistic_data()
    fitted = BongClassifier(prior_variance=1.0, dtype="float64", random_state=0).fit(X, y)
    streamed = BongClassifier(prior_variance=1.0, dtype="float64", random_state=0)
    streamed.partial_fit(X, y, classes=[0, 1])
    assert streamed.n_refine_passes_ == 0 < fitted.n_refine_passes_
    plain = BongClassifier(prior_variance=1.0, dtype="float64", refine=0, random_state=0).fit(X, y)
    np.testing.assert_array_equal(streamed.posterior_mean_, plain.posterior_mean_)
    assert fitted.n_observations_ == len(y)  # one pass's counters: the rows, once
    before = fitted.posterior_mean_.copy()
    fitted.partial_fit(X[:5], y[:5])
    assert fitted.n_observations_ == len(y) + 5
    assert not np.array_equal(fitted.posterior_mean_, before)


def test_each_filter_of_the_bank_improves_its_own_log_posterior():
    """With the evidence bank every filter's mean moves towards its own mode: after the
    passes each filter's log posterior is at least that of its one-pass mean."""
    X, y = _logistic_data()
    one = BongClassifier(dtype="float64", refine=0, random_state=0).fit(X, y)
    ref = BongClassifier(dtype="float64", random_state=0).fit(X, y)
    H = np.c_[X, np.ones(len(X))]

    def log_post(means, grid):
        f = means @ H.T
        return np.sum(y * f - np.logaddexp(0, f), axis=1) - 0.5 * np.sum(means**2, 1) / grid

    live = np.isfinite(one.log_evidence_)
    grid = one.prior_grid_
    assert ref.n_refine_passes_ > 0
    assert np.all(log_post(ref.posterior_.mean, grid)[live] >= log_post(one.posterior_.mean, grid)[live])


def test_refine_applies_only_where_it_changes_something():
    """No pass for networks, drift, other rules and estimators, and no parameter for the
    regressor (the Gaussian's one pass is exact); the Poisson GLM takes them."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = X @ np.array([1.0, -1.0]) + rng.normal(size=60)
    reg = BongRegressor(random_state=0).fit(X, y)
    assert "refine" not in reg.get_params() and not hasattr(reg, "n_refine_passes_")
    Xc, yc = _logistic_data(60)
    for params in ({"hidden_layer_sizes": (4,)}, {"drift": 0.99}, {"rule": "blr"},
                   {"hessian": "lin_ef"}, {"refine": 0}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = BongClassifier(random_state=0, prior_variance=1.0, **params).fit(Xc, yc)
        assert clf.n_refine_passes_ == 0, params
    counts = rng.poisson(np.exp(0.5 * X[:, 0]))
    assert BongPoissonRegressor(random_state=0).fit(X, counts).n_refine_passes_ > 0


def _irls_step(X, y, point, prior_var):
    """One Newton (IRLS) step of logistic regression with N(0, σ₀² I) from θ̄, in numpy:
    Λ = I / σ₀² + Hᵀ diag(p (1 − p)) H, μ = Λ⁻¹ [Hᵀ diag(p (1 − p)) H θ̄ + Hᵀ (y − p)]."""
    H = np.c_[X, np.ones(len(X))]
    p = expit(H @ point)
    curv = H.T @ ((p * (1 - p))[:, None] * H)
    prec = curv + np.eye(H.shape[1]) / prior_var
    cov = np.linalg.inv(prec)
    return cov @ (curv @ point + H.T @ (y - p)), cov


def test_a_further_pass_is_one_newton_step_from_the_one_pass_mean():
    """The first further pass, linearised at the one-pass mean θ̄, is the prior
    conditioned on every row's quadratic expansion about θ̄: one IRLS step from θ̄
    (computed here in numpy), mean and covariance, to float64 rounding of a P = 4 solve.
    600 rows cross the closed form's blocks of 128 (one padded), so a block dropped,
    counted twice or padded with weight fails."""
    X, y = _logistic_data(600)
    one = BongClassifier(prior_variance=1.0, dtype="float64", refine=0, random_state=0).fit(X, y)
    est = BongClassifier(prior_variance=1.0, dtype="float64", refine=1, random_state=0).fit(X, y)
    assert est.n_refine_passes_ == 1
    mean, cov = _irls_step(X, y, one.posterior_mean_, 1.0)
    np.testing.assert_allclose(est.posterior_mean_, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.posterior_.cov, cov, rtol=1e-10, atol=1e-14)


def test_sample_weights_count_as_repeated_rows_in_the_passes():
    """A weight w is w copies of the row in each pass's sums: the refined posterior of
    weighted rows is that of the rows repeated (to the passes' convergence tolerance,
    whose stops may fall one pass apart: 1e-6)."""
    X, y = _logistic_data(90)
    w = np.random.default_rng(2).integers(1, 4, size=len(y))
    weighted = BongClassifier(prior_variance=1.0, dtype="float64", refine=50,
                              random_state=0).fit(X, y, sample_weight=w.astype(float))
    repeated = BongClassifier(prior_variance=1.0, dtype="float64", refine=50,
                              random_state=0).fit(np.repeat(X, w, 0), np.repeat(y, w))
    np.testing.assert_allclose(weighted.posterior_mean_, repeated.posterior_mean_, atol=1e-6)
    np.testing.assert_allclose(weighted.posterior_.cov, repeated.posterior_.cov, rtol=1e-4)


def test_a_pass_without_a_usable_belief_is_not_kept(monkeypatch):
    """A pass whose closed form is not a finite positive-definite belief is not kept: for
    a single filter the passes stop at the one-pass belief, with a ConvergenceWarning
    that says so; in a bank only the filters whose result is usable take the pass."""
    from skbong.engine.filter import newton

    run = newton.newton_pass

    def failing(bad):
        def patched(*args):
            carry, (mean, cov, ok) = run(*args)
            return carry, (mean, cov, ok & ~bad(np.arange(np.shape(ok)[0])))
        return patched

    X, y = _logistic_data(80)
    one = BongClassifier(prior_variance=1.0, dtype="float64", refine=0, random_state=0).fit(X, y)
    monkeypatch.setattr(newton, "newton_pass", failing(lambda k: k >= 0))
    with pytest.warns(ConvergenceWarning, match="pass 1 was not kept"):
        est = BongClassifier(prior_variance=1.0, dtype="float64", random_state=0).fit(X, y)
    assert est.n_refine_passes_ == 0
    np.testing.assert_array_equal(est.posterior_mean_, one.posterior_mean_)
    # a bank none of whose passes is usable: every filter keeps its own one pass (the
    # bank's filters make them after all: the reference's would not be theirs)
    ones = BongClassifier(dtype="float64", refine=0, random_state=0).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="pass 1 was not kept"):
        bank = BongClassifier(dtype="float64", random_state=0).fit(X, y)
    np.testing.assert_array_equal(bank.posterior_.mean, ones.posterior_.mean)
    # a bank: filter 3 (σ₀² = 1) never takes a pass; the others reach their modes
    monkeypatch.setattr(newton, "newton_pass", failing(lambda k: k == 3))
    bank = BongClassifier(dtype="float64", refine=50, random_state=0).fit(X, y)
    assert bank.prior_grid_[3] == 1.0 and bank.n_refine_passes_ > 1
    np.testing.assert_array_equal(bank.posterior_.mean[3], ones.posterior_.mean[3])
    mode, _ = _mode_and_laplace(X, y, 10.0)
    np.testing.assert_allclose(bank.posterior_.mean[4], mode, atol=1e-6)


def _counting(monkeypatch, module, name):
    """Record the calls of ``module.name`` (a host function) in a list."""
    calls, real = [], getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_refined_bank_streams_only_its_reference_filter(monkeypatch):
    """A bank whose further passes run needs no one pass of each filter: its reference
    filter streams the rows, the first further pass of every filter starts from that
    filter's one-pass mean and from the prior mean, and every filter still reaches its
    own mode (scipy's), with the rows counted once. ``partial_fit`` then streams every
    filter. (Tolerances: those of :func:`test_refined_fit_is_the_laplace_posterior_at_the_mode`.)"""
    from skbong._online import stream

    streamed = _counting(monkeypatch, stream, "_stream_bank")
    X, y = _logistic_data()
    bank = BongClassifier(dtype="float64", refine=50, random_state=0).fit(X, y)
    assert streamed == []
    assert bank.n_observations_ == len(X) and bank.n_skipped_ == 0
    for k, prior_var in enumerate(bank.prior_grid_):
        mode, cov = _mode_and_laplace(X, y, prior_var)
        np.testing.assert_allclose(bank.posterior_.mean[k], mode, atol=1e-6)
        np.testing.assert_allclose(bank.posterior_.cov[k], cov, rtol=2e-3, atol=1e-8)
    bank.partial_fit(X[:5], y[:5])
    assert streamed == ["_stream_bank"]


def test_a_filter_whose_first_pass_cannot_help_makes_its_own_one_pass(monkeypatch):
    """Where a filter's first further pass raises its log posterior from neither start,
    that filter would be left at the reference's one-pass belief, made under another
    prior: the bank then makes the filters' own one passes after all, and that filter
    keeps its own one-pass belief."""
    from skbong._online import stream
    from skbong.engine.filter import newton

    run = newton.newton_pass

    def stuck(*args):  # filter 3 (σ₀² = 1) never moves from where its pass starts
        carry, (mean, cov, ok) = run(*args)
        points = np.asarray(args[1])
        mean = np.where((np.arange(points.shape[0]) == 3)[:, None], points, mean)
        return carry, (mean, cov, ok)

    X, y = _logistic_data(80)
    ones = BongClassifier(dtype="float64", refine=0, random_state=0).fit(X, y)
    streamed = _counting(monkeypatch, stream, "_stream_bank")
    monkeypatch.setattr(newton, "newton_pass", stuck)
    bank = BongClassifier(dtype="float64", refine=50, random_state=0).fit(X, y)
    assert streamed == ["_stream_bank"] and bank.prior_grid_[3] == 1.0
    np.testing.assert_array_equal(bank.posterior_.mean[3], ones.posterior_.mean[3])
    mode, _ = _mode_and_laplace(X, y, 10.0)
    np.testing.assert_allclose(bank.posterior_.mean[4], mode, atol=1e-6)


def _iris_standardised():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y


def _softmax_map(X, y, prior_variance):
    """The multinomial logistic MAP with N(0, σ₀² I) on every weight and bias, by
    L-BFGS in numpy: the oracle of the iterated filter's fixed point."""
    from scipy.special import logsumexp

    d, c = X.shape[1], int(y.max()) + 1

    def objective(theta):
        f = X @ theta[: d * c].reshape(d, c) + theta[d * c :]
        log_lik = np.sum(f[np.arange(len(y)), y] - logsumexp(f, axis=1))
        return -(log_lik - 0.5 * theta @ theta / prior_variance)

    res = minimize(objective, np.zeros(d * c + c), method="L-BFGS-B",
                   options=dict(maxiter=10_000, gtol=1e-10, ftol=1e-15))
    return res.x


def test_a_first_pass_that_overshot_is_refined_from_the_prior_mean():
    # σ₀² = 100 on standardised iris: one pass overshoots (a broad prior meeting rows
    # the belief already predicts with certainty; |μ| reached 59 and training log-loss
    # 11), and passes linearised at that mean cannot recover. Started from the prior
    # mean, the passes are Newton's method on a concave log posterior: the MAP.
    X, y = _iris_standardised()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DivergenceWarning)
        est = BongClassifier(prior_variance=100.0, family="full", refine=30, dtype="float64",
                             random_state=0).fit(X, y)
    theta = _softmax_map(X, y, 100.0)
    # the passes stop once the mean moves by REFINE_TOL relative; Newton's quadratic
    # convergence leaves far less than that step between the last mean and the mode
    tol = 1e-4 * (1.0 + np.max(np.abs(theta)))
    np.testing.assert_allclose(est.posterior_mean_, theta, atol=tol, rtol=0)
    assert est.n_refine_passes_ > 1


def test_a_linear_fit_worse_than_the_prior_mean_warns():
    # dlr has no further passes: the overshoot stays, and fit says so; refine=0 asks for
    # one pass, the same as partial_fit on the rows, and is not judged
    X, y = _iris_standardised()
    with pytest.warns(DivergenceWarning, match="worse than the prior mean.*prior_variance"):
        BongClassifier(prior_variance=100.0, family="dlr", random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DivergenceWarning)
        BongClassifier(prior_variance=100.0, refine=0, random_state=0).fit(X, y)


def test_no_divergence_warning_on_ordinary_or_signal_free_labels():
    X, y = _iris_standardised()
    noise = np.random.default_rng(0).integers(0, 3, size=len(y))  # labels without signal
    with warnings.catch_warnings():
        warnings.simplefilter("error", DivergenceWarning)
        for labels in (y, noise):
            for params in (dict(), dict(refine=0, prior_variance=1.0)):
                BongClassifier(random_state=0, **params).fit(X, labels)
        BongClassifier(family="dlr", random_state=0).fit(X, noise)


def test_a_bank_drops_the_filters_whose_fit_is_worse_than_the_prior_mean():
    # dlr has no further passes; on all of standardised iris the bank's evidence (scored
    # before each update) favoured σ₀² = 100, whose last updates overshot: the mixture
    # ended at training log-loss 1.08, about log 3, knowing nothing. Those filters are
    # dropped, as a filter whose update is invalid is, and the others predict.
    from sklearn.metrics import log_loss

    X, y = _iris_standardised()
    with pytest.warns(DivergenceWarning, match=r"\(100, 1\), \(1000, 1\) were dropped"):
        est = BongClassifier(family="dlr", random_state=0).fit(X, y)
    grid = est.prior_grid_
    assert np.all(est.prior_weights_[grid >= 100] == 0)
    assert np.all(np.isneginf(est.log_evidence_[grid >= 100]))
    assert est.prior_variance_ < 100
    assert log_loss(y, est.predict_proba(X)) < 0.5 * np.log(3)


def _laplace_log_evidence(X, y, prior_var):
    """log p(y) by Laplace's method for logistic regression with N(0, σ₀² I) on the
    weights and the bias: log p(y | θ*) + log N(θ*; 0, σ₀² I) + ½ log |2π Σ*| at the
    mode θ* with Σ* the inverse Hessian (MacKay's evidence), from scipy and numpy."""
    mode, cov = _mode_and_laplace(X, y, prior_var)
    f = np.c_[X, np.ones(len(X))] @ mode
    log_lik = np.sum(y * f - np.logaddexp(0, f))
    p = mode.size
    log_prior = -0.5 * mode @ mode / prior_var - 0.5 * p * np.log(2 * np.pi * prior_var)
    return log_lik + log_prior + 0.5 * np.linalg.slogdet(2 * np.pi * cov)[1]


def test_a_refined_bank_weighs_its_filters_by_the_laplace_evidence():
    """After fit's passes each filter of the prior bank sits at its mode with its Laplace
    covariance, and its log evidence is Laplace's approximation of log p(y | σ₀²) there,
    computed here independently for each σ₀² of the grid. Tolerance: the mode is
    within ~1e-8 (quadratic convergence past a 1e-4 step), which moves the log joint
    by far less than 1e-6; the covariance is the curvature at the last linearisation
    point, within a relative 2e-3 of the mode's (see the test of the Laplace posterior),
    so ½ log |Σ| is within ½ P · 2e-3 = 4e-3 nats for P = 4. The one pass's evidence
    (each row scored before the filter learns it) is not this: its order matters."""
    X, y = _logistic_data()
    est = BongClassifier(dtype="float64", refine=50, random_state=0).fit(X, y)
    assert est.family_ == "full" and est.n_refine_passes_ > 1
    oracle = np.array([_laplace_log_evidence(X, y, s) for s in est.prior_grid_])
    np.testing.assert_allclose(est.log_evidence_, oracle, rtol=0, atol=4e-3)
    weights = np.exp(oracle - oracle.max())
    np.testing.assert_allclose(est.prior_weights_, weights / weights.sum(), atol=4e-3)
    one = BongClassifier(dtype="float64", refine=0, random_state=0).fit(X, y)
    assert np.max(np.abs(one.log_evidence_ - oracle)) > 1.0


def test_a_refined_bank_is_the_same_whatever_the_order_of_the_rows():
    """Laplace's evidence is a function of the rows as a set: reversing them changes the
    one pass's evidence (a sum of one-step predictions along the order) by whole nats
    and the refined bank's by no more than its convergence tolerance (above), for the
    classifier and the count model alike."""
    X, y = _logistic_data()
    rng = np.random.default_rng(1)
    counts = rng.poisson(np.exp(0.3 * X[:, 0] - 0.2 * X[:, 1] + 1.0))
    for make, target in ((BongClassifier, y), (BongPoissonRegressor, counts)):
        fits = [make(dtype="float64", refine=50, random_state=0).fit(X[o], target[o])
                for o in (slice(None), slice(None, None, -1))]
        ones = [make(dtype="float64", refine=0, random_state=0).fit(X[o], target[o])
                for o in (slice(None), slice(None, None, -1))]
        assert all(f.n_refine_passes_ > 1 for f in fits)
        np.testing.assert_allclose(fits[0].log_evidence_, fits[1].log_evidence_, atol=4e-3)
        assert np.max(np.abs(ones[0].log_evidence_ - ones[1].log_evidence_)) > 0.1


def _poisson_mode(X, y, prior_mean, prior_var):
    """The mode of Σ [y f − eᶠ] − ½ Σ (θ − μ₀)² / σ₀² (f = Xw + b), by scipy."""
    H = np.c_[X, np.ones(len(X))]

    def neg(theta):
        f = H @ theta
        d = theta - prior_mean
        return np.sum(np.exp(f) - y * f) + 0.5 * np.sum(d * d / prior_var)

    def grad(theta):
        return H.T @ (np.exp(H @ theta) - y) + (theta - prior_mean) / prior_var

    res = minimize(neg, prior_mean, jac=grad, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000})
    return res.x


def test_a_step_that_overshoots_is_halved_until_it_helps():
    """Counts with heavy-tailed features: from either start the first Newton step
    overshoots (the rate exp(f) of a row of large leverage explodes: the log posterior
    falls by ~10¹⁰); halved steps from the better start climb, and the passes end at
    the mode found by scipy (prior: weights N(0, 10), intercept N(log ȳ, 10)).
    Tolerance as for the classifier's mode: 1e-4 relative steps, quadratic convergence:
    1e-6 of the mode's scale. Without the halving the filter keeps its one-pass mean."""
    rng = np.random.default_rng(3)
    X = rng.standard_t(2, size=(150, 3))
    y = rng.poisson(np.exp(np.clip(X @ np.array([1.0, -0.7, 0.5]) + 1, -10, 8)))
    X = (X - X.mean(0)) / X.std(0)
    est = BongPoissonRegressor(dtype="float64", prior_variance=10.0, refine=50,
                               random_state=0).fit(X, y)
    prior_mean = np.r_[np.zeros(3), np.log(y.mean())]
    mode = _poisson_mode(X, y, prior_mean, 10.0)
    assert est.n_refine_passes_ > 1
    np.testing.assert_allclose(est.posterior_mean_, mode, rtol=0,
                               atol=1e-6 * (1 + np.max(np.abs(mode))))



def _sparse_binary(n=200, d=120, seed=0):
    """Binary features present in 0.1–30 % of rows and a logistic ground truth,
    standardised: a few rows of large leverage (a rare column's value reaches ~30)."""
    rng = np.random.default_rng(seed)
    freq = np.exp(rng.uniform(np.log(0.001), np.log(0.3), d))
    X = (rng.random((n, d)) < freq).astype(float)
    w = rng.normal(size=d) * 1.5
    y = (rng.random(n) < expit(X @ w - X.mean(0) @ w)).astype(int)
    sd = X.std(0)
    return (X - X.mean(0)) / np.where(sd > 0, sd, 1.0), y


def test_rows_of_large_leverage_reach_the_mode_from_the_prior_mean():
    """On standardised sparse binary features (2,000 rows) a few rows of large leverage
    leave the one-pass mean where Newton's quadratic model is poor: from there the first
    full step lowers the log posterior and halved steps crawl. The first pass also
    starts from the prior mean, where no probability is saturated, and within the
    default ten passes the fit ends at the mode, found here by scipy's optimiser
    (tolerance: 1e-4 relative steps and quadratic convergence, 1e-5 of the mode's
    scale)."""
    X, y = _sparse_binary(n=2000, seed=1)
    est = BongClassifier(prior_variance=1.0, dtype="float64", random_state=0).fit(X, y)
    mode, _ = _mode_and_laplace(X, y, 1.0)
    assert est.n_refine_passes_ < 10
    np.testing.assert_allclose(est.posterior_mean_, mode, rtol=0,
                               atol=1e-5 * (1 + np.max(np.abs(mode))))
