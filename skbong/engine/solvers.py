"""Batch variational solvers of the seed papers, and IVON, as pure steps.

The batch setting (Khan et al. 2018, section 2; "Fast and scalable
Bayesian deep learning by weight-perturbation in Adam", here "Vadam"; Mishkin et al.
2018, "SLANG"; Shen et al. 2024, "IVON"): N rows, a mini-batch of m real rows (zero
weights are padding), S Monte Carlo samples θₛ ~ q, a fixed prior N(0, diag(λ)⁻¹) (one
precision per parameter; λ̃ = λ / N). gᵢ(θ) = ∇θ log p(yᵢ | xᵢ, θ). Each solver is

* ``init(mean, hyper) -> state``: q₀ with the given mean and precision ``hyper.init_prec``;
* ``sample(state, hyper, eps) -> θ (S, P)``: the reparameterisation θ = μ + Σ^{1/2} ε;
* ``step(config, state, thetas, eps, x, y, w, hyper, t) -> (state, nll)``: one update
  from the samples (the draws ``sample`` made from ``eps``, passed in so that tests can
  fix them); ``nll`` = mean_s Σᵢ −wᵢ log p(yᵢ | θₛ), the mini-batch's data term;
* ``posterior(state, hyper)``: q as a :class:`~.families.MeanCov` (``diag`` / ``full``)
  or :class:`~.families.DLRState` (``dlr``), the form the predictives take.

The updates, as published (equation numbers of the papers):

* VOGN / VON (Vadam eqs. 7–10), diagonal or full, written in the total precision
  Λ = N(s + λ̃): Λ' = (1 − β) Λ + β (Ĝ + λ), μ' = μ − α Λ'⁻¹ (ĝ + λ ∘ μ), with
  ĝ = −(N/m) mean_s Σᵢ wᵢ gᵢ(θₛ) and Ĝ the per-example empirical Fisher
  (N/m) mean_s Σᵢ wᵢ gᵢ gᵢᵀ (VOGN, eq. 9), the generalised Gauss–Newton
  (N/m) mean_s Σᵢ wᵢ Jᵢᵀ Λ_y Jᵢ (``curvature="ggn"``), or the Hessian (VON, eq. 8).
  A weight wᵢ counts as wᵢ repeated rows, so it enters the Fisher once (wᵢ gᵢ gᵢᵀ), not
  squared.
* Vprop (eq. 14) and Vadam (Fig. 1): s ← (1 − β) s + β ĝ̄², with ĝ̄ the mean mini-batch
  gradient (the "GM" of Vadam's Theorem 1, not the Fisher); Vadam also keeps the
  momentum u ← γ₁ u + (1 − γ₁)(ĝ̄ + λ̃ ∘ μ) and bias-corrects both; μ' = μ − α û /
  (√ŝ + λ̃). Eq. 93 writes √(ŝ + λ̃); Fig. 1 and the authors' code √ŝ + λ̃, which is
  what runs here. Samples use the uncorrected s: σ² = 1 / (N s + λ). Vprop is Vadam
  with γ₁ = 0 and no bias correction.
* SLANG (Alg. 1, eqs. 3–11): precision U Uᵀ + D. The top-L eigenpairs of
  (1 − β) U Uᵀ + β Ĝ (exact, from the small Gram matrix of the factors, instead of the
  paper's randomised eigensolver: the same result to rounding), the diagonal correction
  D' = (1 − β) D + β λ + diag(dropped) (eqs. 9–10), then the mean step with the new,
  projected precision (eq. 11; the ordering that distinguishes it from online SLANG,
  BONG appendix E.6). Momentum as in the authors' code: m ← γ₁ m + (1 − γ₁) ĝ,
  bias-corrected, with λ ∘ μ added outside it (γ₁ = 0 is Alg. 1).
* BBB (Blundell et al. 2015): Adam on (μ, ρ), σ = softplus(ρ), on the reparameterised
  negative ELBO per row, (N/m · mean_s Σᵢ −wᵢ log p(yᵢ | μ + σ ∘ εₛ) + KL(q ‖ p)) / N.
* IVON (ivon-opt 0.1.3, ``hess_approx="price"``): δ = λ̃, ĝ̄ as for Vadam,
  ĥ = N (h + δ) mean_s(εₛ ∘ ĝ̄ₛ) with εₛ = θₛ − μ; m ← β₁ m + (1 − β₁) ĝ̄;
  h ← β₂ h + (1 − β₂) ĥ + ½ (1 − β₂)² (h − ĥ)² / (h + δ); μ' = μ − α (h₀ + δ)
  (m / (1 − β₁ᵗ) + δ ∘ μ) / (h + δ); q = N(μ, 1 / (N (h + δ))). β₂ = 1 − β.

Rates follow the papers' schedule α_t = α / (1 + t^ω) (and the same for β) when the
``decay`` ω is positive, constant otherwise (t counts steps from 0).
"""

