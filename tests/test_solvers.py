"""The batch solvers (``skbong.engine.solvers``) and their epoch driver (``epochs``) against
the independent NumPy transcriptions of ``_batch_reference.py`` (written from the papers: Khan
et al. 2018, Mishkin et al. 2018, Blundell et al. 2015, Shen et al. 2024), and against closed
forms.

What is tested
--------------
* ``test_step_matches_reference``: every solver (VOGN diag/full × EF/GGN, VON diag/full,
  Vprop, Vadam, SLANG, BBB, IVON) × {linear-Gaussian, logistic} regression, three
  consecutive steps from its own ``init``, each on a fresh mini-batch with random positive
  weights and one zero-weight padding row (with non-zero x, y, so ignoring the weight
  would show), S = 3 samples from random ε, ω = 0.51 for some solvers, momentum > 0 where
  the solver has it. The engine's samples, state and returned nll must equal the
  reference's (the samples from each side's own sampler, the reference state tracked in
  the papers' own parameterisation: s-form for VON/VOGN, U Uᵀ for SLANG).
* ``test_full_and_dlr_samplers_are_roots``: the full and DLR samplers map ε through a
  matrix A with A Aᵀ = Λ⁻¹ (the papers fix the covariance, not the root).
* ``test_exact_posterior_one_step``: linear-Gaussian, full batch, α = β = 1, ε = 0: VON (full)
  and VOGN-GGN (full) reach the exact posterior from a random start in one step.
* ``test_vogn_ef_fixed_point``: at θ = μ = the exact posterior mean, VOGN-EF keeps the mean
  and has precision diag(λ) + Σᵢ rᵢ² x̃ᵢx̃ᵢᵀ / σ⁴ (its diagonal for the diagonal family).
* ``test_slang_full_rank_equals_vogn_full``: SLANG with L = P equals full VOGN-EF on the same
  samples (two steps, momentum 0).
* ``test_vprop_vadam_reference_identity``: Vadam(γ₁ = 0, no bias correction) = Vprop in the
  reference; Vprop and Vadam are each pinned to their own transcription above.
* ``test_weight_counts_as_repeated_rows``: a row of weight 2 gives the same diag-VOGN step
  as that row duplicated (N scaled so that N/m agrees; derivation in the test).
* ``test_vadam_theorem1``: Vadam Theorem 1 (eq. 15, and the matrix form eq. 101) by
  enumerating all C(6, 2) mini-batches, and ``mean_gradients`` giving each ĝ_M.
* ``test_run_epoch_matches_manual_steps`` / ``test_run_epoch_padded_last_batch``: one epoch
  of ``run_epoch`` (shuffle=False) equals stepping ``solver.step`` by hand with the keys
  ``fold_in(key, t)``, and a padded last batch equals that batch with its real rows only.
* ``test_invalid_step_not_applied``: steps whose result is invalid (a negative diagonal
  precision, an indefinite dense one, a non-finite mean) leave the state unchanged and are
  counted.

Tolerances
----------
Everything runs in float64 (inside ``jax.enable_x64(True)``; the global config is never
changed). Engine and reference compute the same quantities along different routes (Λ-form
versus s-form, Cholesky versus ``solve``, Gram-matrix eigenvectors versus a dense ``eigh``,
autodiff versus closed-form gradients); their rounding differences are a few ulps times
the condition numbers (≲ 1e3) of the matrices solved, ≲ 1e-12 of the largest entry.
``RTOL = 1e-10`` (max absolute error relative to the largest entry of the expected array,
per array) keeps a margin over that bound (measured: ≤ 8e-15); a wrong formula
(a missing N/m, a squared weight, a wrong bias correction, a missing prior term, a rate
schedule off by one step) changes results by ≳ 1e-4 relative.
"""

from itertools import combinations
from types import SimpleNamespace

import _batch_reference as ref
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skbong.engine import solvers
from skbong.engine.models import MLP
from skbong.engine.solvers import epochs, grads
from skbong.engine.solvers.natural import NGState
from skbong.engine.solvers.slang import SLANGState

RTOL = 1e-10
D = 3  # features
P = D + 1  # weights then intercept (MLP(D, 1, ()) flat layout)
S = 3  # Monte Carlo samples
OBS_VAR = 0.7


def _close(actual, expected, rtol=RTOL, what=""):
    actual = np.asarray(actual, np.float64)
    expected = np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    scale = max(float(np.max(np.abs(expected))), 1e-300)
    err = float(np.max(np.abs(actual - expected)))
    assert err <= rtol * scale, f"{what}: max abs error {err:.3e} vs scale {scale:.3e}"


def _f64(v):
    return jnp.asarray(v, jnp.float64)


