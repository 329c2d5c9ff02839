"""Named special cases of the BONG family match their published updates.

Each test takes one ``E.update`` (a few inner iterates for BLR / BBB) from a non-trivial belief
(random mean, random dense / diagonal / diagonal-plus-low-rank covariance) on a small
nonlinear MLP, and compares it with the published equations of appendix E of Jones, Chang &
Murphy (2024), implemented independently in numpy float64 in ``tests/_reference.py``:

=========================  =======================  ==========================================
special case               engine configuration     published equations
=========================  =======================  ==========================================
CM-EKF (Gaussian)          bong, lin_hess, full     130–132, H the Jacobian of f
CM-EKF (Bernoulli, h-form) bong, lin_hess, full     130–132 with h = σ(f), H = p(1−p)J,
                                                    R = p(1−p) (Prop. 4.2: f-form = h-form)
VD-EKF                     bong, lin_hess, diag     214–215
LO-FI                      bong, lin_hess, dlr      287–292 (numpy SVD of W̃ = [W, HᵀA])
explicit RVGA              bong, mc_ef/mc_hess,     120–121, per-sample gradients / Hessians
                           full                     at the engine's draws
online VON / VOGN          blr, mc_hess/mc_ef, diag 218–219, I = 2
online SLANG               blr, mc_ef, dlr          293–301, I = 1 and 2
online BBB                 bbb, mc_ef, diag_moment  260–261, I = 2
BOG full, moment           bog, ·, full_moment      177–178
BOG diag, natural          bog, ·, diag             224–225
LO-FI predict              dlr predict              exact OU covariance γ²Σ + q_eff I
=========================  =======================  ==========================================

The Monte Carlo cases use the draws the engine makes: inner iterate i uses the key
``fold_in(key, i)`` (``mc_hess`` samples with the first half of ``split`` of that key), and the
standard normals ε (M, P) are mapped to θ by each family's covariance root (reference module
docstring); per-sample gradients and Hessians are then computed analytically by the
reference (numpy chain rule for the tanh MLP, itself checked against ``jax.grad`` /
``jax.hessian`` in ``test_reference_derivatives``).
Low-rank factors are compared through W Wᵀ (the SVD leaves signs and rotations free).

Tolerance: 1e-9 relative (max|Δ| / max|ref|), float64. Every quantity is a handful of
backward-stable dense operations (Cholesky, solves, SVD) on matrices whose condition numbers
are below 10 here (prior and posterior precisions), so the expected error is a few
κ · ε₆₄ ≈ 1e-15 per step; 1e-9 leaves a wide margin, while an algebraic mistake (a missing
factor 2 or α, a transpose, a wrong key) changes the result at the size of the update itself.
For the small-rate BOG / BBB steps the increments new − old are compared as well (they are
known to ~ε₆₄ |state| / |increment| ≈ 1e-13), so such a mistake is an O(1) relative error.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skbong import engine as E

try:  # tests/ as a package or as a plain directory on sys.path
    from . import _reference as ref
except ImportError:
    import _reference as ref

TOL = 1e-9
KEY_SEED = 42


def _model(c=1, hidden=3):
    return E.MLP(2, c, hidden=(hidden,), activation="tanh")


def _sizes(model):
    return (model.n_features, *model.hidden, model.n_outputs)


def _data(c, likelihood="gaussian", b=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(b, 2))
    if likelihood == "bernoulli":
        y = np.array([[1.0], [0.0], [1.0]])[:b]
    else:
        y = np.sin(x[:, :1] + np.arange(c)[None, :]) + 0.2 * rng.normal(size=(b, c))
    return x, y, np.ones(b)


def _state(family, p, rank=3, seed=1):
    """A non-trivial belief as numpy arrays: mean and covariance / variances / (Υ, W)."""
    rng = np.random.default_rng(seed)
    mean = 0.8 * rng.normal(size=p)
    if family in ("full", "full_moment"):
        a = rng.normal(size=(p, p))
        return mean, 0.05 * a @ a.T / p + 0.05 * np.eye(p)
    if family in ("diag", "diag_moment"):
        return mean, rng.uniform(0.05, 0.3, size=p)
    return mean, rng.uniform(2.0, 6.0, size=p), 0.5 * rng.normal(size=(p, rank))


def _engine_state(family, st):
    if family == "dlr":
        return E.DLRState(*(jnp.asarray(a, jnp.float64) for a in st))
    return E.MeanCov(*(jnp.asarray(a, jnp.float64) for a in st))


def _hyper(obs_var, lr=1.0, prior_var=1.0, drift=1.0, noise=0.0):
    return E.Hyper(*(jnp.asarray(v, jnp.float64) for v in (prior_var, obs_var, lr, drift, noise)))


_UPDATE = jax.jit(E.update, static_argnums=0)  # one compile per configuration


def _update(cfg, st, x, y, w, hyper):
    out = _UPDATE(
        cfg,
        _engine_state(cfg.family, st),
        jnp.asarray(x, jnp.float64),
        jnp.asarray(y, jnp.float64),
        jnp.asarray(w, jnp.float64),
        hyper,
        jax.random.PRNGKey(KEY_SEED),
    )
    return tuple(np.asarray(a, np.float64) for a in out)


def _eps(i, m, p, split):
    """The standard normals the engine's sampler draws at inner iterate i."""
    key = jax.random.fold_in(jax.random.PRNGKey(KEY_SEED), i)
    if split:
        key = jax.random.split(key)[0]
    return np.asarray(jax.random.normal(key, (m, p), jnp.float64))


