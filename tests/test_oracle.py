"""The engine's update rules and estimators against the independent autodiff oracle.

``_oracle.py`` re-derives every step by automatic differentiation of the surrogate
S(μ, Σ) = gᵀμ + ½ tr(GΣ) (minus the KL to the prior for BLR / BBB): plain gradients in
each family's own parameters, natural gradients through the dual parameters (natural
families) or the Fisher obtained as the Hessian of the KL (moment families). The
engine's hand-derived closed forms (Woodbury, Fisher preconditioners, factored DLR
gradients, SVD projection) must agree with it.

What is tested
--------------
* ``test_update_matches_oracle``: ``E.update`` for every rule × family × estimator
  (76: no MC-HESS for DLR), one observation (a weighted mini-batch), from a random
  non-prior state. (g, G) come from the engine's own estimator at the same point with
  the same key ``fold_in(key, 0)``; BLR / BBB with ``n_iter=1`` take that inner step
  at the predicted state with the predicted state as prior (the KL gradient is then
  zero but its curvature terms Λ − Λ₀ still pass through the code). The likelihood
  rotates so that every family, estimator and rule meets each likelihood.
* ``test_inner_step_with_prior``: ``fam.ngd`` / ``fam.gd`` with a prior that differs
  from the current state, so the KL gradient is non-zero (one BLR / BBB inner step).
  The KL enters the steps only through g̃ and G̃, whatever the estimator, so each
  family is run with one factor curvature (LIN-HESS) and one of MC-HESS (explicit G)
  or, for DLR, MC-EF.
* ``test_blr_bbb_several_inner_steps``: ``n_iter=3`` — the oracle chained, with (g, G)
  re-estimated by MC-EF at each oracle iterate under ``fold_in(key, i)`` (so the
  engine must re-sample from its current iterate) and the KL always to the
  predicted belief. Natural DLR uses R = P there so that no iterate is truncated.
* DLR natural steps are compared with the full natural step on the dense precision
  Υ + W Wᵀ. In the sweeps W (and the prior's W₀) have one non-zero column, so the
  widened factor W̃ has rank ≤ 2 + k ≤ R = 5 < P = 6 and the projection is exact;
  ``test_dlr_truncation`` covers rank(W̃) > R: the mean uses the untruncated W̃,
  diag(Υ + W Wᵀ) equals the diagonal of the untruncated precision, and W Wᵀ is the
  best rank-R approximation (NumPy ``eigh``) of W̃W̃ᵀ = Λ' − Υ'.
* ``test_lin_estimators``, ``test_mc_estimators``: the estimators against autodiff
  through textbook log-likelihoods (``jax.scipy.stats``), forward-mode Jacobians and
  dense per-sample Hessians, recomputed from the same standard-normal draws
  ε = ``jax.random.normal(key, (M, P))`` (MC-HESS: ``split(key)[0]``, the documented
  key use) mapped to θ = μ + Σ^{1/2} ε by the independent square roots of
  ``tests/_reference.py`` (Cholesky for the dense families, σ for the diagonal ones,
  the symmetric root for dlr), not by the engine's own sampler, so a wrong square root
  in a sampler fails here.

Problem scale
-------------
P = 6 for all four likelihoods (shared shapes keep the eager per-primitive compiles
few). Random states have covariance eigenvalues in ``COV_EIGS`` = [0.1, 0.4] so that a
moment-parameter step (Σ + α Σ G Σ, Σ + α G̃ / 2) stays positive definite; the plain
gradient rules use α = ``ALPHA_GD`` = 0.02 for the same reason (the KL gradient in Σ
is of the order of the precisions). Each result that comes out of an inverse (natural
families, DLR) is asserted SPD, so no comparison involves a near-singular inverse.

Tolerances
----------
Everything runs in float64. The oracle and the engine compute the same quantity along
different routes (e.g. Woodbury versus a dense inverse, autodiff through ``inv`` and
``slogdet``); the matrices inverted have condition numbers ≲ 1e2, so the rounding
difference is ≲ 1e2 · 1e2 · 2.2e-16 ≈ 1e-12. ``RTOL = 1e-9`` (max-abs error relative
to the largest entry) leaves three orders of margin (measured: ≤ 1.5e-15); a wrong
formula (a missing factor 2, a transposed product, a dropped KL term) changes the
result by at least α · O(1) relative ≳ 1e-2.
"""

