"""Posterior predictives: closed forms, limits, normalisation, sample sharing, identities.

Setting: a tanh MLP (3 features, hidden (4,), 1 or 3 outputs) and random beliefs of each
family (full, diag, DLR; the moment families share their representation) whose dense
covariance Σ is built independently in numpy; per-row Jacobians J come from
``jax.jacfwd``. Predictive calls run eagerly (``jax.disable_jit``): compiled primitives are
shared by every configuration, which is much cheaper than compiling each one.

Tests and tolerances
--------------------
* ``test_output_samples``: ``mc`` outputs are f(x, θₛ) and ``linmc`` outputs
  f(x, μ) + J (θₛ − μ), with θₛ = ``family.sample(state, key, S)`` (one set of samples per
  call). Exact identities: rtol 1e-12 (float64).
* ``test_linmc_gaussian_closed_form``: ``linmc`` Gaussian moments are f(x, μ) and
  diag(J Σ Jᵀ) + R, for 1 and 3 outputs (vector R): 1e-10 relative in float64 (sums of a
  few dozen products), 1e-5 in float32 (a few hundred ulp).
* ``test_small_variance_limit``: with Σ scaled by 1e-6 and 1e-10, ``mc`` and ``linmc``
  approach ``plugin`` within what the variance implies. Every sampled output obeys
  |fₛ − f(μ)| ≤ Δ = 6.5 √(J Σ Jᵀ)_cc + ½ ‖∇²f_c‖ ρ², ρ² = λ_max(Σ) (√P + 7)² (a z = 6.5
  bound on the linear term over every sample, row and output, and the norm concentration
  of θₛ − μ for the quadratic one, with the Hessian norm at μ doubled for its variation
  over that tiny ball). Hence: Gaussian mean within Δ and variance within Δ² of R;
  log-probabilities within 2 Δ (∂ log softmax_k / ∂f has ℓ₁ norm 2(1 − p_k) ≤ 2; ≤ 1 for
  the Bernoulli); Poisson mean within e^f (e^Δ − 1) of e^f and variance within that plus
  its square.
* ``test_probabilities_normalised``: exp(log proba) sums to 1 over classes for Bernoulli
  and 3-class categorical, every kind and family: 1e-12 in float64, 1e-6 in float32.
* ``test_rows_order_and_subsets``: with the same key, permuting the rows permutes the
  ``mc`` / ``linmc`` results and a subset of rows gives the subset of results (one set of
  samples per call, shared by all rows): rtol 1e-12 (equal up to the blocking of matrix
  products over a different number of rows).
* ``test_same_key_same_result``: identical keys give bitwise identical results; another
  key gives different ones (except the Gaussian ``linmc`` closed form, which uses none).
* ``test_poisson_and_gaussian_moments``: plugin Poisson mean and variance are e^f(μ);
  ``mc`` moments are the sample mean of the rate and mean + variance of the rate (law of
  total variance) over the documented samples; Gaussian ``mc`` moments are the sample
  mean and variance + R. Exact: rtol 1e-12. Poisson ``linmc`` is the closed form under
  f ~ N(f(x, μ), diag J Σ Jᵀ), checked against 80-point Gauss–Hermite quadrature of
  E[e^f] and E[e^{2f}] on the independent Jacobians (exact to float64 for these
  variances: rtol 1e-12).
* ``test_categorical2_equals_bernoulli``: on a linear model, BONG-LIN-HESS-full with a
  2-class softmax and prior variance s is the Bernoulli one with prior variance 2 s, in
  the coordinates δ = θ₁ − θ₀ (weights and intercepts alike): the softmax sees only the
  logit difference uᵀ δ (u = [x; 1]); its gradient and Fisher are Dᵀ u (y₁ − p₁) and
  p₀ p₁ Dᵀ u uᵀ D (D the δ-map, D Dᵀ = 2 I), so by Woodbury the δ-marginal of every
  update is the Bernoulli update, and the prior N(0, s I) maps to N(0, 2 s I) (both prior
  means are zero). After a stream of 10 mini-batches: D μ_cat = μ_bern,
  D Σ_cat Dᵀ = Σ_bern, the same prequential log-likelihoods and the same plugin
  probabilities, to 1e-10 (float64) / 1e-5 (float32): 10 Woodbury updates of
  well-conditioned matrices with entries of order one. In float64 also: for the linear
  model ``mc`` equals ``linmc`` (same key, rounding); the categorical and Bernoulli
  ``linmc`` probabilities agree in distribution only: with independent keys, each is a
  mean of S values of σ(Z), Var σ(Z) ≤ Var(Z) / 16 (Gaussian Poincaré, σ' ≤ 1/4), so they
  differ by at most 6 √(2 v / 16 S), v = uᵀ Σ_bern u.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skbong import engine as E

N_ROWS, N_FEATURES, N_SAMPLES = 5, 3, 64
FAMILIES = ("full", "diag", "dlr")
RANK = 2
CASES = {  # name: (likelihood, n_outputs)
    "gaussian": ("gaussian", 1),
    "gaussian3": ("gaussian", 3),
    "bernoulli": ("bernoulli", 1),
    "categorical3": ("categorical", 3),
    "poisson": ("poisson", 1),
}


def _model(n_out):
    return E.MLP(N_FEATURES, n_out, hidden=(4,), activation="tanh")


def _inputs():
    return np.random.default_rng(0).standard_normal((N_ROWS, N_FEATURES))


@functools.cache
def _reference(n_out):
    """μ, then at μ and the test inputs: per-row Jacobians (n, C, P), outputs (n, C) and
    the spectral norms of the output Hessians (n, C); float64, independent of the engine's
    predictive code."""
    model = _model(n_out)
    rng = np.random.default_rng(1)
    with jax.enable_x64(True):
        mean = model.flat_init(jax.random.PRNGKey(2), jnp.float64)
        mean = mean + 0.3 * jnp.asarray(rng.standard_normal(mean.shape[0]))
        x = jnp.asarray(_inputs())
        jac = np.asarray(jax.jit(jax.jacfwd(lambda th: model.apply(th, x)))(mean))
        hess = np.asarray(jax.jit(jax.hessian(lambda th: model.apply(th, x)))(mean))
        f = np.asarray(model.apply(mean, x))
    hess_norm = np.abs(np.linalg.eigvalsh(hess)).max(axis=-1)
    return np.asarray(mean), jac, f, hess_norm


def _state(family, model, dtype, scale=1.0):
    """A random belief of ``family`` (covariance × ``scale``) and its dense Σ (float64)."""
    rng = np.random.default_rng(3)
    p = model.n_params()
    mean = _reference(model.n_outputs)[0]
    if family in ("full", "full_moment"):
        root = rng.standard_normal((p, p))
        cov = scale * (0.1 * root @ root.T / p + 0.02 * np.eye(p))
        state = E.MeanCov(jnp.asarray(mean, dtype), jnp.asarray(cov, dtype))
    elif family in ("diag", "diag_moment"):
        var = scale * rng.uniform(0.02, 0.2, p)
        state = E.MeanCov(jnp.asarray(mean, dtype), jnp.asarray(var, dtype))
        cov = np.diag(var)
    else:
        prec_diag = rng.uniform(5.0, 20.0, p) / scale
        prec_lr = 2.0 * rng.standard_normal((p, RANK)) / np.sqrt(scale)
        cov = np.linalg.inv(np.diag(prec_diag) + prec_lr @ prec_lr.T)
        state = E.DLRState(
            jnp.asarray(mean, dtype), jnp.asarray(prec_diag, dtype), jnp.asarray(prec_lr, dtype)
        )
    return state, mean, cov


def _hyper(obs_var, dtype):
    return E.Hyper(*(jnp.asarray(v, dtype) for v in (1.0, obs_var, 0.1, 1.0, 0.0)))


def _predict(cfg, state, x, key, kind, obs_var=1.0, n_samples=N_SAMPLES):
    """Eager predictive: moments for Gaussian / Poisson, log-probabilities otherwise."""
    dtype = state.mean.dtype
    with jax.disable_jit():
        x = jnp.asarray(x, dtype)
        if cfg.likelihood in ("gaussian", "poisson"):
            hyper = _hyper(obs_var, dtype)
            out = E.predict_moments(cfg, state, hyper, x, key, kind, n_samples)
        else:
            out = (E.predict_log_proba(cfg, state, x, key, kind, n_samples),)
    return tuple(np.asarray(o) for o in out)


def _config(case, family, model=None):
    likelihood, n_out = CASES[case]
    return E.Config(model or _model(n_out), likelihood, family, rank=RANK)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind", ["mc", "linmc"])
def test_output_samples(family, kind):
    with jax.enable_x64(True):
        cfg = _config("gaussian3", family)
        state, mean, _ = _state(family, cfg.model, jnp.float64)
        x = _inputs()
        key = jax.random.PRNGKey(3)
        with jax.disable_jit():
            out = np.asarray(E.output_samples(cfg, state, jnp.asarray(x), key, kind, 7))
            thetas = E.FAMILIES[family].sample(state, key, 7)
            direct = np.asarray(jax.vmap(cfg.model.apply, (0, None))(thetas, jnp.asarray(x)))
    assert out.shape == (7, N_ROWS, 3)
    if kind == "linmc":
        _, jac, f, _ = _reference(3)
        direct = f[None] + np.einsum("ncp,sp->snc", jac, np.asarray(thetas) - mean)
    np.testing.assert_allclose(out, direct, rtol=1e-12, atol=1e-12 * np.abs(direct).max())
    assert np.abs(out - out[0]).max() > 1e-3  # the samples differ


@pytest.mark.parametrize("family", FAMILIES)
def test_given_normals_are_the_keys_draws(family):
    """``draw_parameters`` of the standard normal rows ``eps`` (S, P) that ``key`` draws
    makes the key's own draws, and outputs from given draws ``thetas`` equal the
    program's own (the estimators cache the draws), in the program."""
    with jax.enable_x64(True):
        cfg = _config("gaussian3", family)
        state, _, _ = _state(family, cfg.model, jnp.float64)
        x = jnp.asarray(_inputs())
        key = jax.random.PRNGKey(4)
        eps = jax.random.normal(key, (7, cfg.model.n_params()), jnp.float64)
        thetas = np.asarray(E.draw_parameters(cfg, state, None, 7, eps))
        np.testing.assert_allclose(
            thetas, np.asarray(E.draw_parameters(cfg, state, key, 7)), rtol=1e-13, atol=1e-13
        )
        run = jax.jit(E.output_samples, static_argnames=("config", "kind", "n_samples"))
        for kind in ("mc", "linmc"):
            drawn = np.asarray(run(cfg, state, x, key, kind, 7))
            given = np.asarray(run(cfg, state, x, None, kind, 7, thetas))
            np.testing.assert_allclose(given, drawn, rtol=1e-13, atol=1e-13 * np.abs(drawn).max())


