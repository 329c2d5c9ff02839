"""Conjugate exactness of BONG (Proposition 4.1 of Jones, Chang & Murphy 2024).

For a linear model with Gaussian noise and a Gaussian prior, one natural-gradient step at unit
rate on the expected log-likelihood (BONG) with the linearised Hessian (LIN-HESS, exact for a
linear model) is Bayes' rule. Hence ``rule="bong", hessian="lin_hess"`` with the ``full``
family, and with the ``dlr`` family at rank R ≥ P (the SVD projection then drops only singular
values that are zero in exact arithmetic), must reproduce

* static model: the closed-form Bayesian linear-regression posterior
  Λ = I/s + Σₙ wₙ Jₙᵀ R⁻¹ Jₙ, μ = Λ⁻¹ Σₙ wₙ Jₙᵀ R⁻¹ yₙ (prior N(0, s I)), whatever the
  order of the rows, for multi-output targets (C = 2, R = r I or diag(r₁, r₂)), mini-batches of
  b = 3 rows (the last one padded with zero-weight rows holding arbitrary x, y), and sample
  weights (wₙ multiplies the row's log-likelihood, i.e. noise variance r / wₙ: checked against
  both the weighted closed form and a Kalman filter with noise R / wₙ);
* dynamic model (``dynamic=True``, drift γ < 1, process noise q ≥ 0): the Kalman filter with
  Ornstein–Uhlenbeck dynamics toward the prior N(μ₀, s I), μ' = γμ + (1 − γ)μ₀,
  Σ' = γ²Σ + (1 − γ²) s I + q I, followed by the standard KF update (the DLR predict step is
  exact by Woodbury, whatever R).

The diagonal family (VD-EKF) is exact only when the true posterior stays diagonal. Two such
cases are tested: a model with a single parameter (P = 1), and the two-output model
f_c = x w_c without intercept (d = 1, C = 2, P = 2), whose Fisher Σₙ wₙ Jₙᵀ R⁻¹ Jₙ is diagonal
for a diagonal R, so that every posterior and every OU predict step stays diagonal.

All references are computed in numpy float64 (``tests/_reference.py``) and compared with the
norm-wise relative error max|Δ| / max|ref| of the mean and the covariance.

Tolerances
----------
* float64: 1e-10. The computations are backward stable (Cholesky, Woodbury, SVD) on
  well-conditioned matrices (κ(Λ) ≤ 10, asserted), so the forward error of each step is
  ~κ ε₆₄ ≈ 2e-15 and T ≤ 10 steps give ≲ 1e-13; 1e-10 leaves three decades of margin while
  still catching any algebraic error (those are O(1) or at least O(1/T)).
* float32: 1e-5, compared with the *float64* closed form. ε₃₂ = 1.2e-7; each step's relative
  forward error is ≲ c κ ε₃₂ with κ ≤ 10 and c a small constant, and T ≤ 10 steps accumulate at
  most linearly: T κ ε₃₂ ≈ 1.2e-5 in the worst case, ~√T κ ε₃₂ ≈ 4e-6 typically; the inputs
  themselves are rounded to float32 (relative perturbation ε₃₂, amplified by κ). The
  condition number bound is asserted on the data so the tolerance stays justified.
"""

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skbong import engine as E

try:  # tests/ as a package or as a plain directory on sys.path
    from . import _reference as ref
except ImportError:
    import _reference as ref

TOL = {"float64": 1e-10, "float32": 1e-5}
MAX_COND = 10.0


def _ctx(dtype):
    return jax.enable_x64(True) if dtype == "float64" else contextlib.nullcontext()