import itertools
import zlib

import _reference as ref
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _oracle import (
    dlr_cov,
    gd,
    lin_ef,
    lin_hess,
    mc_ef,
    mc_hess,
    ngd,
    project_rank,
    random_lowrank,
    random_spd,
    rel_err,
)

from skbong import engine as E
from skbong.engine.filter.curvature import ESTIMATORS

RTOL = 1e-9
M = 3  # MC samples
ALPHA = 0.3  # rate of blr (bong: 1)
# Rate of the plain-gradient rules bog / bbb: GD is not scale invariant, and the KL
# gradient in Σ, (Λ − Λ₀)/2, is of the order of the precisions (up to 10 here) while Σ
# is of order 0.1, so a moment-parameter GD step needs α ≲ 0.02 to stay SPD.
ALPHA_GD = 0.02
# Covariance eigenvalues (DLR: Υ⁻¹) of the random states: small enough that one step of
# the moment rules (Σ + α Σ G Σ, Σ + α G / 2) stays positive definite.
COV_EIGS = (0.1, 0.4)
RANK = 5  # DLR rank in the sweeps: P = 6 and k ≤ 3, so 1 + 1 + k ≤ R < P
LIKS = ("gaussian", "bernoulli", "categorical", "poisson")
FAMS = ("full", "full_moment", "diag", "diag_moment", "dlr")
HESS = ("lin_hess", "lin_ef", "mc_ef", "mc_hess")
RULES = ("bong", "bog", "blr", "bbb")
NATURAL = {"bong": True, "bog": False, "blr": True, "bbb": False}

# likelihood -> (model, rows b, outputs C). P = 6 for all and the LIN-HESS factor has
# k = b C = 3 columns for all (as MC-EF with M = 3): shared shapes keep the eager
# per-primitive compiles few. Bernoulli and Poisson use a tanh network, so MC-HESS
# sees model curvature that LIN-HESS does not.
_LINEAR = E.MLP(1, 3)
_NET = E.MLP(3, 1, hidden=(1,), activation="tanh")
MODELS = {
    "gaussian": (_LINEAR, 1, 3),
    "bernoulli": (_NET, 3, 1),
    "categorical": (_LINEAR, 1, 3),  # softmax over 3 classes
    "poisson": (_NET, 3, 1),
}


def _seed(*parts):
    """A deterministic seed from test parameters (``hash`` is salted per process)."""
    return zlib.crc32(repr(parts).encode())


def _combos():
    out = []
    for (ri, rule), (fi, fam), (hi, hess) in itertools.product(
        enumerate(RULES), enumerate(FAMS), enumerate(HESS)
    ):
        if fam == "dlr" and hess == "mc_hess":
            continue
        out.append((rule, fam, hess, LIKS[(ri + fi + hi) % 4]))
    return out


# ----------------------------------------------------------------------------------
# Problem and state construction (float64; call inside jax.enable_x64)
# ----------------------------------------------------------------------------------


def problem(likelihood, seed=0):
    """(model, x, y, w, obs_var) for one weighted mini-batch."""
    model, b, c = MODELS[likelihood]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, model.n_features))
    if likelihood == "gaussian":
        y = rng.standard_normal((b, c))
    elif likelihood == "bernoulli":
        y = rng.integers(0, 2, (b, 1)).astype(float)
    elif likelihood == "categorical":
        y = np.eye(c)[rng.integers(0, c, b)]
    else:
        y = rng.integers(0, 3, (b, 1)).astype(float)
    w = np.array([0.8] if b == 1 else [0.5, 0.3, 0.2])
    obs_var = jnp.asarray([1.0, 2.0, 4.0]) if likelihood == "gaussian" else jnp.asarray(1.0)
    return model, jnp.asarray(x), jnp.asarray(y), jnp.asarray(w), obs_var