def test_estimators_cache_their_draws(monkeypatch):
    """A sampled predictive through the estimator equals the engine's program on the
    parameter draws of the estimator's normals: from the draws it keeps, for one row (its
    own block) and five, again after an update (which must not reuse the previous
    belief's draws), and above ``NORMALS_MAX``, where nothing is kept and the program
    draws from the estimator's key at every call."""
    import skbong._core.posterior as post
    from skbong import BongClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] + 0.3 * rng.normal(size=60) > 0).astype(int)
    x = np.concatenate([X[:5], np.zeros((3, 4))])

    def reference(est, keyed=False):
        with jax.enable_x64(True):
            cfg, key = est._config(), est._key(2)
            state = est._state_class()(*(np.asarray(a, np.float64) for a in est._state))
            eps = np.random.default_rng([est._seed, 2]).standard_normal((50, state.mean.shape[0]))
            thetas = None if keyed else E.draw_parameters(cfg, state, None, 50, eps)
            p = np.exp(np.asarray(E.predict_log_proba(cfg, state, x, key, "mc", 50, thetas)))
        return (p / p.sum(axis=1, keepdims=True))[:5]

    one = dict(prior_variance=1.0, predictive="mc", predictive_samples=50, random_state=0)
    clf = BongClassifier(**one).fit(X[:40], y[:40])
    np.testing.assert_allclose(clf.predict_proba(X[:5]), reference(clf), rtol=1e-12)
    assert clf._draws_cache[0] is clf._state
    np.testing.assert_allclose(clf.predict_proba(X[:1]), reference(clf)[:1], rtol=1e-12)
    clf.partial_fit(X[40:], y[40:])
    np.testing.assert_allclose(clf.predict_proba(X[:5]), reference(clf), rtol=1e-12)
    monkeypatch.setattr(post, "NORMALS_MAX", 10)
    fresh = BongClassifier(**one).fit(X, y)
    assert fresh._normals(50) is None
    np.testing.assert_allclose(fresh.predict_proba(X[:5]), reference(fresh, keyed=True), rtol=1e-12)
    assert fresh._draws_cache == []


