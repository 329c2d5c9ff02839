"""Independent NumPy (float64) transcriptions of the batch variational solvers.

Written from the papers cited below, not from ``skbong/engine/solvers/``
(nothing of ``skbong`` is imported here), so that agreement with the engine is evidence:

* Khan et al. 2018, "Fast and scalable Bayesian deep learning by weight-perturbation in Adam"
  ("Vadam" below): VON eqs. 7–8 (full covariance: eq. 54), VOGN eqs. 9–10, Vprop eq. 14,
  Vadam Fig. 1 / eqs. 88–92 (the denominator √ŝ + λ̃ of Fig. 1, not the √(ŝ + λ̃) of
  eq. 93), Theorem 1 eq. 15 (appendix G, eq. 101 for the full matrix);
* Mishkin et al. 2018, "SLANG": eqs. 3–11, Algorithm 1 (the exact top-L eigenpairs instead
  of the randomised ``fast_eig``; the symmetric square root of Algorithm 3 for sampling),
  with the authors' momentum m ← γm + (1−γ)ĝ, bias-corrected, λμ added outside it;
* Blundell et al. 2015 (BBB): Adam on (μ, ρ), σ = softplus(ρ), reparameterisation gradient
  of the negative ELBO per row;
* IVON (Shen et al. 2024; the ``ivon-opt`` 0.1.3 optimiser, ``hess_approx="price"``,
  debiased momentum, rate rescaled by h₀ + δ).

Conventions (the batch setting of Khan et al. 2018, section 2, extended to row weights as the engine
documents them): a mini-batch has M rows with weights wᵢ ≥ 0; rows with wᵢ = 0 are padding;
m = #{i : wᵢ > 0} is the number of real rows and replaces the papers' M in every N/M or 1/M
factor, while a weight wᵢ multiplies row i's term once (a weight counts as repeated rows).
S Monte Carlo samples θₛ: per-example quantities come as arrays (S, M, …) and are averaged
over s. fᵢ = −log p(yᵢ | xᵢ, θ) and gᵢ = ∇θ log p(yᵢ | xᵢ, θ) (the *log-likelihood*
gradient, so ∇fᵢ = −gᵢ). The prior is N(0, diag(λ)⁻¹) with a (P,) precision vector λ and
λ̃ = λ / N. The step index t counts from 0; the papers' t (which starts at 1 in the bias
corrections 1 − γᵗ) is t + 1 here. The rate schedule is α_t = α / (1 + t^ω) (SLANG's
protocol), constant for ω = 0.

The models are closed form, so no autodiff is needed: linear-Gaussian regression with the
design x̃ = [x, 1] (weights then intercept) and logistic regression on the same design.
"""

from itertools import combinations

import numpy as np

# ------------------------------------------------------------------------ models


def design(x):
    """x̃ = [x, 1]: the design with an intercept column, (n, d + 1)."""
    x = np.asarray(x, np.float64)
    return np.hstack([x, np.ones((x.shape[0], 1))])


def _outputs(xt, thetas):
    """f_{s,i} = x̃ᵢ · θₛ, (S, M)."""
    return np.asarray(thetas, np.float64) @ np.asarray(xt, np.float64).T


def gauss_loglik(xt, y, thetas, obs_var):
    """log N(yᵢ | x̃ᵢ·θₛ, σ²), (S, M)."""
    r = np.ravel(y)[None, :] - _outputs(xt, thetas)
    return -0.5 * (r * r / obs_var + np.log(2.0 * np.pi * obs_var))


def gauss_grads(xt, y, thetas, obs_var):
    """gᵢ(θₛ) = x̃ᵢ (yᵢ − x̃ᵢ·θₛ) / σ², (S, M, P)."""
    r = np.ravel(y)[None, :] - _outputs(xt, thetas)
    return r[:, :, None] * np.asarray(xt)[None, :, :] / obs_var


def gauss_hessians(xt, thetas, obs_var):
    """∇²θ log p(yᵢ | θₛ) = −x̃ᵢ x̃ᵢᵀ / σ², (S, M, P, P)."""
    xt = np.asarray(xt, np.float64)
    outer = -np.einsum("mp,mq->mpq", xt, xt) / obs_var
    return np.broadcast_to(outer, (np.shape(thetas)[0],) + outer.shape).copy()