def curv_rank(hessian, likelihood):
    """Number of columns k of the curvature factor B."""
    _, b, c = MODELS[likelihood]
    return {"lin_hess": b * c, "lin_ef": 1, "mc_ef": M, "mc_hess": 0}[hessian]


def make_state(family, p, rng, rank=1, nonzero=1):
    """A random state: (engine state, oracle state, dense (mu, cov))."""
    mu = 0.5 * rng.standard_normal(p)
    if family in ("full", "full_moment"):
        cov = random_spd(rng, p, *COV_EIGS)
        eng, orc = E.MeanCov(jnp.asarray(mu), jnp.asarray(cov)), (mu, cov)
    elif family in ("diag", "diag_moment"):
        var = rng.uniform(*COV_EIGS, p)
        cov = np.diag(var)
        eng, orc = E.MeanCov(jnp.asarray(mu), jnp.asarray(var)), (mu, cov)
    else:
        ups = rng.uniform(1.0 / COV_EIGS[1], 1.0 / COV_EIGS[0], p)
        w = random_lowrank(rng, p, rank, nonzero)
        cov = np.linalg.inv(np.diag(ups) + w @ w.T)
        eng = E.DLRState(jnp.asarray(mu), jnp.asarray(ups), jnp.asarray(w))
        orc = (mu, ups, w)
    orc = tuple(jnp.asarray(a) for a in orc)
    return eng, orc, (jnp.asarray(mu), jnp.asarray(cov))


def dense(family, state):
    """(mean, dense covariance) of an engine state."""
    if family == "dlr":
        return state.mean, np.linalg.inv(np.diag(state.prec_diag) + state.prec_lr @ state.prec_lr.T)
    if family in ("diag", "diag_moment"):
        return state.mean, np.diag(state.cov)
    return state.mean, state.cov


def densify(curv):
    """Dense G from an engine curvature."""
    if curv.factor is not None:
        return -curv.factor @ curv.factor.T
    return curv.hess if curv.hess.ndim == 2 else jnp.diag(curv.hess)


def assert_spd(cov):
    assert np.all(np.linalg.eigvalsh(np.asarray(cov)) > 0)


def check_against_oracle(family, natural, new, orc_state, g, G, alpha, prior):
    """Compare one engine step ``new`` with the oracle step; returns the max error."""
    errs = []
    if natural:
        expected = ngd(family, orc_state, g, G, alpha, prior)
    else:
        expected = gd(family, orc_state, g, G, alpha, prior)
    mean, cov = dense(family, new)
    errs.append(rel_err(mean, expected[0]))
    if family == "dlr" and natural:
        prec = np.diag(new.prec_diag) + new.prec_lr @ new.prec_lr.T
        errs.append(rel_err(prec, expected[1]))
        exp_cov = np.linalg.inv(expected[1])
    elif family == "dlr":
        errs.append(rel_err(new.prec_diag, expected[1]))
        errs.append(rel_err(new.prec_lr, expected[2]))
        exp_cov = dlr_cov(expected[1], expected[2])
    else:
        exp_cov = expected[1]
    errs.append(rel_err(cov, exp_cov))
    if family not in ("full_moment", "diag_moment"):  # cov came out of an inverse
        assert_spd(cov)
    assert max(errs) < RTOL, errs
    return max(errs)