def test_bank_filters_keep_their_own_draws(monkeypatch):
    """With ``prior_variance="auto"`` each filter of the bank keeps its own parameter
    draws (the same normals through its own belief): the mixture predictive equals the
    engine's programs filter by filter, from the draws kept and again after an update;
    ``NORMALS_MAX`` bounds what is kept over all filters."""
    import scipy.special

    import skbong._core.posterior as post
    from skbong import BongClassifier

    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=80) > 0).astype(int)
    x = np.concatenate([X[:5], np.zeros((3, 4))])

    def reference(est):
        cfg, key, logps = est._config(), est._key(2), []
        with jax.enable_x64(True):
            for wt, parts, _ in est._components():
                state = est._state_class()(*(np.asarray(a, np.float64) for a in parts))
                eps = np.random.default_rng([est._seed, 2]).standard_normal((30, state.mean.shape[0]))
                thetas = E.draw_parameters(cfg, state, None, 30, eps)
                logp = np.asarray(E.predict_log_proba(cfg, state, x, key, "mc", 30, thetas))
                logps.append(logp[:5] + np.log(wt))
        return np.exp(scipy.special.logsumexp(np.array(logps), axis=0))

    clf = BongClassifier(prior_variance="auto", predictive="mc", predictive_samples=30, random_state=0)
    clf.fit(X[:60], y[:60])
    assert len(clf._components()) >= 2
    for _ in range(2):  # the draws made, then the draws kept
        np.testing.assert_allclose(clf.predict_proba(X[:5]), reference(clf), rtol=1e-10)
    assert len(clf._draws_cache[1]) == len(clf._components())
    clf.partial_fit(X[60:], y[60:])
    np.testing.assert_allclose(clf.predict_proba(X[:5]), reference(clf), rtol=1e-10)
    monkeypatch.setattr(post, "NORMALS_MAX", 30 * clf.n_params_)  # room for one filter's
    clf.partial_fit(X[:1], y[:1])
    np.testing.assert_allclose(clf.predict_proba(X[:5]), reference(clf), rtol=1e-10)
    assert len(clf._draws_cache[1]) == 1


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("case", ["gaussian", "gaussian3"])
@pytest.mark.parametrize(("dtype", "rtol"), [("float64", 1e-10), ("float32", 1e-5)])
def test_linmc_gaussian_closed_form(family, case, dtype, rtol):
    n_out = CASES[case][1]
    obs_var = 0.3 if n_out == 1 else np.array([0.3, 0.5, 0.7])
    x = _inputs()
    with jax.enable_x64(dtype == "float64"):
        cfg = _config(case, family)
        state, mean, cov = _state(family, cfg.model, dtype)
        mu, var = _predict(cfg, state, x, jax.random.PRNGKey(0), "linmc", obs_var)
    _, jac, f, _ = _reference(n_out)
    out_var = np.einsum("ncp,pq,ncq->nc", jac, cov, jac)
    assert mu.dtype == var.dtype == np.dtype(dtype) and mu.shape == var.shape == (N_ROWS, n_out)
    np.testing.assert_allclose(mu, f, rtol=0, atol=rtol * np.abs(f).max())
    np.testing.assert_allclose(var, out_var + obs_var, rtol=rtol)
    assert np.all(out_var > 0.05 * obs_var)  # the parameter uncertainty is not negligible


