"""The Student-t observation model (``likelihood="student_t"``).

The likelihood's functions against jax.grad, scipy and the closed-form Fisher; the
update of the linear model against a numpy recursion written here from the formulas of
:mod:`skbong.engine.student_t` and :mod:`skbong.engine.filter.noise` (nothing from skbong):

    ŝ = b / a,  e = y − hᵀμ,  g = (ν + 1) e / (ν ŝ + e²),  c = (ν + 1) / ((ν + 3) ŝ),
    Λ' = Λ + c h hᵀ,  μ' = μ + Λ'⁻¹ h g,  e' = y − hᵀμ',  r² = max(e e', 0),
    a' = a + 1/2,  b' = b + ½ (ν + 1) r² / (ν + r² / ŝ),  Σ'' = Λ'⁻¹ (b' / a') / ŝ;

the ν → ∞ limit against the Gaussian estimator; the bounded step of an outlier; the
predictive's three faces against one Student-t; ν chosen by ``dof``: reaching the update,
the noise and the predictive, one compiled program per ν, and its refusals.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.stats
from sklearn.base import clone

from skbong import BongRegressor, merge_posteriors
from skbong.engine import LIKELIHOODS, Config, student_t
from skbong.engine.filter import noise
from skbong.engine.likelihoods import resolve
from skbong.engine.models import MLP

NU = student_t.DOF
LIK = LIKELIHOODS["student_t"]
DOFS = [NU, 2.5, 10.0]  # the default and two chosen ν


def _x64(fn):
    with jax.enable_x64(True):
        return fn()


@pytest.mark.parametrize("nu", DOFS)
@pytest.mark.parametrize("s", [0.3, 2.0])
@pytest.mark.parametrize("r", [0.0, 0.7, -3.0, 250.0])
def test_log_prob_grad_and_split_against_scipy_and_autodiff(r, s, nu):
    lik = resolve("student_t", nu)

    def check():
        y, f, var = jnp.array([1.5 + r]), jnp.array([1.5]), jnp.asarray(s)
        lp = float(lik.log_prob(y, f, var))
        ref = scipy.stats.t(nu, loc=1.5, scale=np.sqrt(s)).logpdf(1.5 + r)
        assert lp == pytest.approx(ref, rel=1e-12, abs=1e-12)
        auto = jax.grad(lambda ff: lik.log_prob(y, ff, var))(f)
        np.testing.assert_allclose(lik.grad(y, f, var), auto, rtol=1e-12, atol=1e-15)
        closed = (nu + 1) * r / (nu * s + r**2)  # the score, written here
        np.testing.assert_allclose(lik.grad(y, f, var), [closed], rtol=1e-12, atol=1e-15)
        # S u = ∇ (split_exact: no rest term needed)
        np.testing.assert_allclose(
            lik.fisher_factor(f, var) @ lik.grad_coef(y, f, var), auto, rtol=1e-12, atol=1e-15
        )

    _x64(check)
    assert lik.obs_dof == nu


@pytest.mark.parametrize("nu", DOFS)
def test_fisher_factor_is_the_expected_squared_score(nu):
    s = 0.7
    lik = resolve("student_t", nu)

    def score2_density(y):
        g = float(lik.grad(jnp.array([y]), jnp.array([0.0]), jnp.asarray(s))[0])
        return g**2 * scipy.stats.t(nu, scale=np.sqrt(s)).pdf(y)

    expected = _x64(lambda: scipy.integrate.quad(score2_density, -np.inf, np.inf)[0])
    factor = _x64(lambda: np.asarray(lik.fisher_factor(jnp.array([0.0]), jnp.asarray(s))))
    assert factor[0, 0] ** 2 == pytest.approx(expected, rel=1e-8)
    assert expected == pytest.approx((nu + 1) / ((nu + 3) * s), rel=1e-8)


@pytest.mark.parametrize("nu", [1e8, 1e16, 1e300])
def test_log_prob_at_a_large_dof_is_the_gaussians(nu):
    """log Γ((ν + 1)/2) − log Γ(ν/2) cancels for large ν (10¹⁶: 0 instead of 18.07); the
    log-density is then within O(r⁴ / ν) of the Gaussian's."""
    r, s = np.array([0.0, 1.3, -4.0]), 0.6
    lik = resolve("student_t", nu)
    lp = _x64(lambda: [float(lik.log_prob(jnp.array([v]), jnp.array([0.0]), s)) for v in r])
    gauss = scipy.stats.norm(scale=np.sqrt(s)).logpdf(r)
    np.testing.assert_allclose(lp, gauss, rtol=1e-12 + 1e3 / nu)