def _hyper(
    lam, init_prec, *, obs_var=OBS_VAR, lr=0.3, prec_rate=0.4, momentum=0.0, decay=0.0, n_data=40.0
):
    return solvers.BatchHyper(
        prior_prec=_f64(lam),
        init_prec=_f64(init_prec),
        obs_var=_f64(obs_var),
        lr=_f64(lr),
        prec_rate=_f64(prec_rate),
        momentum=_f64(momentum),
        decay=_f64(decay),
        n_data=_f64(n_data),
    )


def _config(
    solver, likelihood, *, family="diag", curvature="ef", rank=1, mc_samples=S, batch_size=6
):
    return solvers.BatchConfig(
        model=MLP(D, 1, ()),
        likelihood=likelihood,
        solver=solver,
        family=family,
        curvature=curvature,
        rank=rank,
        mc_samples=mc_samples,
        batch_size=batch_size,
    )


LIKELIHOOD = {"gauss": "gaussian", "logistic": "bernoulli"}


def _solver_step(cfg, state, thetas, eps, x, y, w, hyper, t):
    """``solver(cfg).step`` compiled once per configuration and shape (one XLA program is
    cheaper to build than the many per-primitive kernels of an eager run with autodiff)."""
    return _STEP(cfg, state, thetas, eps, x, y, w, hyper, t)


_STEP = jax.jit(lambda cfg, *args: solvers.solver(cfg).step(cfg, *args), static_argnums=0)


def _data(rng, kind, n):
    """x (n, D), y (n, 1) of a linear-Gaussian or logistic model with an intercept."""
    x = rng.normal(size=(n, D))
    f = x @ np.array([0.8, -0.5, 0.3]) + 0.4
    if kind == "gauss":
        y = f + np.sqrt(OBS_VAR) * rng.normal(size=n)
    else:
        y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-f))).astype(np.float64)
    return x, y[:, None]


def _batch(rng, kind, n=6, pad=2):
    """A mini-batch of n rows, random positive weights, row ``pad`` a zero-weight padding row
    whose x and y are not zero."""
    x, y = _data(rng, kind, n)
    w = rng.uniform(0.3, 2.0, size=n)
    w[pad] = 0.0
    return x, y, w


def _pieces(kind, x, y, thetas):
    """Reference per-example log-likelihoods (S, M), gradients (S, M, P), Hessians and GGN
    terms (S, M, P, P) at the samples, closed form."""
    xt = ref.design(x)
    if kind == "gauss":
        return SimpleNamespace(
            loglik=ref.gauss_loglik(xt, y, thetas, OBS_VAR),
            grads=ref.gauss_grads(xt, y, thetas, OBS_VAR),
            hess=ref.gauss_hessians(xt, thetas, OBS_VAR),
            ggn=ref.gauss_ggn(xt, thetas, OBS_VAR),
        )
    return SimpleNamespace(
        loglik=ref.logistic_loglik(xt, y, thetas),
        grads=ref.logistic_grads(xt, y, thetas),
        hess=ref.logistic_hessians(xt, thetas),
        ggn=ref.logistic_ggn(xt, thetas),
    )


# ------------------------------------------------------- the reference side of each solver
# Each reference state is kept in the papers' own parameterisation; ``_check_state`` maps
# it to the engine's to compare.


def _ref_init(case, mean0, lam, init_prec, n_data):
    name = case.solver
    if name in ("vogn", "von"):
        scale = ref.scale_from_precision(
            np.diag(init_prec) if case.family == "full" else init_prec, n_data, lam
        )
        return SimpleNamespace(mean=mean0, scale=scale)
    if name in ("vprop", "vadam"):
        return SimpleNamespace(
            mean=mean0, mom=np.zeros(P), scale=ref.adam_initial_scale(init_prec, lam, n_data)
        )
    if name == "slang":  # U₀ = 0, D₀ = the initial precision (authors' code)
        return SimpleNamespace(
            mean=mean0, u=np.zeros((P, case.rank)), d=np.array(init_prec), mom=np.zeros(P)
        )
    if name == "bbb":
        return SimpleNamespace(
            mean=mean0,
            rho=ref.softplus_inverse(1.0 / np.sqrt(init_prec)),
            m1=np.zeros((2, P)),
            m2=np.zeros((2, P)),
        )
    h0 = (np.asarray(init_prec) - lam) / n_data  # IVON: N (h₀ + δ) = the initial precision
    return SimpleNamespace(mean=mean0, mom=np.zeros(P), hess=h0, h0=h0)


def _ref_sample(case, st, lam, n_data, eps):
    name = case.solver
    if name in ("vogn", "von"):
        sampler = ref.full_sample if case.family == "full" else ref.diag_sample
        return sampler(st.mean, st.scale, n_data, lam, eps)
    if name in ("vprop", "vadam"):
        return ref.diag_sample(st.mean, st.scale, n_data, lam, eps)
    if name == "slang":
        return ref.slang_sample(st.mean, st.u, st.d, eps)
    if name == "bbb":
        return ref.bbb_sample(st.mean, st.rho, eps)
    return ref.ivon_sample(st.mean, st.hess, n_data, lam, eps)


