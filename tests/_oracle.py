"""Independent autodiff oracle for the BONG update rules and gradient estimators.

Nothing here imports the engine: every function works on plain arrays, and every
update is obtained by automatic differentiation of a scalar objective, never from
the hand-derived closed forms of appendix E of Jones, Chang & Murphy (2024).

Rules (Jones, Chang & Murphy 2024, appendix E, eqs. 72–83). With (g, G) held constant, the surrogate
S(μ, Σ) = gᵀμ + ½ tr(GΣ) has ∇_μ S = g and ∇_Σ S = G/2 (Bonnet / Price, eqs. 79–82), and the
objective is L = S − KL(N(μ, Σ) ‖ prior) (with a prior: BLR, BBB) or L = S (BONG, BOG).

* Plain-gradient step (BOG, BBB): ψ ← ψ + α ∇_ψ L in the family's own parameters ψ;
  a matrix parameter that is symmetric by construction gets the symmetric part of
  the unconstrained gradient (the gradient with respect to a symmetric matrix).
* Natural-gradient step (BONG, BLR), natural families: η ← η + α ∇_ρ L with ρ the
  mean (dual) parameters, differentiated through μ(ρ), Σ(ρ).
* Natural-gradient step, moment families: ψ ← ψ + α F(ψ)⁻¹ ∇_ψ L with the Fisher F
  the Hessian of ψ' ↦ KL(q_ψ ‖ q_ψ') at ψ' = ψ; the full covariance is parametrised
  by its lower triangle (vech) so that F is invertible.
* DLR natural-gradient step: the full natural step on the dense precision
  Υ + W Wᵀ (the caller projects / compares; see :func:`project_rank`).

States are plain arrays: ``(mu, cov)`` with a dense (P, P) ``cov`` for the full and
diagonal families (a diagonal matrix for the latter), ``(mu, ups, W)`` for DLR
(precision ``diag(ups) + W Wᵀ``). Priors are always dense ``(mu0, cov0)``.
"""

import jax
import jax.numpy as jnp
import numpy as np

# ----------------------------------------------------------------------------------
# Objective
# ----------------------------------------------------------------------------------


def sym(a):
    """Symmetric part of a square matrix."""
    return 0.5 * (a + a.T)


def surrogate(mu, cov, g, G):
    """S(μ, Σ) = gᵀμ + ½ tr(GΣ)."""
    return g @ mu + 0.5 * jnp.trace(G @ cov)


def gauss_kl(mu, cov, mu0, cov0):
    """KL(N(μ, Σ) ‖ N(μ₀, Σ₀)) in closed form (differentiable)."""
    p = mu.shape[0]
    d = mu0 - mu
    sol = jnp.linalg.solve(cov0, jnp.concatenate([cov, d[:, None]], axis=1))
    logdet0 = jnp.linalg.slogdet(cov0)[1]
    logdet = jnp.linalg.slogdet(cov)[1]
    return 0.5 * (jnp.trace(sol[:, :p]) + d @ sol[:, p] - p + logdet0 - logdet)


def objective(mu, cov, g, G, prior, kl_weight):
    """L = S − c · KL(q ‖ prior), c = ``kl_weight`` (0 for BONG / BOG, 1 for BLR / BBB)."""
    return surrogate(mu, cov, g, G) - kl_weight * gauss_kl(mu, cov, *prior)


# ----------------------------------------------------------------------------------
# Parametrisations: own parameters ψ (pack / unpack) and symmetric leaves
# ----------------------------------------------------------------------------------


def _pack_full_natural(mu, cov):
    prec = jnp.linalg.inv(cov)
    return (prec @ mu, -0.5 * prec)


def _unpack_full_natural(psi):
    eta1, eta2 = psi
    cov = jnp.linalg.inv(-2.0 * eta2)
    return cov @ eta1, cov


def _pack_diag_natural(mu, cov):
    var = jnp.diag(cov)
    return (mu / var, -0.5 / var)


def _unpack_diag_natural(psi):
    eta1, eta2 = psi
    var = -0.5 / eta2
    return var * eta1, jnp.diag(var)