def test_configs_of_equal_dof_are_equal_and_resolve_to_one_likelihood():
    model = MLP(3, 1)
    default = Config(model, likelihood="student_t")
    assert default.obs_dof == NU and default == Config(model, likelihood="student_t", obs_dof=4)
    assert default.impl.likelihood is LIK
    six = Config(model, likelihood="student_t", obs_dof=6)
    assert six == Config(model, likelihood="student_t", obs_dof=6.0)
    assert hash(six) == hash(Config(model, likelihood="student_t", obs_dof=np.float64(6)))
    assert six != default and six.obs_dof == 6.0 and type(six.obs_dof) is float
    assert six.impl.likelihood is Config(model, likelihood="student_t", obs_dof=6).impl.likelihood
    assert six.impl.likelihood.obs_dof == 6.0
    assert Config(model).obs_dof is None
    with pytest.raises(ValueError, match="obs_dof applies to likelihood='student_t'"):
        Config(model, obs_dof=6.0)
    with pytest.raises(ValueError, match="obs_dof must be a positive finite"):
        Config(model, likelihood="student_t", obs_dof=0.0)


def test_score_is_bounded_at_its_closed_form_maximum():
    s = 0.4
    r = np.concatenate([np.linspace(-50, 50, 20001), [np.sqrt(NU * s)]])
    g = _x64(lambda: np.asarray(LIK.grad(jnp.asarray(r), jnp.zeros_like(r), jnp.asarray(s))))
    bound = (NU + 1) / (2 * np.sqrt(NU * s))
    assert np.max(np.abs(g)) == pytest.approx(bound, rel=1e-14)
    assert np.all(np.abs(g) <= bound * (1 + 1e-14))


def test_scale_weight_closed_forms():
    s = 0.3
    w = _x64(lambda: np.asarray(noise.scale_weight(jnp.array([0.0, NU * s, 1e6]), s, NU)))
    np.testing.assert_allclose(w[:2], [(NU + 1) / NU, (NU + 1) / (2 * NU)], rtol=1e-15)
    assert w[2] * 1e6 <= (NU + 1) * s  # the increment w r² is bounded by (ν + 1) ŝ
    gauss = _x64(lambda: np.asarray(noise.scale_weight(jnp.array([0.0, 1e6]), s, np.inf)))
    np.testing.assert_array_equal(gauss, 1.0)