def _batches(x, y, w, b, seed=123):
    """(T, b, ·) arrays; the last batch padded with zero-weight rows of arbitrary data."""
    n, d = x.shape
    t = -(-n // b)
    pad = t * b - n
    rng = np.random.default_rng(seed)
    xp = np.concatenate([x, 3.0 * rng.normal(size=(pad, d))])
    yp = np.concatenate([y, 3.0 * rng.normal(size=(pad, y.shape[1]))])
    wp = np.concatenate([w, np.zeros(pad)])
    return xp.reshape(t, b, d), yp.reshape(t, b, -1), wp.reshape(t, b)


def _stream(cfg, dtype, xs, ys, ws, prior_var, obs_var, drift=1.0, noise=0.0, mean0=None):
    """Run ``E.run_stream`` from the prior; return (mean, cov) as float64 numpy arrays."""
    dt = jnp.dtype(dtype)
    p = cfg.model.n_params()
    with _ctx(dtype):
        m0 = jnp.asarray(np.zeros(p) if mean0 is None else mean0, dt)
        state = E.init_state(cfg, m0, jnp.asarray(prior_var, dt))
        hyper = E.Hyper(
            jnp.asarray(prior_var, dt),
            jnp.asarray(obs_var, dt),
            jnp.asarray(1.0, dt),
            jnp.asarray(drift, dt),
            jnp.asarray(noise, dt),
        )
        state, _, _, ok = E.run_stream(
            cfg,
            state,
            m0,
            hyper,
            jnp.asarray(xs, dt),
            jnp.asarray(ys, dt),
            jnp.asarray(ws, dt),
            0,
            jax.random.PRNGKey(0),
        )
        assert bool(jnp.all(ok))
        mean = np.asarray(state.mean, np.float64)
        if cfg.family == "dlr":
            cov = ref.dlr_dense_cov(
                np.asarray(state.prec_diag, np.float64), np.asarray(state.prec_lr, np.float64)
            )
        elif cfg.family == "diag":
            cov = np.diag(np.asarray(state.cov, np.float64))
        else:
            cov = np.asarray(state.cov, np.float64)
    return mean, cov


def _config(d, c, family, extra_rank=0, dynamic=False, fit_intercept=True):
    model = E.MLP(d, c, hidden=(), activation="identity", fit_intercept=fit_intercept)
    rank = model.n_params() + extra_rank
    return E.Config(
        model,
        "gaussian",
        family,
        rank,
        "bong",
        "lin_hess",
        n_iter=1,
        mc_samples=1,
        dynamic=dynamic,
    )


def _data(n, d, c, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = x @ rng.normal(size=(d, c)) + 0.3 + 0.5 * rng.normal(size=(n, c))
    return x, y


def _check(mean, cov, ref_mean, ref_cov, dtype, prec_cond):
    assert prec_cond <= MAX_COND  # keeps the float32 tolerance justified
    err = max(ref.rel_err(mean, ref_mean), ref.rel_err(cov, ref_cov))
    print(f"{dtype} rel err {err:.2e} (cond {prec_cond:.1f})")
    assert err <= TOL[dtype], err
    return err


FAMILIES = [
    pytest.param("full", 0, "float64", id="full-f64"),
    pytest.param("dlr", 0, "float64", id="dlr_R=P-f64"),
    pytest.param("dlr", 3, "float64", id="dlr_R=P+3-f64"),
    pytest.param("full", 0, "float32", id="full-f32"),
    pytest.param("dlr", 0, "float32", id="dlr_R=P-f32"),
]


@pytest.mark.parametrize("family, extra_rank, dtype", FAMILIES)
def test_static_any_order_and_weights(family, extra_rank, dtype):
    """C = 1, one row per step: three row orders, unit and random sample weights."""
    n, d, s, r = 10, 3, 1.0, 1.0
    x, y = _data(n, d, 1, seed=0)
    cfg = _config(d, 1, family, extra_rank)
    jac = ref.linear_jacobian(x, 1)
    rng = np.random.default_rng(1)
    orders = [np.arange(n), np.arange(n)[::-1], rng.permutation(n)]
    for w in (np.ones(n), rng.uniform(0.2, 3.0, size=n)):
        ref_mean, ref_cov = ref.blr_posterior(jac, y, w, s, r)
        cond = np.linalg.cond(np.linalg.inv(ref_cov))
        # weight w ⇔ noise variance r / w: the Kalman filter with R / w agrees.
        kf_mean, kf_cov = ref.kalman_ou(
            jac[:, None], y[:, None], w[:, None], s, r, 1.0, 0.0, np.zeros(jac.shape[-1])
        )
        assert ref.rel_err(kf_mean, ref_mean) < 1e-12
        assert ref.rel_err(kf_cov, ref_cov) < 1e-12
        for perm in orders:
            xs, ys, ws = _batches(x[perm], y[perm], w[perm], 1)
            mean, cov = _stream(cfg, dtype, xs, ys, ws, s, r)
            _check(mean, cov, ref_mean, ref_cov, dtype, cond)


MULTI = [
    pytest.param("full", "float64", "scalar", id="full-f64-scalar_r"),
    pytest.param("dlr", "float64", "scalar", id="dlr-f64-scalar_r"),
    pytest.param("full", "float64", "vector", id="full-f64-vector_r"),
    pytest.param("dlr", "float64", "vector", id="dlr-f64-vector_r"),
    pytest.param("full", "float32", "vector", id="full-f32-vector_r"),
    pytest.param("dlr", "float32", "vector", id="dlr-f32-vector_r"),
]


@pytest.mark.parametrize("family, dtype, obs_kind", MULTI)
def test_multi_output_minibatch(family, dtype, obs_kind):
    """C = 2, b = 3 rows per step (last batch padded), sample weights, two row orders."""
    n, d, c, s = 10, 2, 2, 1.5
    obs_var = 1.0 if obs_kind == "scalar" else np.array([0.8, 1.6])
    x, y = _data(n, d, c, seed=2)
    rng = np.random.default_rng(3)
    w = rng.uniform(0.3, 2.0, size=n)
    cfg = _config(d, c, family)
    jac = ref.linear_jacobian(x, c)
    ref_mean, ref_cov = ref.blr_posterior(jac, y, w, s, obs_var)
    cond = np.linalg.cond(np.linalg.inv(ref_cov))
    for perm in (np.arange(n), rng.permutation(n)):
        xs, ys, ws = _batches(x[perm], y[perm], w[perm], 3)
        assert ws.shape == (4, 3) and np.sum(ws[-1] == 0) == 2
        mean, cov = _stream(cfg, dtype, xs, ys, ws, s, obs_var)
        _check(mean, cov, ref_mean, ref_cov, dtype, cond)


DYNAMIC = [
    pytest.param("full", "float64", id="full-f64"),
    pytest.param("dlr", "float64", id="dlr-f64"),
    pytest.param("full", "float32", id="full-f32"),
    pytest.param("dlr", "float32", id="dlr-f32"),
]


@pytest.mark.parametrize("family, dtype", DYNAMIC)
def test_dynamic_equals_ou_kalman_filter(family, dtype):
    """Drift γ < 1 and process noise q ≥ 0: the Kalman filter with OU dynamics."""
    n, d, c, s, b = 9, 2, 2, 1.2, 2
    obs_var = np.array([0.5, 0.9])
    x, y = _data(n, d, c, seed=4)
    rng = np.random.default_rng(5)
    w = rng.uniform(0.5, 2.0, size=n)
    cfg = _config(d, c, family, dynamic=True)
    p = cfg.model.n_params()
    mean0 = 0.5 * rng.normal(size=p)
    xs, ys, ws = _batches(x, y, w, b)
    jac = ref.linear_jacobian(xs.reshape(-1, d), c).reshape(xs.shape[0], b, c, p)
    for drift, noise in ((0.9, 0.0), (0.8, 0.05)):
        ref_mean, ref_cov = ref.kalman_ou(jac, ys, ws, s, obs_var, drift, noise, mean0)
        cond = np.linalg.cond(np.linalg.inv(ref_cov))
        mean, cov = _stream(cfg, dtype, xs, ys, ws, s, obs_var, drift, noise, mean0)
        _check(mean, cov, ref_mean, ref_cov, dtype, cond)


DIAG = [
    pytest.param(1, False, "float64", id="P=1-static-f64"),
    pytest.param(2, True, "float64", id="P=2-dynamic-f64"),
    pytest.param(1, False, "float32", id="P=1-static-f32"),
    pytest.param(2, True, "float32", id="P=2-dynamic-f32"),
]


@pytest.mark.parametrize("c, dynamic, dtype", DIAG)
def test_diag_exact_when_posterior_is_diagonal(c, dynamic, dtype):
    """VD-EKF equals the exact Kalman filter when the exact posterior stays diagonal:
    one parameter (f = x w), or f_c = x w_c with a diagonal R (independent outputs)."""
    n, s, b = 7, 2.0, 2
    obs_var = 0.6 if c == 1 else np.array([0.5, 1.4])
    drift, noise = (0.85, 0.03) if dynamic else (1.0, 0.0)
    rng = np.random.default_rng(6)
    x = rng.normal(size=(n, 1))
    y = x * rng.normal(size=(1, c)) + 0.3 * rng.normal(size=(n, c))
    w = rng.uniform(0.5, 2.0, size=n)
    cfg = _config(1, c, "diag", dynamic=dynamic, fit_intercept=False)
    assert cfg.model.n_params() == c
    mean0 = rng.normal(size=c) if dynamic else np.zeros(c)
    xs, ys, ws = _batches(x, y, w, b)
    jac = ref.linear_jacobian(xs.reshape(-1, 1), c, fit_intercept=False)
    jac = jac.reshape(xs.shape[0], b, c, c)
    ref_mean, ref_cov = ref.kalman_ou(jac, ys, ws, s, obs_var, drift, noise, mean0)
    assert np.allclose(ref_cov, np.diag(np.diag(ref_cov)), rtol=0, atol=1e-15)
    mean, cov = _stream(cfg, dtype, xs, ys, ws, s, obs_var, drift, noise, mean0)
    cond = np.linalg.cond(np.linalg.inv(ref_cov))
    _check(mean, cov, ref_mean, ref_cov, dtype, cond)