def _ref_step(case, st, pieces, thetas, eps, w, lam, n_data, t):
    alpha = ref.schedule(case.lr, case.decay, t)
    beta = ref.schedule(case.prec_rate, case.decay, t)
    name = case.solver
    g = pieces.grads
    if name == "vogn":
        ggn = pieces.ggn if case.curvature == "ggn" else None
        mean, scale = ref.vogn_step(st.mean, st.scale, g, w, n_data, lam, alpha, beta, ggn=ggn)
        return SimpleNamespace(mean=mean, scale=scale)
    if name == "von":
        mean, scale = ref.von_step(st.mean, st.scale, g, pieces.hess, w, n_data, lam, alpha, beta)
        return SimpleNamespace(mean=mean, scale=scale)
    if name == "vprop":
        mean, scale = ref.vprop_step(st.mean, st.scale, g, w, n_data, lam, alpha, beta)
        return SimpleNamespace(mean=mean, mom=st.mom, scale=scale)
    if name == "vadam":
        mean, mom, scale = ref.vadam_step(
            st.mean, st.mom, st.scale, g, w, n_data, lam, alpha, beta, case.momentum, t
        )
        return SimpleNamespace(mean=mean, mom=mom, scale=scale)
    if name == "slang":
        mean, u, d, mom = ref.slang_step(
            st.mean, st.u, st.d, st.mom, g, w, n_data, lam, alpha, beta, case.momentum, t
        )
        return SimpleNamespace(mean=mean, u=u, d=d, mom=mom)
    if name == "bbb":
        mean, rho, m1, m2 = ref.bbb_step(
            st.mean, st.rho, st.m1, st.m2, eps, g, w, n_data, lam, alpha, beta, case.momentum, t
        )
        return SimpleNamespace(mean=mean, rho=rho, m1=m1, m2=m2)
    mean, mom, hess = ref.ivon_step(
        st.mean, st.mom, st.hess, thetas, g, w, n_data, lam, st.h0, alpha, beta, case.momentum, t
    )
    return SimpleNamespace(mean=mean, mom=mom, hess=hess, h0=st.h0)


def _check_state(case, eng, st, lam, n_data, what):
    _close(eng.mean, st.mean, what=f"{what} mean")
    name = case.solver
    if name in ("vogn", "von"):
        _close(eng.prec, ref.total_precision(st.scale, n_data, lam), what=f"{what} precision")
    elif name in ("vprop", "vadam"):
        _close(eng.scale, st.scale, what=f"{what} s")
        if name == "vadam":
            _close(eng.mom, st.mom, what=f"{what} u")
    elif name == "slang":
        lr = np.asarray(eng.prec_lr)
        assert lr.shape == (P, case.rank)
        _close(lr @ lr.T, st.u @ st.u.T, what=f"{what} U Uᵀ")
        _close(eng.prec_diag, st.d, what=f"{what} d")
        _close(eng.mom, st.mom, what=f"{what} momentum")
    elif name == "bbb":
        _close(eng.rho, st.rho, what=f"{what} rho")
        _close(eng.mom, st.m1, what=f"{what} Adam m")
        _close(eng.sq, st.m2, what=f"{what} Adam v")
    else:
        _close(eng.mom, st.mom, what=f"{what} momentum")
        _close(eng.hess, st.hess, what=f"{what} h")


def _case(
    solver, family="diag", curvature="ef", *, rank=1, lr=0.3, prec_rate=0.4, momentum=0.0, decay=0.0
):
    return SimpleNamespace(
        solver=solver,
        family=family,
        curvature=curvature,
        rank=rank,
        lr=lr,
        prec_rate=prec_rate,
        momentum=momentum,
        decay=decay,
    )


CASES = {
    "vogn-diag-ef-decay": _case("vogn", "diag", "ef", decay=0.51),
    "vogn-diag-ggn": _case("vogn", "diag", "ggn"),
    "vogn-full-ef": _case("vogn", "full", "ef"),
    "vogn-full-ggn-decay": _case("vogn", "full", "ggn", decay=0.51),
    "von-diag": _case("von", "diag"),
    "von-full-decay": _case("von", "full", decay=0.51),
    "vprop-decay": _case("vprop", lr=0.05, decay=0.51),
    "vadam": _case("vadam", lr=0.05, prec_rate=0.3, momentum=0.9),
    "slang-decay": _case("slang", "dlr", rank=2, momentum=0.6, decay=0.51),
    "bbb": _case("bbb", lr=0.05, prec_rate=0.3, momentum=0.8),
    "ivon": _case("ivon", lr=0.1, prec_rate=0.3, momentum=0.9),
}