import jax
import jax.numpy as jnp

from .batch_grads import (
    _nll,
    _real_rows,
    curvature_rows,
    grad_moments,
    hessian,
    mean_gradients,
    rates,
    row_grads,
    sample_grads,
    sample_mean_grads,
    total_gradient,
)
from .batch_types import (
    ADAM_EPS,
    CURVATURE_NAMES,
    SOLVER_FAMILIES,
    SOLVER_NAMES,
    AdamState,
    BatchConfig,
    BatchHyper,
    BBBState,
    IVONState,
    NGState,
    SLANGState,
    Solver,
    check_family,
)
from .curvature import batch_log_lik
from .families import DLRState, MeanCov
from .families.dlr import transform as dlr_transform
from .linalg import cholesky, dlr_cov_root, dlr_grams, dlr_solve, project_rank
from .program import program

__all__ = [
    "ADAM_EPS", "CURVATURE_NAMES", "SOLVER_FAMILIES", "SOLVER_NAMES", "check_family", "AdamState", "BatchConfig", "BatchHyper",
    "BBBState", "IVONState", "NGState", "SLANGState", "Solver", "curvature_rows",
    "diag_kl", "grad_moments", "hessian", "is_valid", "kl_to_prior", "mean_gradients",
    "rates", "row_grads", "sample_grads", "sample_mean_grads", "solver", "total_gradient",
]


def _precision_solve(prec, v):
    """Λ⁻¹ v for a diagonal (P,) or dense SPD (P, P) precision."""
    if prec.ndim == 1:
        return v / prec
    chol = cholesky(0.5 * (prec + prec.T))
    return jax.scipy.linalg.cho_solve((chol, True), v)


# ------------------------------------------------------------------ VOGN, VON
def _ng_init(mean, hyper, dense):
    prec = jnp.diag(hyper.init_prec) if dense else hyper.init_prec
    return NGState(mean, prec)


def _ng_sample(state, hyper, eps):
    if state.prec.ndim == 1:
        return state.mean + eps * jax.lax.rsqrt(state.prec)
    # θ = μ + L⁻ᵀ ε with Λ = L Lᵀ: covariance L⁻ᵀ L⁻¹ = Λ⁻¹
    chol = cholesky(0.5 * (state.prec + state.prec.T))
    z = jax.scipy.linalg.solve_triangular(chol.T, eps.T, lower=False)
    return state.mean + z.T


def _ng_step(config, state, thetas, eps, x, y, w, hyper, t):
    """VOGN (eqs. 9–10) / VON (eqs. 7–8): Λ' = (1−β)Λ + β(Ĝ + λ), μ' = μ − αΛ'⁻¹(ĝ + λμ)."""
    alpha, beta = rates(hyper, t)
    dense = state.prec.ndim == 2
    if config.solver == "vogn" and config.curvature == "ef" and not dense:
        # the diagonal of the per-example Fisher from the gradients' second moment
        logp, first, second = jax.vmap(grad_moments, in_axes=(None, 0, None, None, None, None))(
            config, thetas, x, y, w, hyper.obs_var
        )
        scale = hyper.n_data / _real_rows(w)
        g, curv = -scale * jnp.mean(first, axis=0), scale * jnp.mean(second, axis=0)
    else:
        logp, grads = sample_grads(config, thetas, x, y, hyper.obs_var)
        g = total_gradient(grads, w, hyper.n_data)
    if config.solver == "von":
        curv = hessian(config, thetas, x, y, w, hyper.obs_var, hyper.n_data, dense)
    elif dense or config.curvature == "ggn":
        rows = curvature_rows(config, thetas, grads, x, w, hyper.obs_var, hyper.n_data)
        curv = rows.T @ rows if dense else jnp.sum(rows * rows, axis=0)
    lam = jnp.diag(hyper.prior_prec) if dense else hyper.prior_prec
    prec = (1.0 - beta) * state.prec + beta * (curv + lam)
    mean = state.mean - alpha * _precision_solve(prec, g + hyper.prior_prec * state.mean)
    return NGState(mean, prec), _nll(logp, w)