# family -> (pack(mu, cov), unpack(psi) -> (mu, cov), which leaves are symmetric matrices)
OWN_PARAMS = {
    "full": (_pack_full_natural, _unpack_full_natural, (False, True)),
    "full_moment": (lambda mu, cov: (mu, cov), lambda psi: psi, (False, True)),
    "diag": (_pack_diag_natural, _unpack_diag_natural, (False, False)),
    "diag_moment": (
        lambda mu, cov: (mu, jnp.diag(cov)),
        lambda psi: (psi[0], jnp.diag(psi[1])),
        (False, False),
    ),
}


def dlr_cov(ups, w):
    """Σ = (diag(Υ) + W Wᵀ)⁻¹."""
    return jnp.linalg.inv(jnp.diag(ups) + w @ w.T)


def _symmetrise(grads, sym_leaves):
    return tuple(sym(gr) if s else gr for gr, s in zip(grads, sym_leaves))


# ----------------------------------------------------------------------------------
# Plain-gradient steps (BOG, and one BBB inner step with a prior)
# ----------------------------------------------------------------------------------


def _gd(family, state, g, G, alpha, prior, kl_weight):
    if family == "dlr":
        psi = tuple(state)

        def loss(p):
            return objective(p[0], dlr_cov(p[1], p[2]), g, G, prior, kl_weight)

        grads = jax.grad(loss)(psi)
        return tuple(a + alpha * b for a, b in zip(psi, grads))
    pack, unpack, sym_leaves = OWN_PARAMS[family]
    psi = pack(*state)
    grads = jax.grad(lambda p: objective(*unpack(p), g, G, prior, kl_weight))(psi)
    grads = _symmetrise(grads, sym_leaves)
    return unpack(tuple(a + alpha * b for a, b in zip(psi, grads)))


# ----------------------------------------------------------------------------------
# Natural-gradient steps (BONG, and one BLR inner step with a prior)
# ----------------------------------------------------------------------------------


def _dual_full(mu, cov):
    return (mu, jnp.outer(mu, mu) + cov)


def _from_dual_full(rho):
    return rho[0], rho[1] - jnp.outer(rho[0], rho[0])


def _dual_diag(mu, cov):
    return (mu, mu * mu + jnp.diag(cov))


def _from_dual_diag(rho):
    return rho[0], jnp.diag(rho[1] - rho[0] * rho[0])


def _natural_ngd(family, mu, cov, g, G, alpha, prior, kl_weight):
    """η ← η + α ∇_ρ L, the natural gradient of an exponential family (eq. 5)."""
    pack, unpack, sym_leaves = OWN_PARAMS[family]
    to_dual, from_dual = {
        "full": (_dual_full, _from_dual_full),
        "diag": (_dual_diag, _from_dual_diag),
    }[family]
    rho = to_dual(mu, cov)
    grads = jax.grad(lambda r: objective(*from_dual(r), g, G, prior, kl_weight))(rho)
    grads = _symmetrise(grads, sym_leaves)
    eta = pack(mu, cov)
    return unpack(tuple(a + alpha * b for a, b in zip(eta, grads)))


def _vech_params(family, p):
    """Flat moment parameters ψ = (μ, vech Σ) or (μ, σ²) and their inverse map."""
    if family == "full_moment":
        rows, cols = np.tril_indices(p)

        def flat(mu, cov):
            return jnp.concatenate([mu, cov[rows, cols]])

        def unflat(psi):
            low = jnp.zeros((p, p), psi.dtype).at[rows, cols].set(psi[p:])
            return psi[:p], low + low.T - jnp.diag(jnp.diag(low))

    else:

        def flat(mu, cov):
            return jnp.concatenate([mu, jnp.diag(cov)])

        def unflat(psi):
            return psi[:p], jnp.diag(psi[p:])

    return flat, unflat


def fisher(family, mu, cov):
    """Fisher information of the moment parametrisation, as the Hessian of the KL."""
    flat, unflat = _vech_params(family, mu.shape[0])
    psi = flat(mu, cov)
    return jax.hessian(lambda q: gauss_kl(mu, cov, *unflat(q)))(psi)


def _moment_ngd(family, mu, cov, g, G, alpha, prior, kl_weight):
    """ψ ← ψ + α F(ψ)⁻¹ ∇_ψ L in the flat moment parameters."""
    flat, unflat = _vech_params(family, mu.shape[0])
    psi = flat(mu, cov)
    grad = jax.grad(lambda q: objective(*unflat(q), g, G, prior, kl_weight))(psi)
    step = jnp.linalg.solve(fisher(family, mu, cov), grad)
    return unflat(psi + alpha * step)