def gauss_ggn(xt, thetas, obs_var):
    """Jᵢᵀ Λ_y Jᵢ with Jᵢ = x̃ᵢᵀ (1 × P) and Λ_y = 1/σ², (S, M, P, P)."""
    xt = np.asarray(xt, np.float64)
    jtj = np.einsum("mp,mq->mpq", xt, xt) * (1.0 / obs_var)
    return np.broadcast_to(jtj, (np.shape(thetas)[0],) + jtj.shape).copy()


def _sigmoid(f):
    return 0.5 * (1.0 + np.tanh(0.5 * f))


def logistic_loglik(xt, y, thetas):
    """y f − log(1 + eᶠ), (S, M)."""
    f = _outputs(xt, thetas)
    return np.ravel(y)[None, :] * f - np.logaddexp(0.0, f)


def logistic_grads(xt, y, thetas):
    """gᵢ(θₛ) = x̃ᵢ (yᵢ − σ(fᵢ)), (S, M, P)."""
    f = _outputs(xt, thetas)
    r = np.ravel(y)[None, :] - _sigmoid(f)
    return r[:, :, None] * np.asarray(xt)[None, :, :]


def logistic_hessians(xt, thetas):
    """∇²θ log p(yᵢ | θₛ) = −σ(fᵢ)(1 − σ(fᵢ)) x̃ᵢ x̃ᵢᵀ, (S, M, P, P)."""
    xt = np.asarray(xt, np.float64)
    p = _sigmoid(_outputs(xt, thetas))
    return -np.einsum("sm,mp,mq->smpq", p * (1.0 - p), xt, xt)


def logistic_ggn(xt, thetas):
    """Jᵢᵀ Λ_y Jᵢ with the Bernoulli output precision Λ_y = p(1 − p), (S, M, P, P)."""
    xt = np.asarray(xt, np.float64)
    p = _sigmoid(_outputs(xt, thetas))
    return np.einsum("mp,sm,mq->smpq", xt, p * (1.0 - p), xt)


# -------------------------------------------------------------- shared pieces


def schedule(rate, omega, t):
    """rate / (1 + t^ω) for ω > 0 (SLANG's α_t = α₀ / (1 + t^0.51)), else constant."""
    return rate / (1.0 + float(t) ** omega) if omega > 0 else rate


def real_rows(w):
    """m: the number of rows with a positive weight (zero-weight rows are padding)."""
    return max(int(np.sum(np.asarray(w) > 0)), 1)


def nll(loglik, w):
    """mean_s Σᵢ −wᵢ log p(yᵢ | θₛ): the mini-batch data term."""
    return float(-np.mean(np.asarray(loglik) @ np.asarray(w, np.float64)))


def minibatch_mean_gradient(grads, w):
    """Vadam eq. 6: ĝ(θₛ) = (1/m) Σᵢ wᵢ ∇fᵢ(θₛ) = −(1/m) Σᵢ wᵢ gᵢ(θₛ), per sample (S, P)."""
    return -np.einsum("smp,m->sp", grads, np.asarray(w, np.float64)) / real_rows(w)


def minibatch_mean_matrix(per_example, w):
    """(1/m) mean_s Σᵢ wᵢ Cᵢ(θₛ) for per-example matrices C (S, M, P, P): (P, P)."""
    return np.einsum("smpq,m->pq", per_example, np.asarray(w, np.float64)) / (
        real_rows(w) * per_example.shape[0]
    )


def ef_matrices(grads):
    """Per-example empirical Fisher terms gᵢ gᵢᵀ (Vadam eq. 9, SLANG eq. 16), (S, M, P, P)."""
    return np.einsum("smp,smq->smpq", grads, grads)


# ------------------------------------------------------------------ VON / VOGN


def diag_sample(mean, scale, n_data, lam, eps):
    """Vadam eq. 88 / Fig. 1 line 2: θₛ = μ + εₛ / √(N (s + λ̃)), (S, P)."""
    sigma = 1.0 / np.sqrt(n_data * (np.asarray(scale) + np.asarray(lam) / n_data))
    return np.asarray(mean)[None, :] + np.asarray(eps) * sigma[None, :]