@pytest.mark.parametrize("kind", ["gauss", "logistic"])
@pytest.mark.parametrize("name", list(CASES))
def test_step_matches_reference(name, kind):
    case = CASES[name]
    seed = sorted(CASES).index(name) * 2 + (kind == "logistic")
    rng = np.random.default_rng(100 + seed)
    n_data = 40.0
    lam = rng.uniform(0.5, 2.0, size=P)
    init_prec = lam + rng.uniform(2.0, 6.0, size=P)
    mean0 = 0.5 * rng.normal(size=P)
    with jax.enable_x64(True):
        cfg = _config(
            case.solver,
            LIKELIHOOD[kind],
            family=case.family,
            curvature=case.curvature,
            rank=case.rank,
        )
        hyper = _hyper(
            lam,
            init_prec,
            obs_var=OBS_VAR if kind == "gauss" else 1.0,
            lr=case.lr,
            prec_rate=case.prec_rate,
            momentum=case.momentum,
            decay=case.decay,
            n_data=n_data,
        )
        solver = solvers.solver(cfg)
        state = solver.init(cfg, _f64(mean0), hyper)
        st = _ref_init(case, mean0, lam, init_prec, n_data)
        _check_state(case, state, st, lam, n_data, "init")
        for t in range(3):
            x, y, w = _batch(rng, kind, pad=t + 1)
            eps = rng.normal(size=(S, P))
            thetas = solver.sample(state, hyper, _f64(eps))
            ref_thetas = _ref_sample(case, st, lam, n_data, eps)
            _close(thetas, ref_thetas, what=f"step {t} samples")
            pieces = _pieces(kind, x, y, ref_thetas)
            state, nll = _solver_step(
                cfg, state, thetas, _f64(eps), _f64(x), _f64(y), _f64(w), hyper, t
            )
            st = _ref_step(case, st, pieces, ref_thetas, eps, w, lam, n_data, t)
            _check_state(case, state, st, lam, n_data, f"step {t}")
            _close(nll, ref.nll(pieces.loglik, w), what=f"step {t} nll")


@pytest.mark.parametrize("solver_name", ["vogn", "slang"])
def test_full_and_dlr_samplers_are_roots(solver_name):
    # θ = μ + A ε: with ε the rows of I, the rows of θ − μ are the columns of A, and
    # A Aᵀ must be the covariance Λ⁻¹.
    rng = np.random.default_rng(7)
    root = rng.normal(size=(P, P))
    mean = rng.normal(size=P)
    with jax.enable_x64(True):
        hyper = _hyper(np.ones(P), np.ones(P))
        if solver_name == "vogn":
            prec = root @ root.T + np.eye(P)
            state = NGState(_f64(mean), _f64(prec))
            cfg = _config("vogn", "gaussian", family="full")
        else:
            u = rng.normal(size=(P, 2))
            d = rng.uniform(0.5, 2.0, size=P)
            prec = ref.dlr_precision(u, d)
            state = SLANGState(_f64(mean), _f64(d), _f64(u), _f64(np.zeros(P)))
            cfg = _config("slang", "gaussian", family="dlr", rank=2)
        thetas = solvers.solver(cfg).sample(state, hyper, _f64(np.eye(P)))
    a = (np.asarray(thetas) - mean).T
    _close(a @ a.T, np.linalg.inv(prec), what="A Aᵀ")


def _exact_posterior(xt, y, lam, obs_var):
    prec = np.diag(lam) + xt.T @ xt / obs_var
    return np.linalg.solve(prec, xt.T @ np.ravel(y) / obs_var), prec


@pytest.mark.parametrize("solver_name,curvature", [("von", "ef"), ("vogn", "ggn")])
def test_exact_posterior_one_step(solver_name, curvature):
    # Full batch (m = N, unit weights), α = β = 1, ε = 0 (θ = μ): Λ' = XᵀX/σ² + diag(λ)
    # (the Hessian = the GGN of the linear-Gaussian model) and
    # μ' = μ − Λ'⁻¹(Λ'μ − Xᵀy/σ²) = Λ'⁻¹Xᵀy/σ², the exact posterior, from any start.
    rng = np.random.default_rng(11)
    n = 12
    x, y = _data(rng, "gauss", n)
    lam = rng.uniform(0.5, 2.0, size=P)
    root = rng.normal(size=(P, P))
    prec0 = root @ root.T + np.eye(P)  # a random dense SPD start
    mean0 = 3.0 * rng.normal(size=P)
    mean_star, prec_star = _exact_posterior(ref.design(x), y, lam, OBS_VAR)
    with jax.enable_x64(True):
        cfg = _config(
            solver_name, "gaussian", family="full", curvature=curvature, mc_samples=1, batch_size=n
        )
        hyper = _hyper(lam, np.ones(P), lr=1.0, prec_rate=1.0, n_data=float(n))
        solver = solvers.solver(cfg)
        state = NGState(_f64(mean0), _f64(prec0))
        eps = _f64(np.zeros((1, P)))
        thetas = solver.sample(state, hyper, eps)
        new, _ = _solver_step(cfg, state, thetas, eps, _f64(x), _f64(y), _f64(np.ones(n)), hyper, 0)
    _close(new.mean, mean_star, what="mean")
    _close(new.prec, prec_star, what="precision")


