"""Noise-free posterior draws and input gradients of the predictive.

What is tested, and why the tolerances are what they are:

* ``sample_f`` on the conjugate model (linear, full, bong, lin_hess, float64, fixed
  noise) draws f ~ N(Φμ, ΦΣΦᵀ) exactly, with μ, Σ the closed-form Bayesian linear
  regression posterior. With S draws, each sample mean is within 6 sd / √S and each
  entry of the sample covariance within 6 √((Cᵢᵢ Cⱼⱼ + Cᵢⱼ²) / S) (the standard error of
  a Gaussian sample covariance) of the closed form (z = 6, fixed seeds).
* ``sample_y`` is ``sample_f`` plus independent noise: with the same ``random_state``
  the difference has mean 0 and variance R (fixed noise) or E[σ²] = b / (a − 1) =
  ``obs_variance_`` ν / (ν − 2) (learned noise, a Student-t with excess kurtosis
  6 / (ν − 4), which widens the standard error of the sample variance). Also for the
  prior-variance bank, whose filters are drawn by a multinomial.
* With the bank, the draws of ``sample_f`` are the mixture: mean and variance match
  the closed-form ``linmc`` moments of ``predict`` (variance std² − R), with the
  standard error of the variance from the draws' own fourth moment.
* ``VariationalRegressor`` and ``VariationalClassifier`` get the same methods from the
  shared code (one moment check each).
* ``sample_proba``: for a two-class linear model with a diagonal belief the logits
  log(p₁ / p₀) of the draws are N(φᵀμ, Σⱼ φⱼ² vⱼ) with μ, v the public
  ``posterior_mean_`` and ``posterior_var_``; for three classes the average of S draws
  matches ``predict_proba`` under ``predictive="mc"`` (S₂ other draws) within
  6 √(Var p (1 / S + 1 / S₂)).
* ``predict(..., return_mean_grad=True, return_std_grad=True)``: the linear model's
  gradients against the closed form (∂ mean / ∂x = w, ∂ std / ∂x = (Σφ)_{:d} / std)
  to 1e-10 relative (float64 rounding of a 4 × 4 product); a tanh MLP (learned noise,
  Student-t inflation), the bank's mixture and the ``mc`` predictive against central
  finite differences in float64. With step h the central difference errs by at most
  h² |f'''| / 6 + ε |f| / h; h = 1e-5, |f'''| ≲ 10 and |f| ≲ 5 on these unit-scale
  inputs give ≲ 3e-10, or 1e-9 with the rounding of the predictive's sums a few ulps
  (the largest error seen is 6e-10), so we assert 1e-7 absolute
  plus 1e-6 relative, a margin of over 100 that a wrong term (a missing Student-t
  factor of a few percent, a dropped chain-rule term) still exceeds.
* The returned values with gradients equal those of ``predict`` without them, and the
  shapes and order are scikit-optimize's (``(n_features,)`` for one row of a 1-D target).
* scikit-optimize's ``Optimizer`` runs with ``BongRegressor`` as its surrogate (its
  ``lbfgs`` acquisition optimiser uses the gradients), and its expected-improvement
  gradient through our ``predict`` agrees with finite differences of its value.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skbong import BongClassifier, BongRegressor, VariationalClassifier, VariationalRegressor

N, D = 30, 3
RNG = np.random.default_rng(21)
X = RNG.normal(size=(N, D))
W_TRUE = np.array([1.0, -2.0, 0.5])
Y = X @ W_TRUE + 0.3 + 0.5 * RNG.normal(size=N)
Y2 = np.column_stack([Y, np.sin(X[:, 0]) + 0.2 * RNG.normal(size=N)])
Y_NONLIN = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.1 * RNG.normal(size=N)
Y_BIN = (X[:, 0] - X[:, 2] + 0.5 * RNG.normal(size=N) > 0).astype(int)
Y_MULTI = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])
X_NEW = RNG.normal(size=(4, D))

CONJ = dict(family="full", rule="bong", hessian="lin_hess", dtype="float64", random_state=0)
PRIOR_VAR, OBS_VAR = 2.0, 0.25
INTERCEPT_PRIOR_VAR = 100.0
"""The intercept's own prior variance (documented in BongRegressor's docstring)."""
Z = 6.0


def _reg(**kw):
    return BongRegressor(**{**CONJ, "prior_variance": PRIOR_VAR, "obs_variance": OBS_VAR, **kw})


def _closed_form(X, y, prior_var, obs_var):
    """Bayesian linear regression, prior N(0, diag(σ₀², …, σ₀², 100)) on (weights,
    intercept): posterior mean and covariance."""
    phi = np.column_stack([X, np.ones(len(X))])
    v0 = np.r_[np.full(X.shape[1], prior_var), INTERCEPT_PRIOR_VAR]
    cov = np.linalg.inv(np.diag(1.0 / v0) + phi.T @ phi / obs_var)
    return cov @ phi.T @ y / obs_var, cov


def _design(Xq):
    return np.column_stack([Xq, np.ones(len(Xq))])


def _assert_mean_var(draws, mean, var, kurtosis_excess=0.0):
    """Sample mean and variance of draws (n, S) within Z standard errors of (mean, var)."""
    s = draws.shape[-1]
    assert np.all(np.abs(draws.mean(-1) - mean) <= Z * np.sqrt(var / s))
    se_var = var * np.sqrt(2.0 / (s - 1) + kurtosis_excess / s)
    assert np.all(np.abs(draws.var(-1, ddof=1) - var) <= Z * se_var)


# ------------------------------------------------------------------- sample_f
def test_sample_f_is_the_closed_form_posterior_of_f():
    reg = _reg().fit(X, Y)
    mean, cov = _closed_form(X, Y, PRIOR_VAR, OBS_VAR)
    phi = _design(X_NEW)
    f_mean, f_cov = phi @ mean, phi @ cov @ phi.T
    s = 20000
    draws = reg.sample_f(X_NEW, n_samples=s, random_state=0)
    assert draws.shape == (len(X_NEW), s)
    assert np.all(np.abs(draws.mean(1) - f_mean) <= Z * np.sqrt(np.diag(f_cov) / s))
    se_cov = np.sqrt((np.outer(np.diag(f_cov), np.diag(f_cov)) + f_cov**2) / s)
    assert np.all(np.abs(np.cov(draws) - f_cov) <= Z * se_cov)
    # reproducible, and the draws change with the seed
    few = reg.sample_f(X_NEW, 5, random_state=0)
    np.testing.assert_array_equal(few, reg.sample_f(X_NEW, 5, random_state=0))
    assert not np.array_equal(few, reg.sample_f(X_NEW, 5, random_state=1))
    assert reg.sample_f(X_NEW).shape == (len(X_NEW), 1)
    assert _reg().fit(X, Y2).sample_f(X_NEW, 3, random_state=0).shape == (len(X_NEW), 2, 3)


@pytest.mark.parametrize("bank", [False, True], ids=["one_filter", "bank"])
def test_sample_y_is_sample_f_plus_fixed_noise(bank):
    reg = _reg(prior_variance="auto" if bank else PRIOR_VAR).fit(X, Y)
    if bank:  # several filters carry weight, so the multinomial draw matters
        assert np.sum(reg.prior_weights_ > 0.01) >= 2
    s = 20000
    f = reg.sample_f(X_NEW, s, random_state=3)
    y = reg.sample_y(X_NEW, s, random_state=3)
    _assert_mean_var(y - f, 0.0, OBS_VAR)
    # the variances differ by the noise: var(f + ε) − var(f) = var ε + 2 cov(f, ε)
    diff = y.var(1, ddof=1) - f.var(1, ddof=1)
    se = OBS_VAR * np.sqrt(2.0 / (s - 1)) + 2 * np.sqrt(f.var(1) * OBS_VAR / s)
    assert np.all(np.abs(diff - OBS_VAR) <= Z * se)


def test_sample_y_is_sample_f_plus_learned_noise():
    reg = BongRegressor(hidden_layer_sizes=(5,), activation="tanh", dtype="float64", random_state=0)
    reg.fit(X, Y_NONLIN)
    nu = reg.noise_dof_[0]
    assert nu > 8  # finite fourth moment of the Student-t noise
    noise_var = reg.obs_variance_[0] * nu / (nu - 2)  # E[σ²] = b / (a − 1)
    s = 40000
    eps = reg.sample_y(X_NEW, s, random_state=5) - reg.sample_f(X_NEW, s, random_state=5)
    _assert_mean_var(eps, 0.0, noise_var, kurtosis_excess=6.0 / (nu - 4))


def test_sample_f_mixture_of_the_bank():
    reg = _reg(prior_variance="auto").fit(X[:8], Y[:8])  # few rows: the bank stays spread
    assert np.sum(reg.prior_weights_ > 0.05) >= 2
    mean, std = reg.predict(X_NEW, return_std=True)  # closed-form mixture moments
    var = std**2 - OBS_VAR
    s = 40000
    draws = reg.sample_f(X_NEW, s, random_state=2)
    centred = draws - draws.mean(1, keepdims=True)
    m4 = np.mean(centred**4, axis=1)
    assert np.all(np.abs(draws.mean(1) - mean) <= Z * np.sqrt(var / s))
    assert np.all(np.abs(draws.var(1, ddof=1) - var) <= Z * np.sqrt((m4 - var**2) / s))


def test_variational_regressor_sample_f():
    reg = VariationalRegressor(obs_variance=OBS_VAR, dtype="float64", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg.fit(X, Y)
    mean, std = reg.predict(X_NEW, return_std=True)  # linear: J Σ Jᵀ + R in closed form
    draws = reg.sample_f(X_NEW, 20000, random_state=0)
    _assert_mean_var(draws, mean, std**2 - OBS_VAR)


# --------------------------------------------------------------- sample_proba
def test_sample_proba_binary_logits_are_the_posterior_of_f():
    clf = BongClassifier(family="diag", prior_variance=1.0, dtype="float64", random_state=0).fit(X, Y_BIN)
    phi = _design(X_NEW)
    f_mean = phi @ clf.posterior_mean_
    f_var = phi**2 @ clf.posterior_var_
    s = 20000
    p = clf.sample_proba(X_NEW, s, random_state=0)
    assert p.shape == (len(X_NEW), 2, s)
    assert_allclose(p.sum(1), 1.0, rtol=1e-14)
    _assert_mean_var(np.log(p[:, 1] / p[:, 0]), f_mean, f_var)


@pytest.mark.parametrize("cls", [BongClassifier, VariationalClassifier])
def test_sample_proba_averages_to_the_mc_predictive(cls):
    s, s2 = 4000, 4000
    clf = cls(dtype="float64", predictive="mc", predictive_samples=s2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, Y_MULTI)
    p = clf.sample_proba(X_NEW, s, random_state=1)
    assert p.shape == (len(X_NEW), 3, s)
    assert_allclose(p.sum(1), 1.0, rtol=1e-14)
    se = np.sqrt(p.var(-1) * (1 / s + 1 / s2))
    assert np.all(np.abs(p.mean(-1) - clf.predict_proba(X_NEW)) <= Z * se + 1e-12)


# ------------------------------------------------------------------ gradients
H = 1e-5
ATOL, RTOL = 1e-7, 1e-6


def _finite_differences(reg, x):
    """Central differences of predict's mean and std at the row x, each (C, D)."""
    steps = []
    for j in range(len(x)):
        e = np.zeros_like(x)
        e[j] = H
        (mp, sp), (mm, sm) = (
            reg.predict(np.atleast_2d(x + e), return_std=True),
            reg.predict(np.atleast_2d(x - e), return_std=True),
        )
        steps.append(((mp - mm) / (2 * H), (sp - sm) / (2 * H)))
    mean_fd = np.stack([m.reshape(-1) for m, _ in steps], axis=-1)
    std_fd = np.stack([s.reshape(-1) for _, s in steps], axis=-1)
    return mean_fd, std_fd


