"""Monte Carlo estimators against their exact expectations on a linear-Gaussian model.

Setting
-------
Linear regression with C = 2 outputs (``MLP(3, 2, hidden=())``, P = 8), a mini-batch of
b = 5 rows with weights w and a diagonal noise covariance R. With Jᵢ = ∂f(xᵢ)/∂θ,
A = Σᵢ wᵢ Jᵢᵀ R⁻¹ Jᵢ (full rank: b ≥ d + 1) and c = Σᵢ wᵢ Jᵢᵀ R⁻¹ yᵢ, the per-sample gradient
is gₘ = c − A θₘ and the Hessian is the constant −A. For θ ~ N(μ, Σ):

* gₘ ~ N(g, K) exactly, with g = c − A μ (= LIN-HESS's g) and K = A Σ A;
* E[gₘ gₘᵀ] = g gᵀ + K, and by Isserlis' theorem
  Var(gⱼ gₖ) = gⱼ² Kₖₖ + gₖ² Kⱼⱼ + 2 gⱼ gₖ Kⱼₖ + Kⱼⱼ Kₖₖ + Kⱼₖ².

J is computed with ``jax.jacfwd``; Σ is built densely from each family's state (full, diag,
DLR; the moment families share these samplers and estimators), so the bounds also test
each family's sampler. Each estimator runs for 32 independent keys per M (vmapped, one
compiled program per M).

Tests and tolerances
--------------------
* ``test_mc_ef[family]`` (full, diag, DLR), M ∈ (10, 100, 1000):

  - given its samples θₘ = ``family.sample(state, key, M)`` (the documented key use),
    MC-EF returns g = c − A mean(θₘ) and B = [g₁ … g_M] / √M: an exact identity, float64
    rounding (rtol 1e-10);
  - gradient: |ḡ − g| ≤ 6 √(diag K / M) entrywise (ḡ − g is exactly Gaussian; z = 6,
    two-sided 2e-9 per entry); the Mahalanobis sum Σ M (ḡ − g)ᵀ K⁻¹ (ḡ − g) over the 32
    keys is χ²(32 P), asserted inside its [1e-9, 1 − 1e-9] quantiles (this checks the 1/M
    rate and the sampler's covariance exactly); and the root-mean-square error over the
    keys decreases from each M to the next (its square has at least 32 degrees of freedom
    whatever K, so missing the expected factor 10 entirely has probability below the
    F(32, 32) tail at 10, about 2e-9);
  - curvature: G = −(1/M) Σ gₘ gₘᵀ approaches −(g gᵀ + K), M ∈ (100, 1000), entrywise
    z = 6 bound with the Isserlis variance above (means of M i.i.d. products of
    Gaussians: the normal approximation is used from M = 100 on); the bound shrinks as
    1/√M.

* ``test_mc_hess[family]`` (full, diag): the same gradient checks (full family; the
  sampling-gradient code is MC-EF's), and for this model MC-HESS's G equals LIN-HESS's
  −B Bᵀ and −A whatever the samples (every key and M), dense for the full family and the
  diagonal for the diagonal one; LIN-HESS's g is c − A μ.
  Tolerance atol 1e-10 · max|A| in float64 (sums of a few products, and a mean of M equal
  Hessians); ``test_mc_hess_float32`` repeats the identities in float32 with 1e-5 · max|A|.
* ``test_hutchinson_diag_unbiased``: with ``EXACT_DIAG_MAX`` patched to 0, MC-HESS on the
  diagonal family uses one Rademacher probe z per sample, zⱼ (H z)ⱼ = Hⱼⱼ + Σₖ≠ⱼ Hⱼₖ zⱼ zₖ,
  whose noise terms are uncorrelated with variance Σₖ≠ⱼ Hⱼₖ² and bounded by Σₖ≠ⱼ |Hⱼₖ|.
  With M = 1000 probes the result differs from diag(H) far above rounding but within that
  bound (the probe path really ran), lies within 6 √(Σₖ≠ⱼ Hⱼₖ² / M) of diag(H) for every
  key, and pooled over the 32 keys within 6 √(Σₖ≠ⱼ Hⱼₖ² / 32 M).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from skbong import engine as E
from skbong.engine.filter import curvature
from skbong.engine.filter.curvature import ESTIMATORS

D, C, B, RANK = 3, 2, 5, 2
N_KEYS = 32
Z = 6.0
TAIL = 1e-9
MS = (10, 100, 1000)


WEIGHTS = np.array([1.0, 0.5, 2.0, 1.0, 0.7])
W_BAR = WEIGHTS.mean()
"""Row weights of the problem, and their mean: a weight counts as repeated rows, so the
EF factor is divided by √w̄ (``skbong.engine.filter.curvature._weight_scale``)."""


def _problem(dtype):
    """Model, data, a dense reference (A, c) and a random mean μ."""
    rng = np.random.default_rng(0)
    model = E.MLP(D, C, hidden=(), activation="identity")
    p = model.n_params()
    x = rng.standard_normal((B, D))
    y = rng.standard_normal((B, C))
    w = WEIGHTS
    obs_var = np.array([0.5, 2.0])
    mean = rng.standard_normal(p)
    with jax.enable_x64(True):
        jac = np.asarray(
            jax.jacfwd(lambda th: model.apply(th, jnp.asarray(x)))(jnp.zeros(p))
        )  # (b, C, P)
    a = np.einsum("icp,i,c,icq->pq", jac, w, 1.0 / obs_var, jac)
    c = np.einsum("icp,i,c,ic->p", jac, w, 1.0 / obs_var, y)
    arrays = {k: jnp.asarray(v, dtype) for k, v in dict(x=x, y=y, w=w, obs_var=obs_var).items()}
    return model, arrays, a, c, mean


def _state(family, mean, dtype):
    """A non-trivial state of ``family`` and its dense covariance (float64 numpy)."""
    rng = np.random.default_rng(1)
    p = mean.shape[0]
    if family in ("full", "full_moment"):
        root = rng.standard_normal((p, p))
        cov = root @ root.T / p + 0.1 * np.eye(p)
        return E.MeanCov(jnp.asarray(mean, dtype), jnp.asarray(cov, dtype)), cov
    if family in ("diag", "diag_moment"):
        var = rng.uniform(0.2, 1.0, p)
        return E.MeanCov(jnp.asarray(mean, dtype), jnp.asarray(var, dtype)), np.diag(var)
    prec_diag = rng.uniform(1.0, 3.0, p)
    prec_lr = rng.standard_normal((p, RANK))
    cov = np.linalg.inv(np.diag(prec_diag) + prec_lr @ prec_lr.T)
    state = E.DLRState(
        jnp.asarray(mean, dtype), jnp.asarray(prec_diag, dtype), jnp.asarray(prec_lr, dtype)
    )
    return state, cov


def _config(model, family, name, m):
    return E.Config(model, "gaussian", family, rank=RANK, hessian=name, mc_samples=m)


def _keys(seed):
    return jax.random.split(jax.random.PRNGKey(seed), N_KEYS)


def _estimate_all(cfgs, name, state, arrays, keys):
    """``name`` for each config, vmapped over that config's keys: [(g, factor or hess)]."""
    out = []
    for cfg, ks in zip(cfgs, keys):
        fam = E.FAMILIES[cfg.family]

        def one(key, cfg=cfg, fam=fam):
            g, curv = ESTIMATORS[name](
                cfg, fam, state, arrays["x"], arrays["y"], arrays["w"], arrays["obs_var"], key
            )
            return g, curv.factor if curv.factor is not None else curv.hess

        out.append(jax.vmap(one)(ks))
    return out