@pytest.mark.parametrize("family", ["diag", "full"])
def test_vogn_ef_fixed_point(family):
    # At θ = μ = μ* (ε = 0) the gradient of the negative log joint, ĝ + λμ*, is zero, so the
    # mean stays; with β = 1 the precision is the EF plus the prior:
    # diag(λ) + Σᵢ gᵢgᵢᵀ = diag(λ) + Σᵢ rᵢ² x̃ᵢx̃ᵢᵀ/σ⁴ (rᵢ = yᵢ − x̃ᵢ·μ*), not λ + XᵀX/σ².
    rng = np.random.default_rng(12)
    n = 12
    x, y = _data(rng, "gauss", n)
    xt = ref.design(x)
    lam = rng.uniform(0.5, 2.0, size=P)
    mean_star, _ = _exact_posterior(xt, y, lam, OBS_VAR)
    r = np.ravel(y) - xt @ mean_star
    ef_prec = np.diag(lam) + (xt * (r * r)[:, None]).T @ xt / OBS_VAR**2
    init_prec = lam + rng.uniform(1.0, 3.0, size=P)
    with jax.enable_x64(True):
        cfg = _config("vogn", "gaussian", family=family, curvature="ef", mc_samples=1, batch_size=n)
        hyper = _hyper(lam, init_prec, lr=1.0, prec_rate=1.0, n_data=float(n))
        solver = solvers.solver(cfg)
        state = solver.init(cfg, _f64(mean_star), hyper)
        eps = _f64(np.zeros((1, P)))
        thetas = solver.sample(state, hyper, eps)
        new, _ = _solver_step(cfg, state, thetas, eps, _f64(x), _f64(y), _f64(np.ones(n)), hyper, 0)
    _close(new.mean, mean_star, what="mean")
    _close(new.prec, ef_prec if family == "full" else np.diag(ef_prec), what="precision")


def test_slang_full_rank_equals_vogn_full():
    # SLANG with L = P keeps every eigenpair: U'U'ᵀ = (1−β)UUᵀ + βĜ, Δ = 0, so
    # U'U'ᵀ + D' = (1−β)(UUᵀ + D) + β(Ĝ + λ): full VOGN-EF, started from Λ₀ = diag(D₀).
    rng = np.random.default_rng(13)
    n_data = 30.0
    lam = rng.uniform(0.5, 2.0, size=P)
    init_prec = lam + rng.uniform(2.0, 6.0, size=P)
    mean0 = 0.5 * rng.normal(size=P)
    with jax.enable_x64(True):
        hyper = _hyper(lam, init_prec, lr=0.3, prec_rate=0.4, momentum=0.0, n_data=n_data)
        cfg_s = _config("slang", "gaussian", family="dlr", rank=P)
        cfg_v = _config("vogn", "gaussian", family="full", curvature="ef")
        sl, vg = solvers.solver(cfg_s), solvers.solver(cfg_v)
        s_state = sl.init(cfg_s, _f64(mean0), hyper)
        v_state = vg.init(cfg_v, _f64(mean0), hyper)
        np.testing.assert_array_equal(np.asarray(s_state.prec_lr), 0.0)
        for t in range(2):
            x, y, w = _batch(rng, "gauss")
            eps = _f64(rng.normal(size=(S, P)))
            thetas = _f64(mean0 + 0.4 * rng.normal(size=(S, P)))  # the same θ for both
            args = (thetas, eps, _f64(x), _f64(y), _f64(w), hyper, t)
            s_state, s_nll = _solver_step(cfg_s, s_state, *args)
            v_state, v_nll = _solver_step(cfg_v, v_state, *args)
            u = np.asarray(s_state.prec_lr)
            _close(s_state.mean, v_state.mean, what=f"step {t} mean")
            _close(
                u @ u.T + np.diag(np.asarray(s_state.prec_diag)),
                v_state.prec,
                what=f"step {t} precision",
            )
            _close(s_nll, v_nll, what=f"step {t} nll")