def _ng_posterior(state, hyper):
    if state.prec.ndim == 1:
        return MeanCov(state.mean, 1.0 / state.prec)
    chol = cholesky(0.5 * (state.prec + state.prec.T))
    inv = jax.scipy.linalg.cho_solve((chol, True), jnp.eye(chol.shape[0], dtype=chol.dtype))
    return MeanCov(state.mean, 0.5 * (inv + inv.T))


# --------------------------------------------------------------- Vprop, Vadam
def _adam_init(mean, hyper):
    scale = jnp.maximum(hyper.init_prec - hyper.prior_prec, 0.0) / hyper.n_data
    return AdamState(mean, jnp.zeros_like(mean), scale)


def _adam_sample(state, hyper, eps):
    return state.mean + eps * jax.lax.rsqrt(hyper.n_data * state.scale + hyper.prior_prec)


def _adam_step(config, state, thetas, eps, x, y, w, hyper, t):
    """Vadam (Fig. 1) and Vprop (eq. 14; γ₁ = 0, no bias correction)."""
    alpha, beta = rates(hyper, t)
    logp, grads = sample_mean_grads(config, thetas, x, y, w, hyper.obs_var)
    g = -jnp.mean(grads, axis=0) / _real_rows(w)
    lam_tilde = hyper.prior_prec / hyper.n_data
    vadam = config.solver == "vadam"
    gamma1 = hyper.momentum if vadam else 0.0
    mom = gamma1 * state.mom + (1.0 - gamma1) * (g + lam_tilde * state.mean)
    scale = (1.0 - beta) * state.scale + beta * g * g
    if vadam:  # bias correction (Fig. 1, line 7)
        step = (mom / (1.0 - gamma1 ** (t + 1))) / (
            jnp.sqrt(scale / (1.0 - (1.0 - beta) ** (t + 1))) + lam_tilde
        )
    else:
        step = mom / (jnp.sqrt(scale) + lam_tilde)
    return AdamState(state.mean - alpha * step, mom, scale), -jnp.mean(logp)


def _adam_posterior(state, hyper):
    return MeanCov(state.mean, 1.0 / (hyper.n_data * state.scale + hyper.prior_prec))


# ---------------------------------------------------------------------- SLANG
def _slang_init(mean, hyper, rank):
    return SLANGState(
        mean, hyper.init_prec, jnp.zeros((mean.shape[0], rank), mean.dtype), jnp.zeros_like(mean)
    )


def _slang_sample(state, hyper, eps):
    return dlr_transform(DLRState(state.mean, state.prec_diag, state.prec_lr), eps)


def _slang_step(config, state, thetas, eps, x, y, w, hyper, t):
    """SLANG Alg. 1: top-L eigen step, diagonal correction, then the projected mean step."""
    alpha, beta = rates(hyper, t)
    logp, grads = sample_grads(config, thetas, x, y, hyper.obs_var)
    g = total_gradient(grads, w, hyper.n_data)
    rows = curvature_rows(config, thetas, grads, x, w, hyper.obs_var, hyper.n_data)
    stacked = jnp.concatenate([jnp.sqrt(1.0 - beta) * state.prec_lr.T, jnp.sqrt(beta) * rows])
    head, dropped = project_rank(stacked, stacked @ stacked.T, state.prec_lr.shape[1])
    prec_diag = (1.0 - beta) * state.prec_diag + beta * hyper.prior_prec + dropped
    gamma = hyper.momentum
    mom = gamma * state.mom + (1.0 - gamma) * g
    direction = mom / (1.0 - gamma ** (t + 1)) + hyper.prior_prec * state.mean
    _, inner, _ = dlr_grams(prec_diag, head)
    zero = jnp.zeros((head.shape[0],), head.dtype)
    mean = state.mean - alpha * dlr_solve(prec_diag, head, inner, zero, direction)
    return SLANGState(mean, prec_diag, head.T, mom), _nll(logp, w)