_estimate_jit = jax.jit(_estimate_all, static_argnums=(0, 1))


def _run(family, name, ms, dtype="float64"):
    """Estimates for every M of ``ms``, 32 keys each."""
    with jax.enable_x64(dtype == "float64"):
        model, arrays, _, _, mean = _problem(dtype)
        state, _ = _state(family, mean, dtype)
        keys = tuple(_keys(100 + i) for i in range(len(ms)))
        out = {}
        for m, ks in zip(ms, keys):  # one small program per M compiles faster than one big
            [(g, h)] = _estimate_jit((_config(model, family, name, m),), name, state, arrays, (ks,))
            out[m] = (np.asarray(g), np.asarray(h))
        return out, keys


def _reference(family):
    """A, c, μ and the dense Σ of ``family``'s state (float64 numpy)."""
    with jax.enable_x64(True):
        _, _, a, c, mean = _problem(jnp.float64)
        state, cov = _state(family, mean, jnp.float64)
    return a, c, mean, state, cov


def _check_given_samples(family, runs, keys):
    """g = c − A mean(θₘ) and B = [gₘ] / √M for θₘ = family.sample(state, key, M)."""
    a, c, _, state, _ = _reference(family)
    m = min(runs)
    g, factor = runs[m]
    assert g.shape == (N_KEYS, a.shape[0]) and factor.shape == (N_KEYS, a.shape[0], m)
    for i in (0, N_KEYS - 1):
        with jax.enable_x64(True):
            thetas = np.asarray(E.FAMILIES[family].sample(state, keys[0][i], m))
        grads = c[None, :] - thetas @ a  # A is symmetric
        np.testing.assert_allclose(g[i], grads.mean(axis=0), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(
            factor[i], grads.T / np.sqrt(m * W_BAR), rtol=1e-10, atol=1e-12
        )


def _check_gradient(family, runs):
    """z = 6 bounds, χ² calibration and decreasing error of ḡ around LIN-HESS's g."""
    a, c, mean, _, cov = _reference(family)
    g_lin = c - a @ mean  # LIN-HESS's g (checked in _check_hessian)
    k_cov = a @ cov @ a
    k_inv = np.linalg.inv(k_cov)
    lo, hi = stats.chi2.ppf([TAIL, 1.0 - TAIL], N_KEYS * mean.shape[0])
    rms = []
    for m in MS:
        err = runs[m][0] - g_lin  # (keys, P)
        bound = Z * np.sqrt(np.diag(k_cov) / m)
        assert np.all(np.abs(err) <= bound), (m, np.abs(err / bound).max())
        mahalanobis = m * np.einsum("kp,pq,kq->", err, k_inv, err)
        assert lo <= mahalanobis <= hi, (m, mahalanobis, lo, hi)
        rms.append(np.sqrt(np.mean(err**2)))
    assert rms[0] > rms[1] > rms[2], rms


def _check_ef_curvature(family, runs):
    """w̄ times the factor's −B Bᵀ (its −(1/M) Σ gₘ gₘᵀ) within z = 6 Isserlis bounds of
    −(g gᵀ + A Σ A)."""
    a, c, mean, _, cov = _reference(family)
    g = c - a @ mean
    k_cov = a @ cov @ a
    expected = -(np.outer(g, g) + k_cov)
    kd = np.diag(k_cov)
    var = (
        np.outer(g**2, kd)
        + np.outer(kd, g**2)
        + 2 * np.outer(g, g) * k_cov
        + np.outer(kd, kd)
        + k_cov**2
    )
    for m in (100, 1000):
        factor = runs[m][1]
        assert factor.shape == (N_KEYS, mean.shape[0], m)
        err = -W_BAR * np.einsum("kpm,kqm->kpq", factor, factor) - expected
        bound = Z * np.sqrt(var / m)
        assert np.all(np.abs(err) <= bound), (m, np.abs(err / bound).max())


def _check_hessian(family, runs, dtype, tol):
    """LIN-HESS's g = c − A μ and −B Bᵀ = −A; MC-HESS's G = −A for every key and M."""
    a, c, mean, _, _ = _reference(family)
    with jax.enable_x64(dtype == "float64"):
        model, arrays, _, _, _ = _problem(dtype)
        state, _ = _state(family, mean, dtype)
        cfg = _config(model, family, "lin_hess", 1)
        [(g, factor)] = _estimate_jit((cfg,), "lin_hess", state, arrays, (_keys(0)[:1],))
    g_ref = c - a @ mean
    np.testing.assert_allclose(g[0], g_ref, rtol=0, atol=tol * np.abs(g_ref).max())
    factor = np.asarray(factor[0], np.float64)
    assert factor.shape == (mean.shape[0], B * C)
    lin = -factor @ factor.T
    scale = np.abs(a).max()
    if family == "diag":
        lin, a = np.diag(lin), np.diag(a)
    np.testing.assert_allclose(lin, -a, rtol=0, atol=tol * scale)
    for hess in (h for _, h in runs.values()):
        assert hess.dtype == np.dtype(dtype) and hess.shape == (N_KEYS, *lin.shape)
        np.testing.assert_allclose(hess, np.broadcast_to(lin, hess.shape), rtol=0, atol=tol * scale)


@pytest.mark.parametrize("family", ["full", "diag", "dlr"])
def test_mc_ef(family):
    runs, keys = _run(family, "mc_ef", MS)
    _check_given_samples(family, runs, keys)
    _check_gradient(family, runs)
    _check_ef_curvature(family, runs)


@pytest.mark.parametrize("family", ["full", "diag"])
def test_mc_hess(family):
    # the gradient path (_sample_grads) is MC-EF's: its convergence once, for the full family
    runs, _ = _run(family, "mc_hess", MS if family == "full" else MS[:1])
    if family == "full":
        _check_gradient(family, runs)
    _check_hessian(family, runs, "float64", 1e-10)


@pytest.mark.parametrize("family", ["full", "diag"])
def test_mc_hess_float32(family):
    runs, _ = _run(family, "mc_hess", (10,), "float32")
    _check_hessian(family, runs, "float32", 1e-5)


def test_hutchinson_diag_unbiased(monkeypatch):
    monkeypatch.setattr(curvature, "EXACT_DIAG_MAX", 0)
    # a new function, hence a fresh trace: jit caches traces per underlying function, and
    # a program traced before the patch would keep the exact path
    estimate = jax.jit(lambda *args: _estimate_all(*args), static_argnums=(0, 1))
    m = 1000
    with jax.enable_x64(True):
        model, arrays, a, _, mean = _problem(jnp.float64)
        state, _ = _state("diag", mean, jnp.float64)
        cfg = _config(model, "diag", "mc_hess", m)
        [(_, hess)] = estimate((cfg,), "mc_hess", state, arrays, (_keys(7),))
    hess = np.asarray(hess)
    assert hess.shape == (N_KEYS, mean.shape[0])
    exact = -np.diag(a)
    off = a - np.diag(np.diag(a))
    noise_sd = np.sqrt(np.sum(off**2, axis=1))  # sd of one probe's error, per entry
    assert np.all(noise_sd > 0.1 * np.abs(exact))  # the probe noise is not negligible
    err = np.abs(hess - exact)
    # the probe path ran: the error is far above rounding (its sd is ≥ 3e-3 |Hⱼⱼ| here),
    # and each probe's error Σₖ≠ⱼ Hⱼₖ zⱼ zₖ is bounded by Σₖ≠ⱼ |Hⱼₖ|, hence so is the mean
    assert err.max() > 1e-6 * np.abs(exact).max()
    assert np.all(err <= np.sum(np.abs(off), axis=1) * (1 + 1e-10))
    # unbiased: M probes per key, then all 32 M probes together
    assert np.all(err <= Z * noise_sd / np.sqrt(m))
    pooled = hess.mean(axis=0)
    assert np.all(np.abs(pooled - exact) <= Z * noise_sd / np.sqrt(N_KEYS * m))