def test_vprop_vadam_reference_identity():
    # Vprop (eq. 14) is Vadam (Fig. 1) with γ₁ = 0 and no bias correction: u' = ĝ + λ̃μ.
    rng = np.random.default_rng(14)
    n_data = 40.0
    lam = rng.uniform(0.5, 2.0, size=P)
    mean = rng.normal(size=P)
    scale = rng.uniform(0.1, 1.0, size=P)
    mean_v, scale_v, mom = mean.copy(), scale.copy(), np.zeros(P)
    for t in range(3):
        x, y, w = _batch(rng, "gauss")
        thetas = ref.diag_sample(mean, scale, n_data, lam, rng.normal(size=(S, P)))
        grads = ref.gauss_grads(ref.design(x), y, thetas, OBS_VAR)
        mean, scale = ref.vprop_step(mean, scale, grads, w, n_data, lam, 0.05, 0.3)
        mean_v, mom, scale_v = ref.vadam_step(
            mean_v, mom, scale_v, grads, w, n_data, lam, 0.05, 0.3, 0.0, t, bias_correction=False
        )
        _close(mean_v, mean, rtol=1e-14, what="mean")
        _close(scale_v, scale, rtol=1e-14, what="s")
    # and with γ₁ > 0 and bias correction they differ (the identity is not vacuous)
    mean_b, _, _ = ref.vadam_step(
        mean, np.zeros(P), scale, grads, w, n_data, lam, 0.05, 0.3, 0.9, 2
    )
    assert (
        np.max(np.abs(mean_b - ref.vprop_step(mean, scale, grads, w, n_data, lam, 0.05, 0.3)[0]))
        > 1e-4
    )


@pytest.mark.parametrize("curvature", ["ef", "ggn"])
def test_weight_counts_as_repeated_rows(curvature):
    # Batch A: rows (r1, r2, r3) with weights (2, 1, 1) and a padding row: m_A = 3 real rows.
    # Batch B: rows (r1, r1, r2, r3), unit weights: m_B = 4.
    # The diag-VOGN step depends on N only through the data-scale sums (N/m) Σᵢ wᵢ gᵢ and
    # (N/m) Σᵢ wᵢ gᵢ∘gᵢ (the Λ-form state and the samples do not involve N), and
    # Σᵢ wᵢ gᵢ = 2 g₁ + g₂ + g₃ in both batches iff a weight enters once (w gᵢgᵢᵀ, not w²).
    # So the two steps agree iff N_A / m_A = N_B / m_B, i.e. N_A / 3 = N_B / 4: each batch
    # is a uniform sample whose rows stand for N/m data rows each. Take N_A = 30, N_B = 40.
    rng = np.random.default_rng(15)
    x, y = _data(rng, "gauss", 4)
    lam = rng.uniform(0.5, 2.0, size=P)
    init_prec = lam + rng.uniform(2.0, 6.0, size=P)
    mean0 = 0.5 * rng.normal(size=P)
    xa, ya, wa = x, y, np.array([2.0, 1.0, 1.0, 0.0])  # the last row is padding
    xb, yb, wb = x[[0, 0, 1, 2]], y[[0, 0, 1, 2]], np.ones(4)
    with jax.enable_x64(True):
        cfg = _config("vogn", "gaussian", family="diag", curvature=curvature, batch_size=4)
        solver = solvers.solver(cfg)
        ha = _hyper(lam, init_prec, n_data=30.0)
        hb = _hyper(lam, init_prec, n_data=40.0)
        state = solver.init(cfg, _f64(mean0), ha)
        eps = _f64(rng.normal(size=(S, P)))
        thetas = solver.sample(state, ha, eps)
        _close(solver.sample(state, hb, eps), thetas, rtol=0.0, what="samples")
        new_a, nll_a = _solver_step(cfg, state, thetas, eps, _f64(xa), _f64(ya), _f64(wa), ha, 0)
        new_b, nll_b = _solver_step(cfg, state, thetas, eps, _f64(xb), _f64(yb), _f64(wb), hb, 0)
    _close(new_a.mean, new_b.mean, what="mean")
    _close(new_a.prec, new_b.prec, what="precision")
    _close(nll_a, nll_b, what="nll")
    # the step moved (else the comparison would be vacuous)
    assert np.max(np.abs(np.asarray(new_a.prec) - init_prec)) > 1e-2


def test_vadam_theorem1():
    # Vadam Theorem 1: with ĝ_M = (1/M) Σ_{i∈M} ∇fᵢ over the C(N, M) equally likely
    # mini-batches, E[ĝ_M ĝ_Mᵀ] = w G + (1 − w) g gᵀ (eq. 101), diagonal: eq. 15, with
    # G = (1/N) Σ ∇fᵢ∇fᵢᵀ (the paper's "GGN"), g = (1/N) Σ ∇fᵢ, w = (N − M)/(M(N − 1)).
    rng = np.random.default_rng(16)
    n, m = 6, 2
    x, y = _data(rng, "gauss", n)
    theta = rng.normal(size=P)
    loss_grads = -ref.gauss_grads(ref.design(x), y, theta[None, :], OBS_VAR)[0]  # ∇fᵢ (N, P)
    lhs, rhs, batches = ref.theorem1_sides(loss_grads, m)
    assert len(batches) == 15
    _close(lhs, rhs, rtol=1e-13, what="eq. 101")
    _close(np.diag(lhs), np.diag(rhs), rtol=1e-13, what="eq. 15")
    # the GM is biased towards g² at this M: not equal to the EF diagonal (non-vacuous)
    assert np.max(np.abs(np.diag(lhs) - np.mean(loss_grads**2, axis=0))) > 1e-3
    # the engine's mean mini-batch gradient, −(1/m) Σᵢ wᵢ gᵢ, on each mini-batch (and with a
    # zero-weight padding row appended, which must not change it)
    log_grads = -loss_grads
    with jax.enable_x64(True):
        for idx, g_batch in zip(combinations(range(n), m), batches):
            rows = log_grads[list(idx)][None]  # (1, M, P)
            got = grads.mean_gradients(_f64(rows), _f64(np.ones(m)))
            _close(got[0], g_batch, rtol=1e-13, what=f"mean_gradients {idx}")
            padded = np.concatenate([rows, 5.0 * np.ones((1, 1, P))], axis=1)
            got = grads.mean_gradients(_f64(padded), _f64(np.r_[np.ones(m), 0.0]))
            _close(got[0], g_batch, rtol=1e-13, what=f"padded mean_gradients {idx}")