def _slang_posterior(state, hyper):
    return DLRState(state.mean, state.prec_diag, state.prec_lr)


# ------------------------------------------------------------------------ BBB
def _softplus_inverse(v):
    return v + jnp.log(-jnp.expm1(-v))


def _bbb_init(mean, hyper):
    rho = _softplus_inverse(jax.lax.rsqrt(hyper.init_prec))
    zeros = jnp.zeros((2,) + mean.shape, mean.dtype)
    return BBBState(mean, rho, zeros, zeros)


def _bbb_sample(state, hyper, eps):
    return state.mean + jax.nn.softplus(state.rho) * eps


def diag_kl(mean, var, prior_prec):
    """KL(N(μ, diag(σ²)) ‖ N(0, diag(λ)⁻¹))."""
    return 0.5 * jnp.sum(prior_prec * (var + mean * mean) - 1.0 - jnp.log(prior_prec * var))


def _bbb_step(config, state, thetas, eps, x, y, w, hyper, t):
    """Adam on (μ, ρ) with the reparameterisation gradient of the negative ELBO per row."""
    alpha, beta = rates(hyper, t)
    scale = hyper.n_data / _real_rows(w)

    def loss(params):
        mean, rho = params
        sigma = jax.nn.softplus(rho)
        nll = -jax.vmap(lambda e: batch_log_lik(config, mean + sigma * e, x, y, w, hyper.obs_var))(
            eps
        )
        kl = diag_kl(mean, sigma * sigma, hyper.prior_prec)
        return (scale * jnp.mean(nll) + kl) / hyper.n_data, jnp.mean(nll)

    grad, nll = jax.grad(loss, has_aux=True)((state.mean, state.rho))
    grad = jnp.stack(grad)  # (2, P)
    gamma1, gamma2 = hyper.momentum, 1.0 - beta
    mom = gamma1 * state.mom + (1.0 - gamma1) * grad
    sq = gamma2 * state.sq + (1.0 - gamma2) * grad * grad
    m_hat = mom / (1.0 - gamma1 ** (t + 1))
    v_hat = sq / (1.0 - gamma2 ** (t + 1))
    delta = alpha * m_hat / (jnp.sqrt(v_hat) + ADAM_EPS)
    return BBBState(state.mean - delta[0], state.rho - delta[1], mom, sq), nll


def _bbb_posterior(state, hyper):
    sigma = jax.nn.softplus(state.rho)
    return MeanCov(state.mean, sigma * sigma)


# ----------------------------------------------------------------------- IVON
def _ivon_h0(hyper):
    return jnp.maximum(hyper.init_prec - hyper.prior_prec, 0.0) / hyper.n_data


def _ivon_init(mean, hyper):
    return IVONState(mean, jnp.zeros_like(mean), _ivon_h0(hyper))


def _ivon_sample(state, hyper, eps):
    delta = hyper.prior_prec / hyper.n_data
    return state.mean + eps * jax.lax.rsqrt(hyper.n_data * (state.hess + delta))