def _ngd(family, state, g, G, alpha, prior, kl_weight):
    mu, cov = state
    if family in ("full", "diag"):
        return _natural_ngd(family, mu, cov, g, G, alpha, prior, kl_weight)
    return _moment_ngd(family, mu, cov, g, G, alpha, prior, kl_weight)


# Compiled once per family and shape: eager autodiff of the KL Hessian costs tens of
# seconds in per-primitive compiles, a compiled program about one second.
_GD = jax.jit(_gd, static_argnums=0)
_NGD = jax.jit(_ngd, static_argnums=0)


def _call(step, family, state, g, G, alpha, prior):
    """Run a compiled step (even under ``jax.disable_jit``) in float64 arrays.

    ``prior=None`` evaluates the KL to the state itself with weight 0, so that with
    and without a prior share one compiled program.
    """
    state = tuple(jnp.asarray(a, jnp.float64) for a in state)
    if prior is None:
        mu = state[0]
        cov = dlr_cov(state[1], state[2]) if family == "dlr" else state[1]
        prior, kl_weight = (mu, cov), 0.0
    else:
        kl_weight = 1.0
    prior = tuple(jnp.asarray(a, jnp.float64) for a in prior)
    args = (jnp.asarray(g, jnp.float64), jnp.asarray(G, jnp.float64))
    with jax.disable_jit(False):
        return step(
            family,
            state,
            *args,
            jnp.asarray(alpha, jnp.float64),
            prior,
            jnp.asarray(kl_weight, jnp.float64),
        )


def gd(family, state, g, G, alpha, prior=None):
    """One plain-gradient step ψ ← ψ + α ∇_ψ L in the family's own parameters.

    Returns ``(mu, cov)`` (dense) for the explicit families and ``(mu, ups, W)`` for DLR.
    """
    return _call(_GD, family, state, g, G, alpha, prior)


def ngd(family, state, g, G, alpha, prior=None):
    """One natural-gradient step.

    Returns ``(mu, cov)`` for the explicit families; for ``dlr`` returns
    ``(mu, prec)`` with ``prec`` the untruncated dense precision of the full natural
    step on ``diag(ups) + W Wᵀ`` (project with :func:`project_rank`).
    """
    if family == "dlr":  # the full natural step on the dense precision Υ + W Wᵀ
        mu, ups, w = (np.asarray(a) for a in state)
        cov = np.linalg.inv(np.diag(ups) + w @ w.T)
        mu_new, cov_new = _call(_NGD, "full", (mu, cov), g, G, alpha, prior)
        return mu_new, np.linalg.inv(np.asarray(cov_new))
    return _call(_NGD, family, state, g, G, alpha, prior)


def project_rank(lowrank, rank):
    """Best rank-``rank`` approximation of a PSD matrix, by NumPy's ``eigh``."""
    vals, vecs = np.linalg.eigh(np.asarray(lowrank))
    top = np.argsort(vals)[::-1][:rank]
    return (vecs[:, top] * vals[top]) @ vecs[:, top].T


# ----------------------------------------------------------------------------------
# Likelihoods and estimators (independent re-implementations)
# ----------------------------------------------------------------------------------


def log_lik(likelihood, y, f, obs_var):
    """log p(y | f) of one row (shape (C,)), from textbook formulas."""
    if likelihood == "gaussian":
        scale = jnp.sqrt(jnp.broadcast_to(obs_var, f.shape))
        return jnp.sum(jax.scipy.stats.norm.logpdf(y, f, scale))
    if likelihood == "bernoulli":
        return jnp.sum(y * jax.nn.log_sigmoid(f) + (1.0 - y) * jax.nn.log_sigmoid(-f))
    if likelihood == "categorical":
        return jnp.dot(y, f) - jax.scipy.special.logsumexp(f)
    if likelihood == "poisson":
        return jnp.sum(jax.scipy.stats.poisson.logpmf(y, jnp.exp(f)))
    raise ValueError(likelihood)


def _row_log_liks(likelihood, y, f, obs_var):
    return jax.vmap(lambda yy, ff: log_lik(likelihood, yy, ff, obs_var))(y, f)


def batch_log_lik(apply, likelihood, theta, x, y, w, obs_var):
    """Σᵢ wᵢ log p(yᵢ | f(xᵢ, θ))."""
    return jnp.sum(w * _row_log_liks(likelihood, y, apply(theta, x), obs_var))