def _obs_cov(obs_var, b, c):
    return np.diag(np.tile(np.broadcast_to(obs_var, (c,)), b))


def _errors(engine, reference, start=None):
    """Largest relative error over the components; with ``start`` (the belief before the
    update) the increments new − start are compared, so that a small-rate step (BOG, BBB)
    is checked at full relative precision rather than diluted by the state it moves."""
    if start is not None:
        engine = [a - s for a, s in zip(engine, start)]
        reference = [b - s for b, s in zip(reference, start)]
    errs = [ref.rel_err(a, b) for a, b in zip(engine, reference)]
    print("rel errs", ", ".join(f"{e:.1e}" for e in errs))
    return max(errs)


def _mc_moments(sizes, thetas, x, y, w, obs_var, hess):
    """g = mean gₘ and G: −mean gₘgₘᵀ (MC-EF) or mean ∇² log p (MC-HESS), dense."""
    grads, hessians = ref.sample_derivatives(thetas, x, y, w, obs_var, sizes)
    g = grads.mean(axis=0)
    if hess:
        return g, hessians.mean(axis=0), grads
    return g, -grads.T @ grads / len(thetas), grads


# ------------------------------------------------------------- the reference itself


@pytest.mark.parametrize("likelihood", ["gaussian", "bernoulli"])
def test_reference_derivatives(likelihood):
    """The reference's analytic forward pass, Jacobians, log-likelihood gradients and Hessians
    agree with the engine's ``MLP.apply`` (parameter layout) and with ``jax.jacrev`` /
    ``jax.grad`` / ``jax.hessian`` of the reference's own ``jax.numpy`` forward pass."""
    c = 2 if likelihood == "gaussian" else 1
    obs_var = np.array([0.3, 0.8]) if likelihood == "gaussian" else np.asarray(1.0)
    with jax.enable_x64(True):
        model = _model(c=c)
        sizes = _sizes(model)
        x, y, w = _data(c, likelihood, b=3)
        w = np.array([0.5, 1.0, 2.0])
        theta = _state("diag", model.n_params())[0]
        args = tuple(jnp.asarray(a) for a in (theta, x, y, w, obs_var))
        loglik = ref.mlp_loglik(sizes, likelihood)
        auto = jax.jit(
            lambda *a: (
                jax.jacrev(ref.mlp_apply)(a[0], a[1], sizes),
                jax.grad(loglik)(*a),
                jax.hessian(loglik)(*a),
            )
        )(*args)
        engine_f = np.asarray(model.apply(args[0], args[1]))
    f, jac, _ = ref.mlp1_derivatives(theta, x, sizes)
    grad, hess = ref.loglik_derivatives(theta, x, y, w, obs_var, sizes, likelihood)
    assert _errors((f, jac, grad, hess), (engine_f, *auto)) <= TOL