def full_sample(mean, scale, n_data, lam, eps):
    """θₛ = μ + Λ^{-1/2} εₛ with Λ = N (S + λ̃ I) (Vadam eq. 54), using the Cholesky root
    Λ = L Lᵀ, θ = μ + L⁻ᵀ ε (the papers do not fix the root; any A with A Aᵀ = Λ⁻¹ is
    valid, this one is the conventional choice)."""
    prec = n_data * (np.asarray(scale) + np.diag(np.asarray(lam) / n_data))
    chol = np.linalg.cholesky(0.5 * (prec + prec.T))
    z = np.linalg.solve(chol.T, np.asarray(eps).T)
    return np.asarray(mean)[None, :] + z.T


def ng_step(mean, scale, grad_hat, curv_hat, n_data, lam, alpha, beta):
    """VON / VOGN in the papers' s-form, one step with rates α_t, β_t:

    s' = (1 − β) s + β Ĥ                                   (eqs. 8, 10; full: eq. 54)
    μ' = μ − α (s' + λ̃)⁻¹ (ĝ + λ̃ ∘ μ)                     (eq. 7 with α for the mean)

    ``scale`` is s (P,) for the mean-field form or S (P, P) for full covariance; ``grad_hat``
    is ĝ = (1/m) mean_s Σᵢ wᵢ ∇fᵢ (P,) and ``curv_hat`` the matching (1/m) mean_s Σᵢ wᵢ Cᵢ
    (P, P), of which the diagonal is used in the mean-field form.
    """
    lam_tilde = np.asarray(lam, np.float64) / n_data
    mean = np.asarray(mean, np.float64)
    if np.ndim(scale) == 1:
        new_scale = (1.0 - beta) * scale + beta * np.diag(curv_hat)
        new_mean = mean - alpha * (grad_hat + lam_tilde * mean) / (new_scale + lam_tilde)
    else:
        new_scale = (1.0 - beta) * scale + beta * curv_hat
        new_mean = mean - alpha * np.linalg.solve(
            new_scale + np.diag(lam_tilde), grad_hat + lam_tilde * mean
        )
    return new_mean, new_scale


def vogn_step(mean, scale, grads, w, n_data, lam, alpha, beta, ggn=None):
    """VOGN (Vadam eqs. 9–10): the curvature is the per-example empirical Fisher
    (1/m) mean_s Σᵢ wᵢ gᵢgᵢᵀ (a weight enters once, as repeated rows), or, given per-example
    ``ggn`` matrices Jᵢᵀ Λ_y Jᵢ (S, M, P, P), the generalised Gauss–Newton."""
    curv = ef_matrices(grads) if ggn is None else ggn
    g = np.mean(minibatch_mean_gradient(grads, w), axis=0)
    return ng_step(mean, scale, g, minibatch_mean_matrix(curv, w), n_data, lam, alpha, beta)


def von_step(mean, scale, grads, hessians, w, n_data, lam, alpha, beta):
    """VON (Vadam eqs. 7–8): the curvature is the mini-batch Hessian of f,
    (1/m) mean_s Σᵢ wᵢ ∇²fᵢ(θₛ) = −(1/m) mean_s Σᵢ wᵢ ∇² log p(yᵢ | θₛ)."""
    g = np.mean(minibatch_mean_gradient(grads, w), axis=0)
    return ng_step(mean, scale, g, -minibatch_mean_matrix(hessians, w), n_data, lam, alpha, beta)


def total_precision(scale, n_data, lam):
    """Λ = N (s + λ̃) = N s + λ (diagonal, (P,)) or N S + diag(λ) (full)."""
    lam = np.asarray(lam, np.float64)
    return n_data * scale + (lam if np.ndim(scale) == 1 else np.diag(lam))


def scale_from_precision(prec, n_data, lam):
    """s = (Λ − λ) / N: the inverse of :func:`total_precision`."""
    lam = np.asarray(lam, np.float64)
    prec = np.asarray(prec, np.float64)
    return (prec - (lam if prec.ndim == 1 else np.diag(lam))) / n_data


# ---------------------------------------------------------------- Vprop, Vadam