# ------------------------------------------------------------------------- run_epoch


def _epoch_setup(solver_name, n, batch_size, seed):
    rng = np.random.default_rng(seed)
    x, y = _data(rng, "gauss", n)
    w = rng.uniform(0.5, 1.5, size=n)
    lam = rng.uniform(0.5, 2.0, size=P)
    init_prec = lam + rng.uniform(2.0, 6.0, size=P)
    mean0 = 0.5 * rng.normal(size=P)
    family = "full" if solver_name == "vogn" else "diag"
    cfg = _config(solver_name, "gaussian", family=family, batch_size=batch_size)
    hyper = _hyper(lam, init_prec, lr=0.1, prec_rate=0.3, momentum=0.8, n_data=float(n))
    return cfg, hyper, _f64(x), _f64(y), _f64(w), _f64(mean0)


def _manual_step(cfg, state, x, y, w, hyper, key, t):
    solver = solvers.solver(cfg)
    eps = jax.random.normal(jax.random.fold_in(key, t), (cfg.mc_samples, P), jnp.float64)
    thetas = solver.sample(state, hyper, eps)
    return _solver_step(cfg, state, thetas, eps, x, y, w, hyper, t)


def _manual_epoch(cfg, state, x, y, w, hyper, key, t0, batches):
    """The steps of an epoch one by one (step t0 + k on the rows ``batches[k]``): the final
    state and the summed mini-batch NLL."""
    total = 0.0
    for k, rows in enumerate(batches):
        state, nll_t = _manual_step(cfg, state, x[rows], y[rows], w[rows], hyper, key, t0 + k)
        total += float(nll_t)
    return state, total


def _check_trees(actual, expected, what):
    for a, b in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)):
        _close(a, b, what=what)