def _check_against_fd(reg, rows):
    for x in rows:
        mean, std, mean_grad, std_grad = reg.predict(
            x[None], return_std=True, return_mean_grad=True, return_std_grad=True
        )
        m_ref, s_ref = reg.predict(x[None], return_std=True)
        assert_allclose(mean, m_ref, rtol=1e-12)  # the same values as without gradients
        assert_allclose(std, s_ref, rtol=1e-12)
        mean_fd, std_fd = _finite_differences(reg, x)
        shape = mean_fd.shape if reg._multi_output else mean_fd.shape[1:]
        assert mean_grad.shape == std_grad.shape == shape
        assert_allclose(mean_grad, mean_fd.reshape(shape), rtol=RTOL, atol=ATOL)
        assert_allclose(std_grad, std_fd.reshape(shape), rtol=RTOL, atol=ATOL)


def test_gradients_of_the_linear_model_closed_form():
    reg = _reg().fit(X, Y)
    mean, cov = _closed_form(X, Y, PRIOR_VAR, OBS_VAR)
    for x in X_NEW:
        phi = np.r_[x, 1.0]
        std = np.sqrt(phi @ cov @ phi + OBS_VAR)
        m, s, mean_grad, std_grad = reg.predict(
            x[None], return_std=True, return_mean_grad=True, return_std_grad=True
        )
        assert mean_grad.shape == std_grad.shape == (D,)
        assert_allclose(m, [phi @ mean], rtol=1e-10)
        assert_allclose(s, [std], rtol=1e-10)
        assert_allclose(mean_grad, mean[:D], rtol=1e-10)
        assert_allclose(std_grad, (cov @ phi)[:D] / std, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize(
    "params",
    [
        dict(hidden_layer_sizes=(6,), activation="tanh"),  # learned noise: Student-t
        dict(hidden_layer_sizes=(6,), activation="tanh", family="full", obs_variance=0.1),
        dict(hidden_layer_sizes=(4,), activation="tanh", predictive="mc", predictive_samples=7),
        dict(prior_variance="auto", family="full", obs_variance=0.3),  # the bank's mixture
    ],
    ids=["mlp_learned_noise", "mlp_full_fixed", "mlp_mc", "linear_bank"],
)
def test_gradients_match_finite_differences(params):
    reg = BongRegressor(**{"dtype": "float64", "random_state": 0, **params})
    bank = "prior_variance" in params
    if bank:  # few rows: the bank's weight stays spread over several filters
        reg.fit(X[:8], Y[:8])
        assert np.sum(reg.prior_weights_ > 0.05) >= 2
    else:
        reg.fit(X, Y_NONLIN)
    _check_against_fd(reg, X_NEW)


def test_gradients_multi_output_and_variational():
    reg = BongRegressor(hidden_layer_sizes=(5,), activation="tanh", dtype="float64", random_state=0)
    _check_against_fd(reg.fit(X, Y2), X_NEW[:2])
    var = VariationalRegressor(hidden_layer_sizes=(5,), activation="tanh", dtype="float64")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        var.set_params(max_iter=30, random_state=0).fit(X, Y_NONLIN)
    _check_against_fd(var, X_NEW[:2])


def test_gradient_return_conventions():
    reg = _reg().fit(X, Y)
    x = X_NEW[:1]
    out = reg.predict(x, return_mean_grad=True)  # the plugin mean and its gradient
    assert len(out) == 2 and out[0].shape == (1,) and out[1].shape == (D,)
    out = reg.predict(x, return_std=True, return_mean_grad=True)
    assert [a.shape for a in out] == [(1,), (1,), (D,)]
    assert reg.predict(x).shape == (1,)
    with pytest.raises(ValueError, match="return_std=True"):
        reg.predict(x, return_std_grad=True)
    with pytest.raises(ValueError, match="single row"):
        reg.predict(X_NEW, return_std=True, return_mean_grad=True)


# ---------------------------------------------------------- scikit-optimize
def test_skopt_optimizer_with_bong_regressor():
    skopt = pytest.importorskip("skopt", reason="scikit-optimize is an optional dependency")
    from skopt.acquisition import gaussian_ei

    surrogate = BongRegressor(hidden_layer_sizes=(8,), activation="tanh", random_state=0)
    opt = skopt.Optimizer(
        [(-2.0, 2.0), (-2.0, 2.0)],
        base_estimator=surrogate,
        n_initial_points=4,
        acq_optimizer_kwargs={"n_points": 200, "n_restarts_optimizer": 2},
        random_state=0,
    )
    assert opt.acq_optimizer == "lbfgs"  # skopt's default for a gradient-giving model
    objective = lambda x: (x[0] - 0.5) ** 2 + (x[1] + 0.3) ** 2
    for _ in range(7):
        x = opt.ask()
        assert -2.0 <= x[0] <= 2.0 and -2.0 <= x[1] <= 2.0
        opt.tell(x, objective(x))
    assert len(opt.models) == 4

    # skopt's expected-improvement gradient through our predict matches its values
    model = opt.models[-1].set_params(dtype="float64").fit(np.array(opt.Xi), opt.yi)
    y_opt = np.min(opt.yi)
    x0 = np.array([[0.3, -0.1]])
    value, grad = gaussian_ei(x0, model, y_opt, return_grad=True)
    assert grad.shape == (2,)
    fd = [
        (gaussian_ei(x0 + e, model, y_opt) - gaussian_ei(x0 - e, model, y_opt))[0] / (2 * H)
        for e in np.eye(2)[:, None, :] * H
    ]
    assert_allclose(grad, fd, rtol=RTOL, atol=ATOL)