def _output_bound(n_out, cov):
    """Δ (n, C): a bound on |fₛ − f(μ)| over all samples (see the module docstring)."""
    mean, jac, f, hess_norm = _reference(n_out)
    out_var = np.einsum("ncp,pq,ncq->nc", jac, cov, jac)
    rho2 = np.linalg.eigvalsh(cov).max() * (np.sqrt(mean.shape[0]) + 7.0) ** 2
    return 6.5 * np.sqrt(out_var) + 0.5 * 2.0 * hess_norm * rho2, f


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("case", ["gaussian3", "bernoulli", "categorical3", "poisson"])
@pytest.mark.parametrize("scale", [1e-6, 1e-10])
def test_small_variance_limit(family, case, scale):
    x = _inputs()
    with jax.enable_x64(True):
        cfg = _config(case, family)
        state, mean, cov = _state(family, cfg.model, jnp.float64, scale)
        key = jax.random.PRNGKey(4)
        plugin = _predict(cfg, state, x, key, "plugin", 0.5)
        approx = {kind: _predict(cfg, state, x, key, kind, 0.5) for kind in ("mc", "linmc")}
    delta, f = _output_bound(cfg.model.n_outputs, cov)
    assert delta.max() < 1e-1 * np.sqrt(scale / 1e-6)  # the bound is itself small
    for kind, out in approx.items():
        if cfg.likelihood == "gaussian":
            assert np.all(np.abs(out[0] - f) <= delta), kind
            assert np.all(np.abs(out[1] - 0.5) <= delta**2), kind
            np.testing.assert_allclose(plugin[0], f, rtol=1e-12)
            np.testing.assert_allclose(plugin[1], 0.5, rtol=1e-12)
        elif cfg.likelihood == "poisson":
            dev = np.exp(f) * np.expm1(delta)
            assert np.all(np.abs(out[0] - np.exp(f)) <= dev), kind
            assert np.all(np.abs(out[1] - np.exp(f)) <= dev + dev**2), kind
        else:
            bound = 2.0 * delta.max(axis=1, keepdims=True)
            assert np.all(np.abs(out[0] - plugin[0]) <= bound), kind
        # the samples were used (Lin-MC's Gaussian mean is f(μ) itself: compare variances)
        assert any(not np.array_equal(a, b) for a, b in zip(out, plugin)), kind


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("case", ["bernoulli", "categorical3"])
@pytest.mark.parametrize(("dtype", "tol"), [("float64", 1e-12), ("float32", 1e-6)])
def test_probabilities_normalised(family, case, dtype, tol):
    n_classes = 2 if case == "bernoulli" else 3
    x = _inputs()
    with jax.enable_x64(dtype == "float64"):
        cfg = _config(case, family)
        state, _, _ = _state(family, cfg.model, dtype)
        for kind in ("plugin", "linmc", "mc"):
            (logp,) = _predict(cfg, state, x, jax.random.PRNGKey(5), kind)
            assert logp.shape == (N_ROWS, n_classes) and logp.dtype == np.dtype(dtype)
            assert np.all(logp <= tol)
            np.testing.assert_allclose(np.exp(logp).sum(axis=1), 1.0, rtol=0, atol=tol)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("kind", ["mc", "linmc"])