def test_run_epoch_matches_manual_steps():
    # Vadam (momentum and bias corrections depend on the global step t) from t0 = 5.
    n, size, t0 = 12, 4, 5
    with jax.enable_x64(True):
        cfg, hyper, x, y, w, mean0 = _epoch_setup("vadam", n, size, 21)
        key = jax.random.PRNGKey(3)
        state0 = epochs.init_state(cfg, mean0, hyper)
        state, nll, _, bad = epochs.run_epoch(cfg, state0, t0, x, y, w, hyper, key, shuffle=False)
        batches = [slice(k * size, (k + 1) * size) for k in range(n // size)]
        manual, total = _manual_epoch(cfg, state0, x, y, w, hyper, key, t0, batches)
    assert int(bad) == 0
    _check_trees(state, manual, "state")
    _close(nll, total, what="nll")
    assert np.max(np.abs(np.asarray(state.mean) - np.asarray(mean0))) > 1e-3


def test_run_epoch_padded_last_batch():
    # Full VOGN, N = 10, M = 4: the last mini-batch has 2 real rows and 2 padding rows; it
    # must act as the batch of those 2 rows alone (m = 2 in N/m).
    n, size, t0 = 10, 4, 0
    with jax.enable_x64(True):
        cfg, hyper, x, y, w, mean0 = _epoch_setup("vogn", n, size, 22)
        key = jax.random.PRNGKey(4)
        state0 = epochs.init_state(cfg, mean0, hyper)
        state, nll, _, bad = epochs.run_epoch(cfg, state0, t0, x, y, w, hyper, key, shuffle=False)
        batches = [slice(0, 4), slice(4, 8), slice(8, 10)]
        manual, total = _manual_epoch(cfg, state0, x, y, w, hyper, key, t0, batches)
    assert int(bad) == 0
    _check_trees(state, manual, "state")
    _close(nll, total, what="nll")


def test_run_epoch_noise_chunks(monkeypatch):
    # The draws are made a chunk of steps at a time; with the budget cut to two steps'
    # draws, an epoch of 5 steps runs as 3 chunks of 2 with one padding step, which must
    # change nothing: every real step still uses fold_in(key, t) and the padding step is
    # neither applied, nor counted as refused, nor added to the loss.
    n, size, t0 = 20, 4, 3
    assert epochs.noise_chunks(5, 7) == (5, 1)
    assert epochs.noise_chunks(5, epochs.NOISE_BUDGET // 2) == (2, 3)
    assert epochs.noise_chunks(7, epochs.NOISE_BUDGET // 3) == (3, 3)
    with jax.enable_x64(True):
        cfg, hyper, x, y, w, mean0 = _epoch_setup("vadam", n, size, 24)
        key = jax.random.PRNGKey(6)
        state0 = epochs.init_state(cfg, mean0, hyper)
        monkeypatch.setattr(epochs, "NOISE_BUDGET", 2 * cfg.mc_samples * P)
        epochs.run_epoch.clear_cache()
        try:
            state, nll, _, bad = epochs.run_epoch(
                cfg, state0, t0, x, y, w, hyper, key, shuffle=False
            )
        finally:
            epochs.run_epoch.clear_cache()
        batches = [slice(k * size, (k + 1) * size) for k in range(n // size)]
        manual, total = _manual_epoch(cfg, state0, x, y, w, hyper, key, t0, batches)
    assert int(bad) == 0
    _check_trees(state, manual, "state")
    _close(nll, total, what="nll")


@pytest.mark.parametrize("fault", ["negative-precision", "indefinite-precision", "infinite-rate"])
def test_invalid_step_not_applied(fault):
    # negative-precision: VON-diag on logistic regression with β = 2 from Λ₀ = 1e3 I:
    # Λ' = −Λ₀ + 2(Ĥ + λ) < 0 (Ĥ ≤ (N/m) Σᵢ x̃ᵢ²/4 ≈ 5 here), every step.
    # indefinite-precision: the same with VON-full: the dense Λ' is not positive definite,
    # so the Cholesky solve of the mean step gives NaN.
    # infinite-rate: Vadam with α = ∞ gives a non-finite mean, every step.
    n, size = 12, 4
    rng = np.random.default_rng(23)
    kind = "gauss" if fault == "infinite-rate" else "logistic"
    x, y = _data(rng, kind, n)
    w = np.ones(n)
    lam = np.ones(P)
    with jax.enable_x64(True):
        if fault == "infinite-rate":
            cfg = _config("vadam", "gaussian", batch_size=size)
            hyper = _hyper(lam, lam + 3.0, lr=np.inf, prec_rate=0.3, momentum=0.9, n_data=float(n))
        else:
            family = "diag" if fault == "negative-precision" else "full"
            cfg = _config("von", "bernoulli", family=family, batch_size=size)
            hyper = _hyper(
                lam, np.full(P, 1e3), obs_var=1.0, lr=0.1, prec_rate=2.0, n_data=float(n)
            )
        state0 = epochs.init_state(cfg, _f64(0.3 * rng.normal(size=P)), hyper)
        state, _, _, bad = epochs.run_epoch(
            cfg, state0, 0, _f64(x), _f64(y), _f64(w), hyper, jax.random.PRNGKey(5), shuffle=False
        )
    assert int(bad) == n // size
    for a, b in zip(jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(state0)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_estimators_take_a_solvers_facts_from_its_record(monkeypatch):
    # the estimators hold no table of their own: change a record's rates, families or
    # meaning of "diag" and the estimator follows (a copy of a fact elsewhere would not)
    from dataclasses import replace

    from skbong import VariationalRegressor

    def family_of(est):
        return est._batch_config(3, 1, est._validate_all_params()).family

    base = solvers.SOLVERS["vprop"]
    assert VariationalRegressor(solver="vprop")._rate(None, 1) == base.rates.prec_rate
    record = replace(base, rates=solvers.Rates(0.5, 0.25, 0.125), families=("diag", "full"))
    monkeypatch.setitem(solvers.SOLVERS, "vprop", record)
    est = VariationalRegressor(solver="vprop", family="full")
    assert [est._rate(None, i) for i in range(3)] == [0.5, 0.25, 0.125]
    assert est._rate(0.3, 0) == 0.3
    est._validate_all_params()  # "full" is now among the record's families
    net = VariationalRegressor(solver="vprop", hidden_layer_sizes=(4,))
    assert family_of(net) == "diag"  # a network takes the record's first family
    assert family_of(VariationalRegressor(solver="vprop")) == "full"  # a small linear model
    monkeypatch.setitem(solvers.SOLVERS, "vprop", replace(base, families=("dlr", "diag")))
    assert family_of(VariationalRegressor(solver="vprop")) == "dlr"
    monkeypatch.setitem(solvers.SOLVERS, "vprop", replace(base, families=("dlr",), diag_family="dlr"))
    assert family_of(VariationalRegressor(solver="vprop", family="diag")) == "dlr"
    with pytest.raises(ValueError, match="not available with solver='vprop'"):
        VariationalRegressor(solver="vprop", family="full")._validate_all_params()