# ----------------------------------------------------------------------- EKF family


@pytest.mark.parametrize("family", ["full", "diag"])
def test_ekf_gaussian(family):
    """CM-EKF (eqs. 130–132) and VD-EKF (eqs. 214–215), two outputs, two rows."""
    with jax.enable_x64(True):
        model = _model(c=2)
        p = model.n_params()
        obs_var = np.array([0.3, 0.8])
        x, y, w = _data(2)
        st = _state(family, p)
        cfg = E.Config(model, "gaussian", family, 1, "bong", "lin_hess")
        new = _update(cfg, st, x, y, w, _hyper(obs_var))
        h, yhat = ref.stacked_jacobian(st[0], x, _sizes(model))
        r = _obs_cov(obs_var, 2, 2)
        update = ref.ekf_update if family == "full" else ref.vdekf_update
        expected = update(st[0], st[1], h, r, y.reshape(-1), yhat.reshape(-1))
    assert _errors(new, expected) <= TOL


def test_cm_ekf_bernoulli_h_form():
    """Prop. 4.2: the engine's linear(f)-delta Bernoulli step equals the CM-EKF on
    h = σ(f) with H = p(1 − p) J and R = diag(p(1 − p))."""
    with jax.enable_x64(True):
        model = _model(c=1)
        p = model.n_params()
        x, y, w = _data(1, "bernoulli")
        st = _state("full", p)
        cfg = E.Config(model, "bernoulli", "full", 1, "bong", "lin_hess")
        new = _update(cfg, st, x, y, w, _hyper(1.0))
        jac, logits = ref.stacked_jacobian(st[0], x, _sizes(model))
        prob = 1.0 / (1.0 + np.exp(-logits.reshape(-1)))
        v = prob * (1.0 - prob)
        expected = ref.ekf_update(st[0], st[1], v[:, None] * jac, np.diag(v), y.reshape(-1), prob)
    assert _errors(new, expected) <= TOL


def test_lofi():
    """LO-FI (eqs. 287–292), rank 3, two outputs with different noise, two rows."""
    with jax.enable_x64(True):
        model = _model(c=2)
        p = model.n_params()
        obs_var = np.array([0.3, 0.8])
        x, y, w = _data(2)
        st = _state("dlr", p, rank=3)
        cfg = E.Config(model, "gaussian", "dlr", 3, "bong", "lin_hess")
        mean, ups, lr = _update(cfg, st, x, y, w, _hyper(obs_var))
        h, yhat = ref.stacked_jacobian(st[0], x, _sizes(model))
        r = _obs_cov(obs_var, 2, 2)
        e_mean, e_ups, e_lr = ref.lofi_update(*st, h, r, y.reshape(-1), yhat.reshape(-1))
    assert _errors((mean, ups, lr @ lr.T), (e_mean, e_ups, e_lr @ e_lr.T)) <= TOL


# ---------------------------------------------------------------- Monte Carlo cases