def test_rows_order_and_subsets(case, kind):
    x = _inputs()
    perm = np.array([3, 0, 4, 1, 2])
    subset = np.array([4, 1])
    with jax.enable_x64(True):
        cfg = _config(case, "full")
        state, _, _ = _state("full", cfg.model, jnp.float64)
        key = jax.random.PRNGKey(6)
        full = _predict(cfg, state, x, key, kind, 0.5)
        permuted = _predict(cfg, state, x[perm], key, kind, 0.5)
        part = _predict(cfg, state, x[subset], key, kind, 0.5)
    for a, b, c in zip(full, permuted, part):
        np.testing.assert_allclose(b, a[perm], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(c, a[subset], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("case", ["gaussian3", "categorical3"])
@pytest.mark.parametrize("kind", ["mc", "linmc"])
def test_same_key_same_result(family, case, kind):
    x = _inputs()
    with jax.enable_x64(True):
        cfg = _config(case, family)
        state, _, _ = _state(family, cfg.model, jnp.float64)
        first = _predict(cfg, state, x, jax.random.PRNGKey(7), kind)
        again = _predict(cfg, state, x, jax.random.PRNGKey(7), kind)
        other = _predict(cfg, state, x, jax.random.PRNGKey(8), kind)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    if case == "gaussian3" and kind == "linmc":  # the closed form uses no samples
        np.testing.assert_array_equal(first[1], other[1])
    else:
        assert not np.array_equal(first[-1], other[-1])


@pytest.mark.parametrize("family", FAMILIES)
def test_poisson_and_gaussian_moments(family):
    x = _inputs()
    key = jax.random.PRNGKey(9)
    with jax.enable_x64(True):
        for case in ("poisson", "gaussian3"):
            cfg = _config(case, family)
            state, mean, cov = _state(family, cfg.model, jnp.float64)
            plugin = _predict(cfg, state, x, key, "plugin", 0.5)
            f = _reference(cfg.model.n_outputs)[2]
            for kind in ("mc", "linmc"):
                mu, var = _predict(cfg, state, x, key, kind, 0.5)
                if case == "poisson" and kind == "linmc":
                    _, jac, f, _ = _reference(1)
                    out_var = np.einsum("ncp,pq,ncq->nc", jac, cov, jac)
                    t, w = np.polynomial.hermite.hermgauss(80)
                    fs = f[..., None] + np.sqrt(2 * out_var)[..., None] * t  # (n, 1, 80)
                    m1 = (w * np.exp(fs)).sum(-1) / np.sqrt(np.pi)
                    m2 = (w * np.exp(2 * fs)).sum(-1) / np.sqrt(np.pi)
                    np.testing.assert_allclose(mu, m1, rtol=1e-12)
                    np.testing.assert_allclose(var, m1 + m2 - m1**2, rtol=1e-12)
                    assert np.all(m1 > np.exp(f) * (1 + 0.25 * out_var))  # not the plugin
                    continue
                with jax.disable_jit():
                    samples = E.output_samples(cfg, state, jnp.asarray(x), key, kind, N_SAMPLES)
                samples = np.asarray(samples)
                if case == "poisson":
                    rate = np.exp(samples)
                    np.testing.assert_allclose(mu, rate.mean(axis=0), rtol=1e-12)
                    np.testing.assert_allclose(var, mu + rate.var(axis=0), rtol=1e-12)
                elif kind == "mc":  # (linmc Gaussian: the closed form, tested above)
                    np.testing.assert_allclose(mu, samples.mean(axis=0), rtol=1e-12)
                    np.testing.assert_allclose(var, samples.var(axis=0) + 0.5, rtol=1e-12)
            if case == "poisson":
                np.testing.assert_allclose(plugin[0], np.exp(f), rtol=1e-12)
                np.testing.assert_allclose(plugin[1], np.exp(f), rtol=1e-12)


def _delta_map(n_features):
    """D with D θ_cat = θ₁ − θ₀ in the Bernoulli layout (weights (d, C) row-major, bias)."""
    d = np.zeros((n_features + 1, 2 * (n_features + 1)))
    for j in range(n_features + 1):  # row j of W, then the bias
        d[j, 2 * j], d[j, 2 * j + 1] = -1.0, 1.0
    return d


@pytest.mark.parametrize(("dtype", "tol"), [("float64", 1e-10), ("float32", 1e-5)])
def test_categorical2_equals_bernoulli(dtype, tol):
    rng = np.random.default_rng(10)
    n_steps, batch, s = 10, 2, 0.5
    xs = rng.standard_normal((n_steps, batch, N_FEATURES))
    labels = rng.integers(0, 2, (n_steps, batch))
    ws = rng.uniform(0.5, 1.5, (n_steps, batch))
    x_test = _inputs()
    d_map = _delta_map(N_FEATURES)
    out = {}
    with jax.enable_x64(dtype == "float64"):
        for name, n_out, prior_var, ys in (
            ("cat", 2, s, np.eye(2)[labels]),
            ("bern", 1, 2 * s, labels[..., None]),
        ):
            model = E.MLP(N_FEATURES, n_out, activation="identity")
            cfg = E.Config(model, "categorical" if n_out == 2 else "bernoulli", "full")
            assert (cfg.rule, cfg.hessian) == ("bong", "lin_hess")
            mean0 = model.flat_init(jax.random.PRNGKey(0), dtype)
            hyper = E.Hyper(*(jnp.asarray(v, dtype) for v in (prior_var, 1.0, 0.1, 1.0, 0.0)))
            state = E.init_state(cfg, mean0, hyper.prior_var)
            arrays = (jnp.asarray(a, dtype) for a in (xs, ys, ws))
            state, log_lik, _, ok = E.run_stream(
                cfg, state, mean0, hyper, *arrays, 0, jax.random.PRNGKey(0)
            )
            assert np.all(np.asarray(ok))
            # compiled here: the shapes are not shared with the other tests of this module
            key = jax.random.PRNGKey(12 if n_out == 2 else 13)
            kinds = ("plugin", "linmc", "mc") if dtype == "float64" else ("plugin",)
            x = jnp.asarray(x_test, dtype)
            proba = {
                kind: np.exp(np.asarray(E.predict_log_proba(cfg, state, x, key, kind, 4000)))
                for kind in kinds
            }
            out[name] = dict(
                mean=np.asarray(state.mean, np.float64),
                cov=np.asarray(state.cov, np.float64),
                log_lik=np.asarray(log_lik, np.float64),
                proba=proba,
            )
    cat, bern = out["cat"], out["bern"]
    assert np.abs(bern["mean"]).max() > 0.1  # the stream moved the belief
    np.testing.assert_allclose(d_map @ cat["mean"], bern["mean"], rtol=0, atol=tol)
    np.testing.assert_allclose(d_map @ cat["cov"] @ d_map.T, bern["cov"], rtol=0, atol=tol)
    np.testing.assert_allclose(cat["log_lik"], bern["log_lik"], rtol=0, atol=tol)
    np.testing.assert_allclose(cat["proba"]["plugin"], bern["proba"]["plugin"], rtol=0, atol=tol)
    if dtype != "float64":
        return
    # linear model: MC and Lin-MC draw the same outputs (same key)
    for name in ("cat", "bern"):
        np.testing.assert_allclose(out[name]["proba"]["mc"], out[name]["proba"]["linmc"], atol=tol)
    # Lin-MC: equal in distribution only (independent keys), z = 6 with Var σ(Z) ≤ v / 16
    u = np.concatenate([x_test, np.ones((N_ROWS, 1))], axis=1)
    v = np.einsum("np,pq,nq->n", u, bern["cov"], u)
    bound = 6.0 * np.sqrt(2.0 * v / (16.0 * 4000))
    diff = cat["proba"]["linmc"][:, 1] - bern["proba"]["linmc"][:, 1]
    assert np.all(np.abs(diff) <= bound), (diff, bound)
    # and Lin-MC is not the plugin predictive (the posterior variance matters here)
    assert np.abs(cat["proba"]["linmc"] - cat["proba"]["plugin"]).max() > 1e-2