def vprop_step(mean, scale, grads, w, n_data, lam, alpha, beta):
    """Vprop (Vadam eq. 14), with the gradient magnitude (GM) of the mean mini-batch gradient
    (averaged over the S samples, then squared):

    s' = (1 − β) s + β ĝ ∘ ĝ,   μ' = μ − α (ĝ + λ̃ μ) / (√s' + λ̃).
    """
    lam_tilde = np.asarray(lam, np.float64) / n_data
    g = np.mean(minibatch_mean_gradient(grads, w), axis=0)
    new_scale = (1.0 - beta) * scale + beta * g * g
    new_mean = mean - alpha * (g + lam_tilde * mean) / (np.sqrt(new_scale) + lam_tilde)
    return new_mean, new_scale


def vadam_step(
    mean, mom, scale, grads, w, n_data, lam, alpha, beta, gamma1, t, bias_correction=True
):
    """Vadam (Fig. 1, right; eqs. 89–92), γ₂ = 1 − β, paper step t + 1:

    u' = γ₁ u + (1 − γ₁)(ĝ + λ̃ μ);   s' = γ₂ s + (1 − γ₂) ĝ ∘ ĝ;
    û = u' / (1 − γ₁^{t+1}),  ŝ = s' / (1 − γ₂^{t+1});   μ' = μ − α û / (√ŝ + λ̃).

    With γ₁ = 0 and no bias correction this is Vprop (eq. 14).
    """
    lam_tilde = np.asarray(lam, np.float64) / n_data
    gamma2 = 1.0 - beta
    g = np.mean(minibatch_mean_gradient(grads, w), axis=0)
    new_mom = gamma1 * mom + (1.0 - gamma1) * (g + lam_tilde * mean)
    new_scale = gamma2 * scale + (1.0 - gamma2) * g * g
    if bias_correction:
        u_hat = new_mom / (1.0 - gamma1 ** (t + 1))
        s_hat = new_scale / (1.0 - gamma2 ** (t + 1))
    else:
        u_hat, s_hat = new_mom, new_scale
    new_mean = mean - alpha * u_hat / (np.sqrt(s_hat) + lam_tilde)
    return new_mean, new_mom, new_scale


def adam_initial_scale(init_prec, lam, n_data):
    """s₀ = (Λ₀ − λ) / N, so that the first samples have precision Λ₀ = N s₀ + λ."""
    return (np.asarray(init_prec, np.float64) - np.asarray(lam, np.float64)) / n_data


# ----------------------------------------------------------------------- SLANG


def dlr_precision(u, d):
    """U Uᵀ + diag(d) (SLANG eq. 3)."""
    return np.asarray(u) @ np.asarray(u).T + np.diag(d)


def slang_sample(mean, u, d, eps):
    """θ = μ + (U Uᵀ + D)^{-1/2} ε with the symmetric factorisation of Algorithm 3:
    U Uᵀ + D = D^{1/2} (I + V Vᵀ) D^{1/2}, V = D^{-1/2} U, and the root
    D^{-1/2} (I + V Vᵀ)^{-1/2} (computed here densely by ``eigh``)."""
    d = np.asarray(d, np.float64)
    v = np.asarray(u) / np.sqrt(d)[:, None]
    vals, vecs = np.linalg.eigh(np.eye(d.shape[0]) + v @ v.T)
    inv_root = (vecs / np.sqrt(vals)[None, :]) @ vecs.T
    return np.asarray(mean)[None, :] + (np.asarray(eps) @ inv_root) / np.sqrt(d)[None, :]