@pytest.mark.parametrize("hessian", ["mc_ef", "mc_hess"])
def test_explicit_rvga(hessian):
    """Explicit RVGA = BONG-FC (eqs. 120–121) with MC-EF or MC-HESS, M = 4."""
    m = 4
    with jax.enable_x64(True):
        model = _model(c=1)
        sizes, p, obs_var = _sizes(model), model.n_params(), 0.5
        x, y, w = _data(1)
        st = _state("full", p)
        cfg = E.Config(model, "gaussian", "full", 1, "bong", hessian, mc_samples=m)
        new = _update(cfg, st, x, y, w, _hyper(obs_var))
        thetas = ref.sample_full(st[0], st[1], _eps(0, m, p, split=hessian == "mc_hess"))
        g, big_g, _ = _mc_moments(sizes, thetas, x, y, w, obs_var, hessian == "mc_hess")
        assert np.all(np.linalg.eigvalsh(np.linalg.inv(st[1]) - big_g) > 0)
        expected = ref.rvga_update(st[0], st[1], g, big_g)
    assert _errors(new, expected) <= TOL


@pytest.mark.parametrize("hessian", ["mc_hess", "mc_ef"], ids=["VON", "VOGN"])
def test_online_von_vogn(hessian):
    """BLR-diag (eqs. 218–219), I = 2 iterates re-sampled from the current iterate, M = 3."""
    m, n_iter, alpha = 3, 2, 0.5
    with jax.enable_x64(True):
        model = _model(c=1)
        sizes, p, obs_var = _sizes(model), model.n_params(), 0.5
        x, y, w = _data(1)
        st = _state("diag", p)
        cfg = E.Config(model, "gaussian", "diag", 1, "blr", hessian, n_iter=n_iter, mc_samples=m)
        new = _update(cfg, st, x, y, w, _hyper(obs_var, lr=alpha))
        mu, var = st
        for i in range(n_iter):
            thetas = ref.sample_diag(mu, var, _eps(i, m, p, split=hessian == "mc_hess"))
            g, big_g, _ = _mc_moments(sizes, thetas, x, y, w, obs_var, hessian == "mc_hess")
            mu, var = ref.von_step(mu, var, st[0], st[1], g, np.diag(big_g), alpha)
            assert np.all(var > 0)
    assert _errors(new, (mu, var)) <= TOL


@pytest.mark.parametrize("n_iter", [1, 2])
def test_online_slang(n_iter):
    """BLR-DLR with MC-EF (eqs. 293–301), rank 3, M = 3."""
    m, rank, alpha = 3, 3, 0.5
    with jax.enable_x64(True):
        model = _model(c=1)
        sizes, p, obs_var = _sizes(model), model.n_params(), 0.5
        x, y, w = _data(1)
        st = _state("dlr", p, rank=rank)
        cfg = E.Config(model, "gaussian", "dlr", rank, "blr", "mc_ef", n_iter=n_iter, mc_samples=m)
        mean, ups, lr = _update(cfg, st, x, y, w, _hyper(obs_var, lr=alpha))
        mu, u, wl = st
        for i in range(n_iter):
            thetas = ref.sample_dlr(mu, u, wl, _eps(i, m, p, split=False))
            g, _, grads = _mc_moments(sizes, thetas, x, y, w, obs_var, False)
            mu, u, wl = ref.slang_step(mu, u, wl, *st, g, grads.T / np.sqrt(m), alpha)
    assert _errors((mean, ups, lr @ lr.T), (mu, u, wl @ wl.T)) <= TOL


def test_online_bbb():
    """BBB-diag-moment with MC-EF (eqs. 260–261), I = 2, M = 3."""
    m, n_iter, alpha = 3, 2, 0.005
    with jax.enable_x64(True):
        model = _model(c=1)
        sizes, p, obs_var = _sizes(model), model.n_params(), 0.5
        x, y, w = _data(1)
        st = _state("diag_moment", p)
        cfg = E.Config(
            model, "gaussian", "diag_moment", 1, "bbb", "mc_ef", n_iter=n_iter, mc_samples=m
        )
        new = _update(cfg, st, x, y, w, _hyper(obs_var, lr=alpha))
        mu, var = st
        for i in range(n_iter):
            thetas = ref.sample_diag(mu, var, _eps(i, m, p, split=False))
            g, big_g, _ = _mc_moments(sizes, thetas, x, y, w, obs_var, False)
            mu, var = ref.bbb_diag_moment_step(mu, var, st[0], st[1], g, np.diag(big_g), alpha)
            assert np.all(var > 0)
    assert _errors(new, (mu, var)) <= TOL
    assert _errors(new, (mu, var), start=st) <= TOL