# ----------------------------------------------------------------------------------
# One update per rule × family × estimator
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("rule,family,hessian,likelihood", _combos())
def test_update_matches_oracle(rule, family, hessian, likelihood):
    natural = NATURAL[rule]
    seed = _seed(rule, family, hessian)
    with jax.enable_x64(True), jax.disable_jit():
        model, x, y, w, obs_var = problem(likelihood)
        p = model.n_params()
        rng = np.random.default_rng(seed)
        k = curv_rank(hessian, likelihood)
        # natural DLR: W has one non-zero column, rank(W̃) ≤ 1 + k < R (no truncation)
        assert 1 + k <= RANK
        state, orc, _ = make_state(family, p, rng, RANK, 1 if natural else RANK)
        cfg = E.Config(model, likelihood, family, RANK, rule, hessian, n_iter=1, mc_samples=M)
        alpha = {"bong": 1.0, "blr": ALPHA}.get(rule, ALPHA_GD)
        hyper = E.Hyper(
            jnp.asarray(1.0), obs_var, jnp.asarray(alpha), jnp.asarray(1.0), jnp.asarray(0.0)
        )
        key = jax.random.PRNGKey(seed)
        new = E.update(cfg, state, x, y, w, hyper, key)
        fam = E.FAMILIES[family]
        g, curv = ESTIMATORS[hessian](cfg, fam, state, x, y, w, obs_var, jax.random.fold_in(key, 0))
        prior = dense(family, state) if rule in ("blr", "bbb") else None
        check_against_oracle(family, natural, new, orc, g, densify(curv), alpha, prior)


@pytest.mark.parametrize("natural", [True, False], ids=["ngd", "gd"])
@pytest.mark.parametrize(
    "family,hessian",
    [(f, h) for f in FAMS for h in ("lin_hess", "mc_ef" if f == "dlr" else "mc_hess")],
)
def test_inner_step_with_prior(family, hessian, natural):
    likelihood = LIKS[(FAMS.index(family) + HESS.index(hessian) + natural) % 4]
    seed = _seed(family, hessian, natural, "prior")
    with jax.enable_x64(True), jax.disable_jit():
        model, x, y, w, obs_var = problem(likelihood, seed=1)
        p = model.n_params()
        rng = np.random.default_rng(seed)
        k = curv_rank(hessian, likelihood)
        assert 2 + k <= RANK  # natural DLR: rank[√(1−α)W, √α W₀, √α B] ≤ 1 + 1 + k
        nonzero = 1 if natural else RANK
        state, orc, _ = make_state(family, p, rng, RANK, nonzero)
        prior, _, prior_dense = make_state(family, p, rng, RANK, nonzero)
        cfg = E.Config(model, likelihood, family, RANK, "blr", hessian, mc_samples=M)
        fam = E.FAMILIES[family]
        g, curv = ESTIMATORS[hessian](cfg, fam, state, x, y, w, obs_var, jax.random.PRNGKey(seed))
        step = fam.ngd if natural else fam.gd
        alpha = ALPHA if natural else ALPHA_GD
        new = step(state, prior, g, curv, jnp.asarray(alpha))
        check_against_oracle(family, natural, new, orc, g, densify(curv), alpha, prior_dense)


def _engine_state(family, orc_new, natural, ups_prior_mix):
    """Engine state for an oracle iterate (for re-estimating g, G there)."""
    mu = orc_new[0]
    if family in ("full", "full_moment"):
        return E.MeanCov(mu, 0.5 * (orc_new[1] + orc_new[1].T))
    if family in ("diag", "diag_moment"):
        return E.MeanCov(mu, jnp.diag(orc_new[1]))
    if not natural:
        return E.DLRState(*orc_new)
    # natural DLR with R ≥ P: nothing is truncated, Υ' is the mixed diagonal and
    # W' W'ᵀ = Λ' − diag(Υ') (any square root: the DLR sampler depends on W Wᵀ only)
    ups = ups_prior_mix
    vals, vecs = np.linalg.eigh(np.asarray(orc_new[1]) - np.diag(ups))
    w = vecs * np.sqrt(np.clip(vals, 0.0, None))
    return E.DLRState(mu, jnp.asarray(ups), jnp.asarray(w))