def slang_step(mean, u, d, mom, grads, w, n_data, lam, alpha, beta, gamma, t):
    """SLANG (Alg. 1; eqs. 3–11) at data scale, S samples averaged:

    ĝ = −(N/m) mean_s Σᵢ wᵢ gᵢ,   Ĝ = (N/m) mean_s Σᵢ wᵢ gᵢ gᵢᵀ          (eqs. 2, 16)
    Q Λ Qᵀ = top-L eigenpairs of (1 − β) U Uᵀ + β Ĝ;  U' = Q Λ^{1/2}     (eqs. 6–7)
    Δ = diag[(1 − β) U Uᵀ + β Ĝ − U' U'ᵀ];  d' = (1 − β) d + β λ + Δ      (eqs. 9–10)
    m' = γ m + (1 − γ) ĝ (authors' code), m̂ = m' / (1 − γ^{t+1})
    μ' = μ − α (U' U'ᵀ + D')⁻¹ (m̂ + λ μ)          (eq. 11: the new, projected precision)

    Returns (μ', U', d', m'); U' is defined up to the signs of its columns, compare U'U'ᵀ.
    """
    lam = np.asarray(lam, np.float64)
    rank = np.shape(u)[1]
    scale = n_data / real_rows(w)
    g_hat = scale * np.mean(-np.einsum("smp,m->sp", grads, np.asarray(w, np.float64)), axis=0)
    ef = n_data * minibatch_mean_matrix(ef_matrices(grads), w)
    target = (1.0 - beta) * (u @ u.T) + beta * ef
    vals, vecs = np.linalg.eigh(0.5 * (target + target.T))
    order = np.argsort(vals)[::-1][:rank]
    new_u = vecs[:, order] * np.sqrt(np.maximum(vals[order], 0.0))[None, :]
    delta = np.diag(target - new_u @ new_u.T)
    new_d = (1.0 - beta) * d + beta * lam + delta
    new_mom = gamma * mom + (1.0 - gamma) * g_hat
    direction = new_mom / (1.0 - gamma ** (t + 1)) + lam * mean
    new_mean = mean - alpha * np.linalg.solve(dlr_precision(new_u, new_d), direction)
    return new_mean, new_u, new_d, new_mom


# ------------------------------------------------------------------------- BBB


def softplus(r):
    return np.logaddexp(0.0, r)


def softplus_inverse(v):
    """ρ with softplus(ρ) = v: log(eᵛ − 1)."""
    return np.log(np.expm1(v))


def bbb_sample(mean, rho, eps):
    """θₛ = μ + softplus(ρ) ∘ εₛ."""
    return np.asarray(mean)[None, :] + softplus(rho)[None, :] * np.asarray(eps)


def bbb_gradient(mean, rho, eps, grads, w, n_data, lam):
    """Reparameterisation gradient of the negative ELBO per row,
    ℒ(μ, ρ) = ( (N/m) mean_s Σᵢ −wᵢ log p(yᵢ | μ + σ∘εₛ) + KL(q ‖ N(0, diag(λ)⁻¹)) ) / N,
    σ = softplus(ρ), from the per-example gradients gᵢ at θₛ = μ + σ∘εₛ (S, M, P):

    ∂ℒ/∂μ = ( −(N/m) mean_s Σᵢ wᵢ gᵢ(θₛ) + λ μ ) / N
    ∂ℒ/∂σ = ( −(N/m) mean_s Σᵢ wᵢ gᵢ(θₛ) ∘ εₛ + λ σ − 1/σ ) / N
    ∂ℒ/∂ρ = ∂ℒ/∂σ · sigmoid(ρ)      (KL = ½ Σ [λ(σ² + μ²) − 1 − log(λσ²)])

    For the linear-Gaussian model gᵢ(θ) = x̃ᵢ (yᵢ − x̃ᵢ·θ)/σ², so this is the closed form.
    Returns the (2, P) gradient with respect to (μ, ρ).
    """
    lam = np.asarray(lam, np.float64)
    sigma = softplus(rho)
    scale = n_data / real_rows(w)
    data = -np.einsum("smp,m->sp", grads, np.asarray(w, np.float64))  # (S, P)
    d_mean = (scale * np.mean(data, axis=0) + lam * mean) / n_data
    d_sigma = (scale * np.mean(data * eps, axis=0) + lam * sigma - 1.0 / sigma) / n_data
    d_rho = d_sigma * _sigmoid(rho)
    return np.stack([d_mean, d_rho])


def adam_update(params, m1, m2, grad, alpha, beta, gamma1, t, adam_eps=1e-8):
    """Adam (Kingma & Ba; Vadam Fig. 1 left) with γ₂ = 1 − β and bias correction at the
    paper's step t + 1: returns (params', m1', m2')."""
    gamma2 = 1.0 - beta
    m1 = gamma1 * m1 + (1.0 - gamma1) * grad
    m2 = gamma2 * m2 + (1.0 - gamma2) * grad * grad
    m_hat = m1 / (1.0 - gamma1 ** (t + 1))
    v_hat = m2 / (1.0 - gamma2 ** (t + 1))
    return params - alpha * m_hat / (np.sqrt(v_hat) + adam_eps), m1, m2