def _data(n=60, d=3, seed=0, sd=0.3, outliers=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ np.linspace(1.0, -1.0, d) + 0.5 + sd * rng.normal(size=n)
    hit = rng.random(n) < outliers
    y[hit] += 50 * sd * rng.choice([-1.0, 1.0], hit.sum())
    return X, y


def oracle(X, y, prior_var, obs_var=None, nu=NU):
    """The numpy recursion of the module docstring (no intercept; ``obs_var`` None: the
    learned noise from IG(1, 1), coupled to the covariance)."""
    d = X.shape[1]
    mean, cov = np.zeros(d), prior_var * np.eye(d)
    a, b, log_ev = 1.0, 1.0, 0.0
    for h, t in zip(X, y):
        s = b / a if obs_var is None else obs_var
        e = t - h @ mean
        dof = nu if obs_var is not None else min(nu, 2 * a)
        log_ev += scipy.stats.t(dof, scale=np.sqrt(h @ cov @ h + s)).logpdf(e)
        g = (nu + 1) * e / (nu * s + e**2)
        c = (nu + 1) / ((nu + 3) * s)
        cov = np.linalg.inv(np.linalg.inv(cov) + c * np.outer(h, h))
        mean = mean + cov @ h * g
        if obs_var is None:
            r2 = max(e * (t - h @ mean), 0.0)
            a, b = a + 0.5, b + 0.5 * (nu + 1) * r2 / (nu + r2 / s)
            cov = cov * (b / a) / s
    return mean, cov, (b / a if obs_var is None else obs_var), log_ev


@pytest.mark.parametrize("obs_variance", ["auto", 0.2])
def test_linear_update_equals_the_numpy_recursion(obs_variance):
    X, y = _data(n=12, outliers=0.2, seed=3)
    est = BongRegressor(
        likelihood="student_t", fit_intercept=False, family="full", prior_variance=0.5,
        obs_variance=obs_variance, dtype="float64",
    ).fit(X, y)
    mean, cov, s, _ = oracle(X, y, 0.5, None if obs_variance == "auto" else 0.2)
    np.testing.assert_allclose(est.coef_, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.posterior_.cov, cov, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(est.obs_variance_, [s], rtol=1e-10)


@pytest.mark.parametrize("obs_variance", ["auto", 0.2])
def test_bank_evidence_is_the_student_t_predictive(obs_variance):
    """Each filter's online evidence: the sum of its one-step Student-t predictive
    densities, ν degrees of freedom (min(ν, 2a) with the learned noise), squared scale
    hᵀΣh + ŝ."""
    X, y = _data(n=12, outliers=0.2, seed=8)
    est = BongRegressor(
        likelihood="student_t", fit_intercept=False, family="full", prior_variance="bank",
        obs_variance=obs_variance, dtype="float64",
    ).fit(X, y)
    fixed = None if obs_variance == "auto" else obs_variance
    ref = [oracle(X, y, v, fixed)[3] for v in est.bank_grid_[:, 0]]
    np.testing.assert_allclose(est.log_evidence_, ref, rtol=1e-10)


@pytest.mark.parametrize("obs_variance", ["auto", 0.2])
@pytest.mark.parametrize("prior_variance", [1.0, "auto"])
def test_large_dof_is_the_gaussian_update(obs_variance, prior_variance):
    X, y = _data(n=80, seed=1)
    kw = dict(obs_variance=obs_variance, prior_variance=prior_variance, dtype="float64")
    t = BongRegressor(likelihood="student_t", dof=1e8, **kw).fit(X, y)
    g = BongRegressor(calibration=None, **kw).fit(X, y)
    np.testing.assert_allclose(t.posterior_mean_, g.posterior_mean_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(t.posterior_var_, g.posterior_var_, rtol=1e-7)
    np.testing.assert_allclose(t.obs_variance_, g.obs_variance_, rtol=1e-7)
    if prior_variance == "auto":
        np.testing.assert_allclose(t.prior_weights_, g.prior_weights_, rtol=1e-6, atol=1e-9)
    Xt = X[:5] + 0.1
    for a, b in zip(t.predict(Xt, return_std=True), g.predict(Xt, return_std=True)):
        np.testing.assert_allclose(a, b, rtol=1e-7)


def test_an_outliers_step_is_bounded():
    """One row with its target 10⁴ noise scales away moves the prediction at its input by
    exactly hᵀΣ'h g(r), at most hᵀΣ'h (ν + 1) / (2 √(ν s)); the Gaussian moves it by
    nearly the whole residual."""
    s = 0.09
    X, y = _data(n=100, seed=2)
    est = BongRegressor(
        likelihood="student_t", fit_intercept=False, family="full", prior_variance=1.0,
        obs_variance=s, dtype="float64",
    ).fit(X, y)
    h = X[:1] + 0.3
    f0, cov = est.predict(h)[0], np.array(est.posterior_.cov)
    r = 1e4 * np.sqrt(s)
    est.partial_fit(h, [f0 + r])
    cov_new = np.linalg.inv(np.linalg.inv(cov) + (NU + 1) / ((NU + 3) * s) * h.T @ h)
    lev = float(h[0] @ cov_new @ h[0])
    step = est.predict(h)[0] - f0
    assert step == pytest.approx(lev * (NU + 1) * r / (NU * s + r**2), rel=1e-9)
    assert abs(step) <= lev * (NU + 1) / (2 * np.sqrt(NU * s))
    gauss = BongRegressor(
        fit_intercept=False, family="full", prior_variance=1.0, obs_variance=s,
        dtype="float64", calibration=None,
    ).fit(X, y)
    gauss.partial_fit(h, [f0 + r])
    assert gauss.predict(h)[0] - f0 > 100 * abs(step)


def test_outliers_do_not_dominate_the_fit_or_the_noise():
    """5 % of the targets 50 noise scales off: the Student-t's coefficients stay near the
    clean fit and its learned squared scale near the noise; the Gaussian's do not."""
    X, y = _data(n=600, seed=4, outliers=0.05)
    Xc, yc = _data(n=600, seed=4)
    truth = np.linspace(1.0, -1.0, 3)
    t = BongRegressor(likelihood="student_t").fit(X, y)
    g = BongRegressor().fit(X, y)
    gc = BongRegressor().fit(Xc, yc)
    err_t, err_g, err_gc = (np.abs(e.coef_ - truth).max() for e in (t, g, gc))
    assert err_t < 2 * err_gc + 0.01
    assert err_g > 3 * err_t
    assert 0.3 * 0.09 < t.obs_variance_[0] < 2 * 0.09
    assert g.obs_variance_[0] > 20 * 0.09


def test_predictive_faces_are_one_student_t():
    X, y = _data(n=50, seed=5, outliers=0.05)
    est = BongRegressor(
        likelihood="student_t", fit_intercept=False, family="full", prior_variance=1.0,
        dtype="float64",
    ).fit(X, y)
    assert est.noise_dof_[0] == NU  # min(ν, 2a), 2a = 52
    Xt = X[:4] * 1.3
    cov, s = np.array(est.posterior_.cov), est.obs_variance_[0]
    loc = Xt @ est.coef_
    scale = np.sqrt(np.einsum("np,pq,nq->n", Xt, cov, Xt) + s)
    dist = scipy.stats.t(NU, loc=loc, scale=scale)
    mean, std = est.predict(Xt, return_std=True)
    np.testing.assert_allclose(mean, loc, rtol=1e-12)
    np.testing.assert_allclose(std, scale * np.sqrt(NU / (NU - 2)), rtol=1e-10)
    lo, hi = est.predict_interval(Xt, coverage=0.8)
    np.testing.assert_allclose(lo, dist.ppf(0.1), rtol=1e-10)
    np.testing.assert_allclose(hi, dist.ppf(0.9), rtol=1e-10)
    ys = loc + np.array([-3.0, 0.0, 0.5, 40.0])
    np.testing.assert_allclose(est.predict_logpdf(Xt, ys), dist.logpdf(ys), rtol=1e-10)
    grid = np.linspace(lo[0], hi[0], 4001)
    dens = np.exp(est.predict_logpdf(np.repeat(Xt[:1], len(grid), 0), grid))
    assert scipy.integrate.trapezoid(dens, grid) == pytest.approx(0.8, abs=1e-6)


@pytest.mark.parametrize("nu", [NU, 1.5])
def test_sample_y_draws_student_t_noise(nu):
    X, y = _data(n=40, seed=6)
    est = BongRegressor(likelihood="student_t", dof=nu, obs_variance=0.25, family="full")
    est.fit(X, y)
    draws = est.sample_y(X[:1], n_samples=40000, random_state=0)[0]
    f = est.sample_f(X[:1], n_samples=40000, random_state=0)[0]
    med = np.median(np.abs(draws - f))  # ν = 4: 0.371, ν = 1.5: 0.442
    assert med == pytest.approx(0.5 * scipy.stats.t(nu).ppf(0.75), rel=0.02)


@pytest.mark.parametrize(
    ("nu", "obs_variance", "n"),
    [(2.5, "auto", 30), (10.0, "auto", 4), (10.0, 0.2, 12)],
)
def test_a_chosen_dof_reaches_the_update_the_noise_and_the_predictive(nu, obs_variance, n):
    """``dof=ν``: the posterior is the numpy recursion's at that ν, and ``predict_logpdf``
    is the Student-t of min(ν, 2a) degrees of freedom written here (2a = 2 + n from
    IG(1, 1): 32 > 2.5, 6 < 10; ν itself with the fixed noise), squared scale hᵀΣh + ŝ."""
    X, y = _data(n=n, outliers=0.2, seed=9)
    est = BongRegressor(
        likelihood="student_t", dof=nu, fit_intercept=False, family="full",
        prior_variance=0.5, obs_variance=obs_variance, dtype="float64",
    ).fit(X, y)
    fixed = None if obs_variance == "auto" else obs_variance
    mean, cov, s, _ = oracle(X, y, 0.5, fixed, nu=nu)
    np.testing.assert_allclose(est.coef_, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.posterior_.cov, cov, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(est.obs_variance_, [s], rtol=1e-10)
    dof = nu if fixed else min(nu, 2.0 + n)
    assert est.noise_dof_[0] == dof
    Xt = X[:3] * 1.2 - 0.1
    loc = Xt @ mean
    scale = np.sqrt(np.einsum("np,pq,nq->n", Xt, cov, Xt) + s)
    ys = loc + np.array([-2.0, 0.3, 25.0])
    ref = scipy.stats.t(dof, loc=loc, scale=scale).logpdf(ys)
    np.testing.assert_allclose(est.predict_logpdf(Xt, ys), ref, rtol=1e-10)


def test_bank_evidence_at_a_chosen_dof():
    X, y = _data(n=12, outliers=0.2, seed=8)
    est = BongRegressor(
        likelihood="student_t", dof=2.5, fit_intercept=False, family="full",
        prior_variance="bank", dtype="float64",
    ).fit(X, y)
    ref = [oracle(X, y, v, None, nu=2.5)[3] for v in est.bank_grid_[:, 0]]
    np.testing.assert_allclose(est.log_evidence_, ref, rtol=1e-10)


def test_one_compiled_program_per_dof(compiles):
    """Two fits at one ν (equal as 5.75 and as the float32 5.75) share the programs
    of the first; another ν compiles its own. (ν values no other test uses.)"""
    X, y = _data(n=20, seed=10)

    def fit(nu):
        compiles.clear()
        BongRegressor(likelihood="student_t", dof=nu, family="full").fit(X, y).predict(X[:2])
        return sum(compiles.values())

    assert fit(5.75) > 0
    assert fit(np.float32(5.75)) == 0
    assert fit(5.25) > 0


def test_dof_round_trips_through_clone_and_set_params():
    est = BongRegressor(likelihood="student_t", dof=2.5)
    assert est.get_params()["dof"] == 2.5
    assert clone(est).get_params()["dof"] == 2.5
    assert BongRegressor().get_params()["dof"] == NU
    X, y = _data(n=30, seed=11)
    est.fit(X, y)
    assert est.noise_dof_[0] == 2.5
    est.set_params(dof=7.0)  # applies from the next prediction and update
    assert est.noise_dof_[0] == 7.0
    est.partial_fit(X[:2], y[:2])
    assert est.noise_dof_[0] == 7.0 and est.n_observations_ == 32


@pytest.mark.parametrize(
    ("dof", "match"),
    [
        (0.0, "The 'dof' parameter of BongRegressor must be .* Got 0.0"),
        (-2, "The 'dof' parameter of BongRegressor must be .* Got -2"),
        (np.nan, "The 'dof' parameter of BongRegressor must be .* Got nan"),
        ("4", "The 'dof' parameter of BongRegressor must be .* Got '4'"),
        (True, "dof must be a positive finite real number.*got True"),
        (np.inf, "dof must be .* got inf; .* is the Gaussian: use likelihood='gaussian'"),
    ],
)
def test_bad_dof_is_refused_leaving_the_estimator_unchanged(dof, match):
    X, y = _data(n=30, seed=12)
    with pytest.raises(ValueError, match=match):
        BongRegressor(likelihood="student_t", dof=dof).fit(X, y)
    est = BongRegressor(likelihood="student_t", dof=3.0).fit(X, y)
    coef = est.coef_.copy()
    est.set_params(dof=dof)
    with pytest.raises(ValueError, match=match):
        est.partial_fit(X[:3], y[:3])
    np.testing.assert_array_equal(est.coef_, coef)
    assert est.n_observations_ == 30


def test_dof_with_the_gaussian_likelihood_is_refused():
    X, y = _data(n=30, seed=13)
    with pytest.raises(ValueError, match="dof=6.0 is the degrees of freedom of likelihood='student_t'"):
        BongRegressor(dof=6.0).fit(X, y)
    BongRegressor(dof=4.0).fit(X, y)  # the default, explicitly


def test_refusals_leave_the_estimator_unchanged():
    X, y = _data(n=30, seed=7)
    with pytest.raises(ValueError, match="calibration='loo' needs likelihood='gaussian'"):
        BongRegressor(likelihood="student_t", calibration="loo").fit(X, y)
    est = BongRegressor(likelihood="student_t").fit(X, y)
    coef = est.coef_.copy()
    est.set_params(calibration="prequential")
    with pytest.raises(ValueError, match="needs likelihood='gaussian'"):
        est.partial_fit(X[:3], y[:3])
    np.testing.assert_array_equal(est.coef_, coef)
    assert est.n_observations_ == 30
    with pytest.raises(ValueError, match="likelihood"):
        BongRegressor(likelihood="cauchy").fit(X, y)
    shards = [
        BongRegressor(likelihood="student_t", prior_variance=1.0).fit(X[i::2], y[i::2])
        for i in range(2)
    ]
    with pytest.raises(ValueError, match="student_t likelihood"):
        merge_posteriors(shards)
    banks = [
        BongRegressor(likelihood="student_t", obs_variance=0.1).fit(X[i::2], y[i::2])
        for i in range(2)
    ]
    with pytest.raises(ValueError, match="student_t likelihood is not conjugate"):
        merge_posteriors(banks)


@pytest.fixture(scope="module")
def bench_outliers():
    from test_benchmarks import _load

    yield from _load("bench_outliers")


def test_bench_outliers_quick(bench_outliers):
    """The benchmark's quick table: with 5 % outliers the Student-t keeps the clean RMSE
    that the Gaussian loses; on clean data it is within 2 % of it."""
    rows = bench_outliers.run(
        [("synthetic", lambda s: bench_outliers.synthetic(s, 300))], network=False, n_splits=1
    )
    rmse = {(r["outliers"], r["method"]): r["RMSE"] for r in rows}
    assert rmse["5%", "bong student_t"] < 0.8 * rmse["5%", "bong gaussian"]
    assert rmse["5%", "bong student_t"] < 1.05 * rmse["0%", "bong gaussian"]
    assert rmse["0%", "bong student_t"] < 1.02 * rmse["0%", "bong gaussian"]
    assert all(r["NLL"] is not None for r in rows if r["method"] != "HuberRegressor")
