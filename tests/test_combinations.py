"""Every rule × estimator × family combination runs, for every likelihood.

What is tested
--------------
* ``test_update_valid``: all 76 valid (rule, hessian, family) combinations (4 rules × 4
  estimators × 5 families, less ``mc_hess`` × ``dlr``) on a small tanh MLP (3 features,
  hidden (4,); for 3 outputs 2 features, hidden (3,)) for each likelihood: Gaussian with 1
  output and with 3 outputs (a vector observation variance), Bernoulli, categorical with
  3 classes and Poisson. Two observations (mini-batches of two rows with weights 1 and
  0.5) are absorbed one after the other with :func:`skbong.engine.update`; after each,
  the posterior must be accepted by the stream (``family.is_valid``: finite, positive
  variances / precisions), the dense covariance of the full families must be symmetric
  (to rounding) and positive definite (``is_valid`` only checks its diagonal), and the
  mean must have moved. BLR and BBB take two inner steps, so that the second one sees a
  non-zero KL gradient; MC estimators use M = 2 samples.
* ``test_moment_gd_cov_symmetric``: the plain-gradient step (BOG, BBB) on the full moment
  family returns an exactly symmetric Σ, as every other step does, also from a dense
  Hessian (MC-HESS) whose triangles differ by rounding.
* ``test_dlr_mc_hess_rejected``: ``dlr`` × ``mc_hess`` raises a ``ValueError`` that names
  both, for every rule, and the DLR steps refuse a dense/diagonal curvature.
* ``test_run_stream_default``: one compiled :func:`skbong.engine.run_stream` per likelihood
  with the default configuration (BONG, LIN-HESS, DLR) accepts every step.

Why these hyperparameters
-------------------------
Not every combination is well posed for every hyperparameter: some updates lose
positive-definiteness by construction, and the test must stay inside the region where the
algorithm itself is defined (a failure there would be the algorithm, not a bug):

* moment-parameter NGD (BONG/BLR on ``full_moment``/``diag_moment``), Σ' = Σ + Σ G Σ with
  G = −B Bᵀ, is positive definite iff ‖Bᵀ Σ B‖ < 1. For LIN-HESS this reads J Σ Jᵀ ≺ Λ_y⁻¹
  (Gaussian: J Σ Jᵀ ≺ R): the prior predictive variance of f must stay below the noise.
  For the empirical-Fisher estimators it reads gᵀ Σ g < 1, which also grows with the
  squared residuals (M = 2 samples of θ spread f(θₘ) by about √(J Σ Jᵀ));
* moment-parameter GD (BOG/BBB on the moment families), Σ' = Σ + (α/2) G, needs
  (α/2) ‖B‖² < λ_min(Σ) at every step, so α must scale like Σ / |G|.

Hence a small prior variance σ₀² = 0.02, inputs of scale 0.5, Gaussian targets of scale
0.5 with observation variance ≥ 2, Poisson counts in {0, 1, 2}, and rate α = 0.05 except
α = 5e-4 for the plain-gradient steps of the moment families. Over 150 random redraws of
such data per likelihood, at the prior, ‖BᵀΣB‖ ≤ 0.6 for every estimator (moment NGD needs
< 1) and (α/2) ‖B‖² / σ₀² ≤ 0.4 (moment GD needs < 1 per step); in the runs below the
smallest covariance eigenvalue (or variance) of every full and diagonal combination stays
well above zero (≥ 0.8 σ₀²).

Runtime: compiling 380 configurations would take minutes, so the updates run eagerly under
``jax.disable_jit()`` (compiled primitives are cached per shape and shared by all
configurations). To share as many of those shapes as possible, the multi-output Gaussian has
3 outputs like the categorical model, and the 3-output models use 2 features and 3 hidden
units so that every model has P = 21 parameters. Float32, the default working precision.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skbong import engine as E

COMBOS = [
    (rule, hessian, family)
    for rule in E.RULE_NAMES
    for hessian in E.HESSIAN_NAMES
    for family in E.FAMILY_NAMES
    if not (family == "dlr" and hessian == "mc_hess")
]
CASES = {  # name: (likelihood, n_outputs, observation variance)
    "gaussian": ("gaussian", 1, 2.0),
    "gaussian3": ("gaussian", 3, (2.0, 2.5, 3.0)),
    "bernoulli": ("bernoulli", 1, 1.0),
    "categorical3": ("categorical", 3, 1.0),
    "poisson": ("poisson", 1, 1.0),
}
# (n_features, hidden) per output width: both give P = 21 parameters (see the docstring).
ARCH = {1: (3, 4), 3: (2, 3)}
N_STEPS, BATCH = 2, 2
PRIOR_VAR = 0.02
RATE, RATE_MOMENT_GD = 0.05, 0.0005
DTYPE = jnp.float32


def test_combination_count():
    assert len(COMBOS) == 4 * 4 * 5 - 4 == 76


@functools.cache
def _problem(case):
    """Model, prior mean and a short stream (T, b, ·) for one likelihood."""
    likelihood, n_out, obs_var = CASES[case]
    n_features, hidden = ARCH[n_out]
    rng = np.random.default_rng(sorted(CASES).index(case))
    shape = (N_STEPS, BATCH)
    x = 0.5 * rng.standard_normal((*shape, n_features))
    if likelihood == "gaussian":
        y = 0.5 * rng.standard_normal((*shape, n_out))
    elif likelihood == "bernoulli":
        y = rng.integers(0, 2, (*shape, 1))
    elif likelihood == "categorical":
        y = np.eye(n_out)[rng.integers(0, n_out, shape)]
    else:
        y = rng.integers(0, 3, (*shape, 1))  # counts 0, 1, 2
    model = E.MLP(n_features, n_out, hidden=(hidden,), activation="tanh")
    assert model.n_params() == 21
    mean0 = model.flat_init(jax.random.PRNGKey(0), DTYPE)
    w = jnp.asarray([1.0, 0.5], DTYPE)
    return model, mean0, jnp.asarray(x, DTYPE), jnp.asarray(y, DTYPE), w, obs_var


def _hyper(obs_var, rate):
    return E.Hyper(
        prior_var=jnp.asarray(PRIOR_VAR, DTYPE),
        obs_var=jnp.asarray(obs_var, DTYPE),
        learning_rate=jnp.asarray(rate, DTYPE),
        drift=jnp.asarray(1.0, DTYPE),
        process_noise=jnp.asarray(0.0, DTYPE),
    )


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize(("rule", "hessian", "family"), COMBOS)
def test_update_valid(case, rule, hessian, family):
    model, mean0, xs, ys, w, obs_var = _problem(case)
    likelihood = CASES[case][0]
    cfg = E.Config(
        model, likelihood, family, rank=2, rule=rule, hessian=hessian, n_iter=2, mc_samples=2
    )
    moment_gd = family.endswith("_moment") and rule in ("bog", "bbb")
    hyper = _hyper(obs_var, RATE_MOMENT_GD if moment_gd else RATE)
    fam = E.FAMILIES[family]
    with jax.disable_jit():
        state = E.init_state(cfg, mean0, hyper.prior_var)
        for t in range(N_STEPS):
            new = E.update(cfg, state, xs[t], ys[t], w, hyper, jax.random.PRNGKey(t))
            assert bool(fam.is_valid(new)), f"step {t}: update rejected"
            for leaf in jax.tree_util.tree_leaves(new):
                assert leaf.dtype == DTYPE
                assert np.all(np.isfinite(np.asarray(leaf)))
            if family in ("full", "full_moment"):
                cov = np.asarray(new.cov, np.float64)
                # symmetric up to rounding (exact symmetry: test_moment_gd_cov_symmetric)
                asym = np.abs(cov - cov.T).max()
                assert asym <= 8 * np.finfo(np.float32).eps * np.abs(cov).max()
                assert np.linalg.eigvalsh(cov).min() > 0, f"step {t}: Σ not positive definite"
            if family == "dlr":
                assert new.prec_lr.shape == (mean0.shape[0], 2)
            assert not np.array_equal(np.asarray(new.mean), np.asarray(state.mean))
            state = new


@pytest.mark.parametrize("with_prior", [False, True], ids=["bog", "bbb"])
def test_moment_gd_cov_symmetric(with_prior):
    # Every other step returns an exactly symmetric Σ (sym(), Woodbury, −B Bᵀ). The plain
    # gradient step Σ + (α/2) G must use the symmetric part of G (the gradient with
    # respect to a symmetric matrix; Jones, Chang & Murphy 2024, eq. 81) also when G is an
    # autodiff Hessian (MC-HESS), whose two triangles differ by rounding: here by 1e-7
    # relative.
    rng = np.random.default_rng(0)
    p = 5
    root = rng.standard_normal((p, p))
    skew = rng.standard_normal((p, p))
    hess = -(root @ root.T) + 1e-7 * (skew - skew.T)
    with jax.enable_x64(True):
        f64 = jnp.float64
        cov = 0.1 * jnp.eye(p, dtype=f64) + 0.01 * jnp.asarray(root @ root.T)
        state = E.MeanCov(jnp.zeros(p, f64), cov)
        prior = E.MeanCov(jnp.zeros(p, f64), 0.1 * jnp.eye(p, dtype=f64)) if with_prior else None
        new = E.FAMILIES["full_moment"].gd(
            state, prior, jnp.ones(p, f64), E.Curv(hess=jnp.asarray(hess)), 1e-3
        )
    np.testing.assert_array_equal(np.asarray(new.cov), np.asarray(new.cov).T)


@pytest.mark.parametrize("rule", E.RULE_NAMES)
def test_dlr_mc_hess_rejected(rule):
    model = E.MLP(3, 1)
    with pytest.raises(ValueError, match=r"mc_hess.*dlr"):
        E.Config(model, "gaussian", "dlr", rule=rule, hessian="mc_hess")


@pytest.mark.parametrize("step", ["ngd", "gd"])
def test_dlr_step_rejects_explicit_hessian(step):
    p, rank = 4, 2
    state = E.DLRState(jnp.zeros(p), jnp.ones(p), jnp.zeros((p, rank)))
    curv = E.Curv(hess=-jnp.ones(p))
    with pytest.raises(ValueError, match="dlr"):
        getattr(E.FAMILIES["dlr"], step)(state, None, jnp.ones(p), curv, 1.0)


@pytest.mark.parametrize("case", list(CASES))
def test_run_stream_default(case):
    model, mean0, xs, ys, w, obs_var = _problem(case)
    cfg = E.Config(model, CASES[case][0])
    assert (cfg.rule, cfg.hessian, cfg.family) == ("bong", "lin_hess", "dlr")
    hyper = _hyper(obs_var, RATE)
    state0 = E.init_state(cfg, mean0, hyper.prior_var)
    ws = jnp.broadcast_to(w, xs.shape[:2])
    state, log_lik, f, ok = E.run_stream(
        cfg, state0, mean0, hyper, xs, ys, ws, 0, jax.random.PRNGKey(0)
    )
    assert np.all(np.asarray(ok))
    assert bool(E.FAMILIES["dlr"].is_valid(state))
    assert np.all(np.isfinite(np.asarray(log_lik))) and log_lik.shape == xs.shape[:2]
    assert f.shape == ys.shape
    assert not np.array_equal(np.asarray(state.mean), np.asarray(mean0))


@pytest.mark.parametrize("tall_from", [0, 10**9], ids=["P-major", "k-major"])
@pytest.mark.parametrize("with_prior", [False, True], ids=["bong", "blr"])
@pytest.mark.parametrize("p, r, c", [(12, 3, 2), (24, 8, 3)], ids=["k5", "k11"])
def test_dlr_natural_step_in_both_layouts(monkeypatch, tall_from, with_prior, p, r, c):
    """The dlr natural step (eqs. 281–292) against dense float64 algebra, in both memory
    layouts of W̃ (the P-major one is used from TALL_FROM parameters on): the mean solves
    Λ' (μ' − μ) = α g̃ with Λ' = Υ' + W̃ W̃ᵀ, the projection keeps diag(Λ'), and W' W'ᵀ is
    the best rank-R part of W̃ W̃ᵀ. Well-conditioned inputs: agreement to 1e-10. W̃ has
    k = r + c columns (BONG; BLR adds r): k = 11 takes the k-major step's one k × 2k
    product of the Gram and Woodbury matrices (``linalg.STACKED_COLUMNS``)."""
    from skbong.engine import linalg
    from skbong.engine.families import dlr

    monkeypatch.setattr(dlr, "TALL_FROM", tall_from)
    assert (r + c in linalg.STACKED_COLUMNS) == (r == 8)
    rng = np.random.default_rng(5)
    alpha = 0.6 if with_prior else 1.0
    state = E.DLRState(rng.normal(size=p), rng.uniform(1, 2, p), rng.normal(size=(p, r)))
    prior = E.DLRState(rng.normal(size=p), rng.uniform(1, 2, p), rng.normal(size=(p, r)))
    b, g = rng.normal(size=(p, c)), rng.normal(size=p)
    with jax.enable_x64(True):
        new = dlr.ngd(state, prior if with_prior else None, g, E.Curv(factor=b), alpha)
    if with_prior:
        g_tilde = g - (np.diag(prior.prec_diag) + prior.prec_lr @ prior.prec_lr.T) @ (
            state.mean - prior.mean
        )
        ups = (1 - alpha) * state.prec_diag + alpha * prior.prec_diag
        w_full = np.hstack(
            [np.sqrt(1 - alpha) * state.prec_lr, np.sqrt(alpha) * prior.prec_lr, np.sqrt(alpha) * b]
        )
    else:
        g_tilde, ups, w_full = g, state.prec_diag, np.hstack([state.prec_lr, b])
    prec = np.diag(ups) + w_full @ w_full.T
    np.testing.assert_allclose(
        new.mean, state.mean + alpha * np.linalg.solve(prec, g_tilde), rtol=0, atol=1e-10
    )
    lowrank = np.asarray(new.prec_lr) @ np.asarray(new.prec_lr).T
    np.testing.assert_allclose(np.asarray(new.prec_diag) + np.diag(lowrank), np.diag(prec), atol=1e-10)
    vals, vecs = np.linalg.eigh(w_full @ w_full.T)
    best = (vecs[:, -r:] * vals[-r:]) @ vecs[:, -r:].T
    np.testing.assert_allclose(lowrank, best, rtol=0, atol=1e-10)