def bbb_step(mean, rho, m1, m2, eps, grads, w, n_data, lam, alpha, beta, gamma1, t):
    """One BBB step: :func:`bbb_gradient` then :func:`adam_update` on (μ, ρ)."""
    grad = bbb_gradient(mean, rho, eps, grads, w, n_data, lam)
    params, m1, m2 = adam_update(np.stack([mean, rho]), m1, m2, grad, alpha, beta, gamma1, t)
    return params[0], params[1], m1, m2


# ------------------------------------------------------------------------ IVON


def ivon_sample(mean, hess, n_data, lam, eps):
    """θₛ = μ + εₛ / √(λ_ess (h + δ)), λ_ess = N, δ = λ / N."""
    delta = np.asarray(lam, np.float64) / n_data
    return np.asarray(mean)[None, :] + np.asarray(eps) / np.sqrt(n_data * (hess + delta))[None, :]


def ivon_step(mean, mom, hess, thetas, grads, w, n_data, lam, h0, alpha, beta, beta1, t):
    """IVON (ivon-opt 0.1.3, hess_approx="price", debias, rescaled rate), λ_ess = N,
    δ = λ / N, β₂ = 1 − β, ℓ the *mean* mini-batch loss (1/m) Σᵢ wᵢ fᵢ:

    ĝₛ = ∇ℓ(θₛ), ĝ = mean_s ĝₛ;  ĥ = λ_ess (h + δ) mean_s((θₛ − μ) ∘ ĝₛ);
    m' = β₁ m + (1 − β₁) ĝ;  h' = β₂ h + (1 − β₂) ĥ + ½ (1 − β₂)² (h − ĥ)² / (h + δ);
    μ' = μ − α (h₀ + δ) (m' / (1 − β₁^{t+1}) + δ μ) / (h' + δ).
    """
    delta = np.asarray(lam, np.float64) / n_data
    g_s = minibatch_mean_gradient(grads, w)  # (S, P)
    noise = np.asarray(thetas) - np.asarray(mean)[None, :]
    h_hat = n_data * (hess + delta) * np.mean(noise * g_s, axis=0)
    beta2 = 1.0 - beta
    new_mom = beta1 * mom + (1.0 - beta1) * np.mean(g_s, axis=0)
    new_hess = (
        beta2 * hess
        + (1.0 - beta2) * h_hat
        + 0.5 * (1.0 - beta2) ** 2 * (hess - h_hat) ** 2 / (hess + delta)
    )
    rate = alpha * (h0 + delta)
    new_mean = mean - rate * (new_mom / (1.0 - beta1 ** (t + 1)) + delta * mean) / (
        new_hess + delta
    )
    return new_mean, new_mom, new_hess


# ---------------------------------------------------------- Vadam Theorem 1


def theorem1_sides(loss_grads, batch_size):
    """Both sides of Vadam eq. 101 (diagonal: eq. 15) by enumerating all C(N, M) mini-batches.

    ``loss_grads`` are the per-example gradients ∇fᵢ (N, P). Returns
    (E_M[ĝ ĝᵀ], w G + (1 − w) g gᵀ, [ĝ_M for each mini-batch in ``combinations`` order]) with
    G = (1/N) Σᵢ ∇fᵢ ∇fᵢᵀ, g = (1/N) Σᵢ ∇fᵢ and w = (N − M) / (M (N − 1)).
    """
    grads = np.asarray(loss_grads, np.float64)
    n = grads.shape[0]
    batches = [grads[list(idx)].mean(axis=0) for idx in combinations(range(n), batch_size)]
    lhs = np.mean([np.outer(b, b) for b in batches], axis=0)
    big_g = grads.T @ grads / n
    g = grads.mean(axis=0)
    w = (n - batch_size) / (batch_size * (n - 1))
    return lhs, w * big_g + (1.0 - w) * np.outer(g, g), batches