@pytest.mark.parametrize("rule", ["blr", "bbb"])
@pytest.mark.parametrize("family", FAMS)
def test_blr_bbb_several_inner_steps(rule, family):
    # MC-EF: each inner step must re-sample from the current iterate with fold_in(key, i)
    natural = NATURAL[rule]
    hessian = "mc_ef"
    likelihood = LIKS[FAMS.index(family) % 4]
    n_iter = 3
    seed = _seed(rule, family, hessian, "iter")
    with jax.enable_x64(True), jax.disable_jit():
        model, x, y, w, obs_var = problem(likelihood, seed=2)
        if family.endswith("_moment"):
            # the MC-EF of a weighted batch is Σ gₘgₘᵀ / (M w̄) (a weight counts as repeated
            # rows); scaling the weights by w̄ keeps the curvature of this set-up, under
            # which the moment steps stay positive definite (they need not in general)
            w = w * jnp.mean(w)
        p = model.n_params()
        rng = np.random.default_rng(seed)
        rank = p if natural else RANK  # natural DLR: R = P, the iterates are never truncated
        state, orc, pred_dense = make_state(family, p, rng, rank, 2)
        cfg = E.Config(model, likelihood, family, rank, rule, hessian, n_iter, M)
        alpha = ALPHA if natural else ALPHA_GD
        hyper = E.Hyper(
            jnp.asarray(1.0), obs_var, jnp.asarray(alpha), jnp.asarray(1.0), jnp.asarray(0.0)
        )
        key = jax.random.PRNGKey(seed)
        new = E.update(cfg, state, x, y, w, hyper, key)
        fam = E.FAMILIES[family]
        it_state, it_orc = state, orc
        ups = np.asarray(state.prec_diag) if family == "dlr" else None
        for i in range(n_iter):
            g, curv = ESTIMATORS[hessian](
                cfg, fam, it_state, x, y, w, obs_var, jax.random.fold_in(key, i)
            )
            G = densify(curv)
            step = ngd if natural else gd
            it_orc = step(family, it_orc, g, G, alpha, pred_dense)
            if family == "dlr" and natural:
                ups = (1 - alpha) * ups + alpha * np.asarray(state.prec_diag)
            it_state = _engine_state(family, it_orc, natural, ups)
            if family == "dlr" and natural:
                it_orc = (it_state.mean, it_state.prec_diag, it_state.prec_lr)
        mean, cov = dense(family, new)
        exp_mean, exp_cov = dense(family, it_state)
        assert_spd(cov)
        assert rel_err(mean, exp_mean) < RTOL
        assert rel_err(cov, exp_cov) < RTOL


@pytest.mark.parametrize("with_prior", [False, True], ids=["bong", "blr"])
@pytest.mark.parametrize("hessian", ["lin_hess", "mc_ef"])
def test_dlr_truncation(hessian, with_prior):
    likelihood = "gaussian"
    rank = 2
    seed = _seed(hessian, with_prior, "trunc")
    with jax.enable_x64(True), jax.disable_jit():
        model, x, y, w, obs_var = problem(likelihood, seed=3)
        p = model.n_params()
        rng = np.random.default_rng(seed)
        state, orc, _ = make_state("dlr", p, rng, rank, rank)  # full-rank W
        prior, _, prior_dense = make_state("dlr", p, rng, rank, rank)
        cfg = E.Config(model, likelihood, "dlr", rank, "blr", hessian, mc_samples=M)
        fam = E.FAMILIES["dlr"]
        g, curv = ESTIMATORS[hessian](cfg, fam, state, x, y, w, obs_var, jax.random.PRNGKey(7))
        alpha = ALPHA if with_prior else 1.0
        new = fam.ngd(state, prior if with_prior else None, g, curv, jnp.asarray(alpha))
        mu_exp, prec_exp = ngd(
            "dlr", orc, g, densify(curv), alpha, prior_dense if with_prior else None
        )
        ups = np.asarray(state.prec_diag)
        if with_prior:
            ups = (1 - alpha) * ups + alpha * np.asarray(prior.prec_diag)
        lowrank = np.asarray(prec_exp) - np.diag(ups)  # W̃ W̃ᵀ, rank 2R + k > R
        assert np.linalg.matrix_rank(lowrank) > rank
        wwt = np.asarray(new.prec_lr @ new.prec_lr.T)
        prec_new = np.diag(new.prec_diag) + wwt
        assert rel_err(new.mean, mu_exp) < RTOL  # mean from the untruncated W̃
        assert rel_err(np.diag(prec_new), np.diag(prec_exp)) < RTOL  # diagonal kept
        assert rel_err(wwt, project_rank(lowrank, rank)) < RTOL  # best rank-R part
        assert np.all(np.asarray(new.prec_diag) >= ups - RTOL)


