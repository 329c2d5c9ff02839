"""Exact identities between rules, families and the predict step (:doc:`algorithms`; Jones,
Chang & Murphy 2024, appendix E, eqs. 98–99).

What is tested
--------------
* ``test_blr_one_unit_step_is_bong``: BLR with ``n_iter=1`` and α = 1 equals BONG, for every
  family and estimator (same key: both take their only step with ``fold_in(key, 0)`` at the
  predicted state). The KL gradient vanishes at the prior, and with α = 1 the natural step
  Λ' = (1−α)Λ + αΛ₀ − αG is BONG's Λ − G. The two take different code paths (the KL-augmented
  dense inverse versus Woodbury for the full family; [0·W, W, B] versus [W, B] for DLR), so
  the DLR comparison is on Υ and W Wᵀ (the SVD factor W itself is defined up to rotation).
* ``test_bbb_one_step_is_bog``: BBB with ``n_iter=1`` equals BOG at the same α = 0.3 (the
  KL gradient vanishes at the prior: g̃ = g and G̃ = G − Λ₀ + Λ = G).
* ``test_dlr_full_rank_is_full``: DLR with R ≥ P (R = P and R = P + 2, the padding path)
  equals the full natural family for BONG and BLR (``n_iter=2``) over a 3-step
  ``E.run_stream`` with LIN-HESS and LIN-EF, with and without a dynamic predict step
  (γ = 0.9, q = 0.01: the LO-FI predict is exact for an isotropic prior covariance, by
  Woodbury). Nothing is truncated: the widened factor has at most P ≤ R directions.
* ``test_dlr_full_rank_is_full_mc``: the same identity for MC-EF, restricted to one step
  (BONG, and BLR with ``n_iter=1``) from a *diagonal* belief (W = 0, Σ = diag(1/Υ)). Identical
  keys give identical standard-normal draws ε in both families, but θ = μ + A ε uses a
  different square root A of Σ: the Cholesky factor for ``full`` and Υ^{-1/2}(I + Υ^{-1/2}W
  WᵀΥ^{-1/2})^{-1/2} for ``dlr``. The two roots coincide only when Σ is diagonal, which after
  one update it no longer is (nor is the second inner iterate of BLR), so beyond one step the
  families agree in distribution only and an exact test would be false.
* ``test_static_predict_is_identity``: with γ = 1, q = 0, ``fam.predict`` returns the state
  unchanged — bitwise for the full and diagonal families, to rounding for DLR (Υ' = 1/(1/Υ)).
* ``test_dynamic_static_stream_agree``: ``run_stream`` with ``dynamic=False`` and with
  ``dynamic=True`` at γ = 1, q = 0 give the same result: bitwise for full / diagonal under
  eager execution (the predicted state is bitwise the input), to rounding for DLR.

Tolerances
----------
float64 throughout. The identities are exact in real arithmetic; the two sides differ by
rounding along different code paths (a dense SPD inverse versus Woodbury; G − Λ₀ + Λ with
Λ₀ = Λ computed twice; the rank projection of differently padded factors). With covariance condition
numbers ≲ 1e2 and a few steps, the accumulated relative difference is ≲ 1e2 · 1e2 ·
2.2e-16 ≈ 1e-12, so ``RTOL = 1e-10`` (relative to the largest entry) is a bound with two
orders of margin (measured: ≤ 1.2e-15). All sweeps run eagerly under ``jax.disable_jit()``
(cheaper than compiling each configuration for these tiny models).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _oracle import rel_err
from test_oracle import FAMS, HESS, LIKS, RANK, M, dense, make_state, problem

from skbong import engine as E

RTOL = 1e-10
COMBOS = [(f, h) for f in FAMS for h in HESS if not (f == "dlr" and h == "mc_hess")]


def _hyper(obs_var, alpha=0.3, drift=1.0, noise=0.0, prior_var=1.0):
    a = jnp.asarray
    return E.Hyper(a(prior_var), obs_var, a(alpha), a(drift), a(noise))


def _assert_same_belief(family, a, b, rtol=RTOL):
    """Same Gaussian: mean and covariance; for DLR also Υ and W Wᵀ separately.

    Where the covariance comes out of an inverse (natural families, DLR), it must be SPD
    so that the comparison is not between near-singular inverses. The moment families
    store Σ itself (no inverse is taken), and a plain-gradient step at α = 0.3 may leave
    the SPD cone without affecting the identity.
    """
    (mean_a, cov_a), (mean_b, cov_b) = dense(family, a), dense(family, b)
    assert np.all(np.isfinite(cov_a))
    if family not in ("full_moment", "diag_moment"):
        assert np.all(np.linalg.eigvalsh(np.asarray(cov_a)) > 0)
    errs = [rel_err(mean_a, mean_b), rel_err(cov_a, cov_b)]
    if family == "dlr":
        errs.append(rel_err(a.prec_diag, b.prec_diag))
        errs.append(rel_err(a.prec_lr @ a.prec_lr.T, b.prec_lr @ b.prec_lr.T))
    assert max(errs) < rtol, errs
    return max(errs)


def _lik_for(family, hessian):
    return LIKS[(FAMS.index(family) + HESS.index(hessian)) % 4]


def _one_update(family, hessian, rule, alpha, seed):
    likelihood = _lik_for(family, hessian)
    model, x, y, w, obs_var = problem(likelihood, seed=seed)
    rng = np.random.default_rng(seed)
    state, _, _ = make_state(family, model.n_params(), rng, RANK, RANK)
    cfg = E.Config(model, likelihood, family, RANK, rule, hessian, n_iter=1, mc_samples=M)
    key = jax.random.PRNGKey(seed)
    return E.update(cfg, state, x, y, w, _hyper(obs_var, alpha), key)


# ----------------------------------------------------------------------------------
# Invariant 2: one-step BLR / BBB are BONG / BOG
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("family,hessian", COMBOS)
def test_blr_one_unit_step_is_bong(family, hessian):
    with jax.enable_x64(True), jax.disable_jit():
        blr = _one_update(family, hessian, "blr", 1.0, seed=11)
        bong = _one_update(family, hessian, "bong", 1.0, seed=11)
        _assert_same_belief(family, blr, bong)


@pytest.mark.parametrize("family,hessian", COMBOS)
def test_bbb_one_step_is_bog(family, hessian):
    with jax.enable_x64(True), jax.disable_jit():
        bbb = _one_update(family, hessian, "bbb", 0.3, seed=12)
        bog = _one_update(family, hessian, "bog", 0.3, seed=12)
        _assert_same_belief(family, bbb, bog)


# ----------------------------------------------------------------------------------
# Invariant 3: DLR with R ≥ P is the full natural family
# ----------------------------------------------------------------------------------


def _stream(likelihood, steps, seed):
    """(model, xs, ys, ws, obs_var) with ``steps`` mini-batches."""
    batches = [problem(likelihood, seed=seed + t) for t in range(steps)]
    model, obs_var = batches[0][0], batches[0][4]
    xs, ys, ws = (jnp.stack([b[i] for b in batches]) for i in (1, 2, 3))
    return model, xs, ys, ws, obs_var


def _run(cfg, state, mean0, hyper, data, key):
    _, xs, ys, ws, _ = data
    new, _, _, ok = E.run_stream(cfg, state, mean0, hyper, xs, ys, ws, 0, key)
    assert bool(jnp.all(ok))
    return new


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize(
    "rule,hessian,likelihood,extra_rank",
    [
        ("bong", "lin_hess", "bernoulli", 0),
        ("bong", "lin_ef", "poisson", 2),
        ("blr", "lin_hess", "categorical", 2),
        ("blr", "lin_ef", "gaussian", 0),
    ],
)
def test_dlr_full_rank_is_full(rule, hessian, likelihood, extra_rank, dynamic):
    with jax.enable_x64(True), jax.disable_jit():
        data = _stream(likelihood, 3, seed=20)
        model, obs_var = data[0], data[4]
        p = model.n_params()
        mean0 = 0.3 * jnp.asarray(np.random.default_rng(0).standard_normal(p))
        drift, noise = (0.9, 0.01) if dynamic else (1.0, 0.0)
        hyper = _hyper(obs_var, 0.5, drift, noise, prior_var=0.5)
        out = {}
        for family, rank in (("full", p), ("dlr", p + extra_rank)):
            cfg = E.Config(model, likelihood, family, rank, rule, hessian, 2, M, dynamic)
            state = E.init_state(cfg, mean0, hyper.prior_var)
            out[family] = _run(cfg, state, mean0, hyper, data, jax.random.PRNGKey(3))
        mean_d, cov_d = dense("dlr", out["dlr"])
        assert rel_err(mean_d, out["full"].mean) < RTOL
        assert rel_err(cov_d, out["full"].cov) < RTOL
        assert out["dlr"].prec_lr.shape == (p, p + extra_rank)


@pytest.mark.parametrize("rule", ["bong", "blr"])
@pytest.mark.parametrize("likelihood", LIKS)
def test_dlr_full_rank_is_full_mc(rule, likelihood):
    with jax.enable_x64(True), jax.disable_jit():
        data = _stream(likelihood, 1, seed=30)
        model, obs_var = data[0], data[4]
        p = model.n_params()
        rng = np.random.default_rng(1)
        mean = 0.3 * jnp.asarray(rng.standard_normal(p))
        ups = jnp.asarray(rng.uniform(2.5, 10.0, p))  # diagonal, non-isotropic belief
        hyper = _hyper(obs_var, 0.5)
        states = {
            "full": E.MeanCov(mean, jnp.diag(1.0 / ups)),
            "dlr": E.DLRState(mean, ups, jnp.zeros((p, p))),
        }
        out = {}
        for family, state in states.items():
            cfg = E.Config(model, likelihood, family, p, rule, "mc_ef", 1, M)
            out[family] = _run(cfg, state, mean, hyper, data, jax.random.PRNGKey(5))
        mean_d, cov_d = dense("dlr", out["dlr"])
        assert rel_err(mean_d, out["full"].mean) < RTOL
        assert rel_err(cov_d, out["full"].cov) < RTOL


# ----------------------------------------------------------------------------------
# Invariant 4: γ = 1, q = 0 leaves the belief unchanged
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMS)
def test_static_predict_is_identity(family):
    with jax.enable_x64(True), jax.disable_jit():
        p = 6
        rng = np.random.default_rng(40)
        state, _, _ = make_state(family, p, rng, RANK, RANK)
        mean0 = jnp.asarray(rng.standard_normal(p))
        new = E.FAMILIES[family].predict(state, mean0, _hyper(jnp.asarray(1.0), prior_var=2.0))
        for a, b in zip(new, state):
            assert a.shape == b.shape and a.dtype == b.dtype
            if family == "dlr":
                assert rel_err(a, b) < RTOL
            else:
                assert np.array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("hessian", ["lin_hess", "mc_ef"])
@pytest.mark.parametrize("family", FAMS)
def test_dynamic_static_stream_agree(family, hessian):
    likelihood = _lik_for(family, hessian)
    with jax.enable_x64(True), jax.disable_jit():
        data = _stream(likelihood, 2, seed=50)
        model, obs_var = data[0], data[4]
        p = model.n_params()
        rng = np.random.default_rng(50)
        state, _, _ = make_state(family, p, rng, RANK, RANK)
        mean0 = jnp.asarray(rng.standard_normal(p))
        hyper = _hyper(obs_var, 0.5, prior_var=2.0)
        out = []
        for dynamic in (False, True):
            cfg = E.Config(model, likelihood, family, RANK, "blr", hessian, 2, M, dynamic)
            out.append(_run(cfg, state, mean0, hyper, data, jax.random.PRNGKey(6)))
        if family == "dlr":  # W is an SVD factor: compare Υ and W Wᵀ
            _assert_same_belief(family, out[1], out[0])
        else:
            for a, b in zip(*out):
                assert np.array_equal(np.asarray(a), np.asarray(b))


def test_ef_weight_counts_as_repeated_rows():
    """A row of weight w is w repeated rows: the LIN-EF and MC-EF curvatures of a weighted
    row are w g gᵀ (what w separate rows would add), not (w g)(w g)ᵀ; unit weights keep the
    published factor, and the gradient is still the weighted one, B u."""
    import jax
    import jax.numpy as jnp

    from skbong import engine
    from skbong.engine.filter.curvature import ESTIMATORS

    model = engine.MLP(3, 1, (4,))
    config = engine.Config(model=model, family="diag", hessian="lin_ef", mc_samples=3)
    family = engine.FAMILIES["diag"]
    with jax.enable_x64(True):
        mean0 = model.flat_init(jax.random.PRNGKey(0), jnp.float64)
        state = family.init(mean0, 0.5, 1)
        x = jnp.array([[0.3, -1.0, 2.0]])
        y = jnp.array([[0.7]])
        key = jax.random.PRNGKey(1)
        for name in ("lin_ef", "mc_ef"):
            est = ESTIMATORS[name]
            g1, c1 = est(config, family, state, x, y, jnp.ones(1), 0.2, key)
            g3, c3 = est(config, family, state, x, y, jnp.full(1, 3.0), 0.2, key)
            G1 = c1.factor @ c1.factor.T
            G3 = c3.factor @ c3.factor.T
            np.testing.assert_allclose(G3, 3.0 * G1, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(g3, 3.0 * g1, rtol=1e-12, atol=1e-15)
            assert c3.rest is None  # g = B u exactly: the steps skip their products with r
            np.testing.assert_allclose(c3.factor @ c3.coef, g3, rtol=1e-12, atol=1e-15)
            if name == "lin_ef":  # unit weight: the published B = g
                np.testing.assert_allclose(c1.factor[:, 0], g1, rtol=1e-15)