def _lin_grad(apply, likelihood, mean, x, y, w, obs_var):
    jac = jax.jacfwd(lambda th: apply(th, x))(mean)  # (b, C, P), forward mode
    f = apply(mean, x)
    grad_f = jax.vmap(jax.grad(lambda ff, yy: log_lik(likelihood, yy, ff, obs_var)))(f, y)
    return jnp.einsum("i,icp,ic->p", w, jac, grad_f)


def _lin_hess(apply, likelihood, mean, x, y, w, obs_var):
    jac = jax.jacfwd(lambda th: apply(th, x))(mean)
    f = apply(mean, x)
    lam = jax.vmap(jax.hessian(lambda ff, yy: -log_lik(likelihood, yy, ff, obs_var)))(f, y)
    G = -jnp.einsum("i,icp,icd,idq->pq", w, jac, lam, jac)
    return _lin_grad(apply, likelihood, mean, x, y, w, obs_var), G


def _mean_weight(w):
    # a weight w is w repeated rows, whose EF terms add up to w g gᵀ: the EF of a
    # weighted observation is divided by the mean weight of its real rows
    return jnp.sum(w) / jnp.sum(w > 0)


def _lin_ef(apply, likelihood, mean, x, y, w, obs_var):
    g = _lin_grad(apply, likelihood, mean, x, y, w, obs_var)
    return g, -jnp.outer(g, g) / _mean_weight(w)


def _sample_fun(apply, likelihood, x, y, w, obs_var):
    return lambda th: batch_log_lik(apply, likelihood, th, x, y, w, obs_var)


def _mc_ef(apply, likelihood, thetas, x, y, w, obs_var):
    grads = jax.vmap(jax.grad(_sample_fun(apply, likelihood, x, y, w, obs_var)))(thetas)
    return grads.mean(axis=0), -(grads.T @ grads) / grads.shape[0] / _mean_weight(w)


def _mc_hess(apply, likelihood, thetas, x, y, w, obs_var):
    fun = _sample_fun(apply, likelihood, x, y, w, obs_var)
    grads = jax.vmap(jax.grad(fun))(thetas)
    hess = jax.vmap(jax.hessian(fun))(thetas)
    return grads.mean(axis=0), hess.mean(axis=0)


def _compiled(fun):
    jitted = jax.jit(fun, static_argnums=(0, 1))

    def call(apply, likelihood, *arrays):
        with jax.disable_jit(False):
            return jitted(apply, likelihood, *arrays)

    call.__doc__ = fun.__doc__
    return call


lin_hess = _compiled(_lin_hess)
lin_hess.__doc__ = """(g, G): g = Σᵢ wᵢ Jᵢᵀ ∇_f log p, G = −Σᵢ wᵢ Jᵢᵀ Λ_y Jᵢ with J by forward-mode
autodiff and Λ_y = ∇²_f(−log p) by autodiff, at ``mean``."""
lin_ef = _compiled(_lin_ef)
lin_ef.__doc__ = """(g, −g gᵀ / w̄) with the linearised g at ``mean``, w̄ the mean weight of the
real rows (a weight counts as repeated rows)."""
mc_ef = _compiled(_mc_ef)
mc_ef.__doc__ = """(mean gₘ, −(1/M) Σ gₘ gₘᵀ / w̄) over the given parameter samples (M, P)."""
mc_hess = _compiled(_mc_hess)
mc_hess.__doc__ = """(mean gₘ, mean ∇²θ log p(y | θₘ)) (dense) over the given samples (M, P)."""


# ----------------------------------------------------------------------------------
# Random test states (NumPy, fixed seeds)
# ----------------------------------------------------------------------------------


def random_spd(rng, p, low=0.3, high=1.5):
    """SPD matrix with eigenvalues in [low, high] and random eigenvectors."""
    q, _ = np.linalg.qr(rng.standard_normal((p, p)))
    return (q * rng.uniform(low, high, p)) @ q.T


def random_lowrank(rng, p, rank, nonzero, scale=0.5):
    """(P, rank) factor whose first ``nonzero`` columns are random, the rest zero."""
    w = np.zeros((p, rank))
    w[:, :nonzero] = scale * rng.standard_normal((p, nonzero))
    return w


def rel_err(a, b):
    """max |a − b| / max |b|."""
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