# ----------------------------------------------------------------------------------
# Estimators
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("likelihood", LIKS)
def test_lin_estimators(likelihood):
    with jax.enable_x64(True), jax.disable_jit():
        model, x, y, w, obs_var = problem(likelihood, seed=4)
        p = model.n_params()
        state, _, _ = make_state("full", p, np.random.default_rng(4))
        cfg = E.Config(model, likelihood, "full", hessian="lin_hess")
        fam = E.FAMILIES["full"]
        key = jax.random.PRNGKey(0)
        for name, oracle in (("lin_hess", lin_hess), ("lin_ef", lin_ef)):
            g, curv = ESTIMATORS[name](cfg, fam, state, x, y, w, obs_var, key)
            g_exp, G_exp = oracle(model.apply, likelihood, state.mean, x, y, w, obs_var)
            assert rel_err(g, g_exp) < RTOL
            assert rel_err(densify(curv), G_exp) < RTOL


def _reference_samples(family, state, key):
    """θ_m = μ + Σ^{1/2} ε_m for ε = ``jax.random.normal(key, (M, P))``, mapped by the square
    roots of ``tests/_reference.py`` (numpy float64)."""
    eps = np.asarray(jax.random.normal(key, (M, state.mean.shape[0]), jnp.float64))
    parts = [np.asarray(a) for a in state]
    if family in ("full", "full_moment"):
        return jnp.asarray(ref.sample_full(*parts, eps))
    if family in ("diag", "diag_moment"):
        return jnp.asarray(ref.sample_diag(*parts, eps))
    return jnp.asarray(ref.sample_dlr(*parts, eps))


@pytest.mark.parametrize(
    "family,likelihood", [(f, LIKS[i % 4]) for i, f in enumerate(FAMS)]
)  # every likelihood meets MC-EF and MC-HESS (dense and diagonal)
def test_mc_estimators(family, likelihood):
    seed = _seed(family, likelihood, "mc")
    with jax.enable_x64(True), jax.disable_jit():
        model, x, y, w, obs_var = problem(likelihood, seed=5)
        p = model.n_params()
        state, _, _ = make_state(family, p, np.random.default_rng(seed), RANK, RANK)
        cfg = E.Config(model, likelihood, family, RANK, hessian="mc_ef", mc_samples=M)
        fam = E.FAMILIES[family]
        key = jax.random.PRNGKey(seed)
        g, curv = ESTIMATORS["mc_ef"](cfg, fam, state, x, y, w, obs_var, key)
        g_exp, G_exp = mc_ef(
            model.apply, likelihood, _reference_samples(family, state, key), x, y, w, obs_var
        )
        assert rel_err(g, g_exp) < RTOL
        assert rel_err(densify(curv), G_exp) < RTOL
        if family == "dlr":
            return
        g, curv = ESTIMATORS["mc_hess"](cfg, fam, state, x, y, w, obs_var, key)
        thetas = _reference_samples(family, state, jax.random.split(key)[0])
        g_exp, H_exp = mc_hess(model.apply, likelihood, thetas, x, y, w, obs_var)
        if family in ("diag", "diag_moment"):
            assert curv.hess.shape == (p,)
            H_exp = jnp.diag(jnp.diag(H_exp))
        assert rel_err(g, g_exp) < RTOL
        assert rel_err(densify(curv), H_exp) < RTOL