def _ivon_step(config, state, thetas, eps, x, y, w, hyper, t):
    """IVON (ivon-opt 0.1.3, Price's Hessian estimate, debiased momentum, rescaled rate)."""
    alpha, beta = rates(hyper, t)
    logp, grads = sample_mean_grads(config, thetas, x, y, w, hyper.obs_var)
    g_s = -grads / _real_rows(w)  # (S, P): gradients of the mean mini-batch loss
    delta = hyper.prior_prec / hyper.n_data
    noise = thetas - state.mean
    h_hat = hyper.n_data * (state.hess + delta) * jnp.mean(noise * g_s, axis=0)
    beta1, beta2 = hyper.momentum, 1.0 - beta
    mom = beta1 * state.mom + (1.0 - beta1) * jnp.mean(g_s, axis=0)
    hess = (
        beta2 * state.hess
        + (1.0 - beta2) * h_hat
        + 0.5 * (1.0 - beta2) ** 2 * (state.hess - h_hat) ** 2 / (state.hess + delta)
    )
    lr = alpha * (_ivon_h0(hyper) + delta)
    step = (mom / (1.0 - beta1 ** (t + 1)) + delta * state.mean) / (hess + delta)
    return IVONState(state.mean - lr * step, mom, hess), -jnp.mean(logp)


def _ivon_posterior(state, hyper):
    return MeanCov(state.mean, 1.0 / (hyper.n_data * state.hess + hyper.prior_prec))


def solver(config):
    """The :class:`Solver` of ``config``."""
    name = config.solver
    if name in ("vogn", "von"):
        dense = config.family == "full"
        return Solver(lambda m, h: _ng_init(m, h, dense), _ng_sample, _ng_step, _ng_posterior)
    if name in ("vprop", "vadam"):
        return Solver(_adam_init, _adam_sample, _adam_step, _adam_posterior)
    if name == "slang":
        return Solver(
            lambda m, h: _slang_init(m, h, config.rank),
            _slang_sample,
            _slang_step,
            _slang_posterior,
        )
    if name == "bbb":
        return Solver(_bbb_init, _bbb_sample, _bbb_step, _bbb_posterior)
    return Solver(_ivon_init, _ivon_sample, _ivon_step, _ivon_posterior)


def marginal_variances(posterior):
    """diag Σ (P,) of a posterior from :data:`Solver.posterior`."""
    if isinstance(posterior, DLRState):
        root = dlr_cov_root(posterior.prec_diag, posterior.prec_lr)
        return 1.0 / posterior.prec_diag - jnp.sum(root * root, axis=1)
    return jnp.diagonal(posterior.cov) if posterior.cov.ndim == 2 else posterior.cov


@program
def second_moments(posterior):
    """E_q[θⱼ²] = μⱼ² + Σⱼⱼ (P,) of a posterior from :data:`Solver.posterior` (one
    compiled program: the prior's M-step after every epoch dispatches no eager
    operations)."""
    return posterior.mean * posterior.mean + marginal_variances(posterior)


def kl_to_prior(posterior, prior_prec):
    """KL(q ‖ N(0, diag(λ)⁻¹)) of a posterior from :data:`Solver.posterior`."""
    p = posterior.mean.shape[0]
    if isinstance(posterior, DLRState):
        _, inner, _ = dlr_grams(posterior.prec_diag, posterior.prec_lr.T)
        logdet_cov = -jnp.sum(jnp.log(posterior.prec_diag)) - 2.0 * jnp.sum(
            jnp.log(jnp.diagonal(jnp.linalg.cholesky(inner)))
        )
    elif posterior.cov.ndim == 2:
        logdet_cov = 2.0 * jnp.sum(jnp.log(jnp.diagonal(cholesky(posterior.cov))))
    else:
        return diag_kl(posterior.mean, posterior.cov, prior_prec)
    var = marginal_variances(posterior)
    mean = posterior.mean
    return 0.5 * (
        jnp.sum(prior_prec * (var + mean * mean)) - p - jnp.sum(jnp.log(prior_prec)) - logdet_cov
    )


def is_valid(state, hyper):
    """Whether a solver state is usable: every array finite and the posterior's diagonal
    precision positive (a dense precision that is not positive definite already gives a
    non-finite mean through its Cholesky solve)."""
    leaves = jax.tree_util.tree_leaves(state)
    ok = jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in leaves]))
    if isinstance(state, NGState) and state.prec.ndim == 1:
        ok &= jnp.all(state.prec > 0)
    elif isinstance(state, SLANGState):
        ok &= jnp.all(state.prec_diag > 0)
    elif isinstance(state, IVONState):
        ok &= jnp.all(state.hess + hyper.prior_prec / hyper.n_data > 0)
    return ok