# ---------------------------------------------------------------------- BOG (GD forms)


def _gradients(hessian, family, model, st, x, y, w, obs_var, m):
    """(g, G) of LIN-HESS (at the mean) or MC-EF (at the engine's draws), dense G."""
    sizes, p = _sizes(model), model.n_params()
    if hessian == "lin_hess":
        h, f = ref.stacked_jacobian(st[0], x, sizes)
        rinv = np.linalg.inv(_obs_cov(obs_var, x.shape[0], model.n_outputs))
        return h.T @ rinv @ (y.reshape(-1) - f.reshape(-1)), -h.T @ rinv @ h
    eps = _eps(0, m, p, split=False)
    thetas = ref.sample_full(*st, eps) if family == "full_moment" else ref.sample_diag(*st, eps)
    g, big_g, _ = _mc_moments(sizes, thetas, x, y, w, obs_var, False)
    return g, big_g


@pytest.mark.parametrize("hessian", ["lin_hess", "mc_ef"])
@pytest.mark.parametrize("family", ["full_moment", "diag"])
def test_bog(family, hessian):
    """BOG full moment (eqs. 177–178) and BOG diag natural (eqs. 224–225)."""
    m, alpha = 3, 0.002
    with jax.enable_x64(True):
        model = _model(c=1)
        p, obs_var = model.n_params(), 0.5
        x, y, w = _data(1)
        st = _state(family, p)
        cfg = E.Config(model, "gaussian", family, 1, "bog", hessian, mc_samples=m)
        new = _update(cfg, st, x, y, w, _hyper(obs_var, lr=alpha))
        g, big_g = _gradients(hessian, family, model, st, x, y, w, obs_var, m)
        if family == "full_moment":
            expected = ref.bog_full_moment(st[0], st[1], g, big_g, alpha)
            assert np.all(np.linalg.eigvalsh(expected[1]) > 0)
        else:
            expected = ref.bog_diag_natural(st[0], st[1], g, np.diag(big_g), alpha)
            assert np.all(expected[1] > 0)
    assert _errors(new, expected) <= TOL
    assert _errors(new, expected, start=st) <= TOL


# ------------------------------------------------------------------------ predict step


@pytest.mark.parametrize("drift, noise", [(0.9, 0.0), (0.7, 0.05), (1.0, 0.1)])
def test_lofi_predict_is_exact_ou(drift, noise):
    """The DLR (LO-FI) predict step represents γ²Σ + q_eff I exactly (Woodbury)."""
    prior_var, p, rank = 1.5, 13, 3
    with jax.enable_x64(True):
        st = _state("dlr", p, rank=rank)
        mean0 = np.random.default_rng(7).normal(size=p)
        out = E.FAMILIES["dlr"].predict(
            _engine_state("dlr", st),
            jnp.asarray(mean0),
            _hyper(1.0, prior_var=prior_var, drift=drift, noise=noise),
        )
        mean, ups, lr = (np.asarray(a, np.float64) for a in out)
    sigma = ref.dlr_dense_cov(st[1], st[2])
    expected_cov = ref.ou_predict_dense(sigma, drift, prior_var, noise)
    expected_mean = drift * st[0] + (1.0 - drift) * mean0
    prec = np.diag(ups) + lr @ lr.T
    errs = (
        ref.rel_err(mean, expected_mean),
        ref.rel_err(ref.dlr_dense_cov(ups, lr), expected_cov),
        ref.rel_err(prec, np.linalg.inv(expected_cov)),
    )
    print("rel errs", errs)
    assert max(errs) <= TOL
