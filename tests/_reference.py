"""Independent reference implementations for the engine tests.

Everything here is written from the published equations (Jones, Chang & Murphy 2024, appendix E;
equation numbers below are the paper's) in plain numpy float64, without importing any of
``skbong``: the models, likelihoods, Jacobians, closed forms and update rules are re-derived
here so that an agreement between the engine and this module is evidence, not tautology.

The derivatives of the one-hidden-layer tanh MLP (outputs, Jacobians, Hessians, and the
log-likelihood gradients / Hessians built from them) are written out analytically in numpy;
:func:`mlp_apply` is a ``jax.numpy`` forward pass with the same layout, used only to cross-check
those derivatives against ``jax.jacrev`` / ``jax.hessian`` (wrap such calls in
``with jax.enable_x64(True):``).

Random draws are inputs: the Monte Carlo rules take the standard-normal matrix ``eps`` (M, P)
that the engine draws, and map it to parameter samples with each family's square root of the
covariance (lower Cholesky factor for ``full``, σ for ``diag``, and for ``dlr`` the root
Υ^{-1/2} (I + A Aᵀ)^{-1/2}, A = Υ^{-1/2} W, computed here densely with ``eigh``).
"""

import jax.numpy as jnp
import numpy as np

# --------------------------------------------------------------------------- models


def mlp_apply(theta, x, sizes, activation="tanh"):
    """MLP outputs (n, C) from a flat θ laid out layer by layer as (weight (a, b) row-major,
    bias (b,)). Written with ``jax.numpy`` so that it can be differentiated."""
    act = {"tanh": jnp.tanh, "identity": lambda z: z}[activation]
    h = x
    off = 0
    n_layers = len(sizes) - 1
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = theta[off : off + a * b].reshape(a, b)
        off += a * b
        bias = theta[off : off + b]
        off += b
        h = h @ w + bias
        if i < n_layers - 1:
            h = act(h)
    return h


def n_params(sizes):
    """P of an MLP with biases in every layer."""
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def linear_jacobian(x, n_outputs, fit_intercept=True):
    """Per-row Jacobians (n, C, P) of the linear model f = x W + b.

    θ = (vec_rowmajor(W) (d·C), b (C)): ∂f_c/∂W[i, c] = x_i, ∂f_c/∂b_c = 1.
    """
    x = np.asarray(x, np.float64)
    n, d = x.shape
    c_out = n_outputs
    p = d * c_out + (c_out if fit_intercept else 0)
    jac = np.zeros((n, c_out, p))
    for c in range(c_out):
        jac[:, c, c : d * c_out : c_out] = x
        if fit_intercept:
            jac[:, c, d * c_out + c] = 1.0
    return jac


# ----------------------------------------------------------------------- likelihoods


def mlp_loglik(sizes, likelihood):
    """θ ↦ Σₙ wₙ log p(yₙ | f(xₙ, θ)) in ``jax.numpy`` (``fn(theta, x, y, w, obs_var)``)."""

    def fn(theta, x, y, w, obs_var):
        f = mlp_apply(theta, x, sizes)
        if likelihood == "gaussian":
            r = jnp.broadcast_to(obs_var, f.shape)
            per = -0.5 * ((y - f) ** 2 / r + jnp.log(2.0 * jnp.pi * r))
        else:
            per = y * f - jnp.logaddexp(0.0, f)
        return jnp.sum(w * jnp.sum(per, axis=1))

    return fn


def mlp1_derivatives(theta, x, sizes):
    """Outputs, Jacobians and Hessians of a one-hidden-layer tanh MLP, analytically (numpy).

    f_c = Σ_j V[j, c] tanh(a_j) + b2_c, a_j = Σ_i U[i, j] x_i + b1_j, θ = (U, b1, V, b2).

    Returns
    -------
    f : (n, C); jac : (n, C, P) = ∂f/∂θ; hess : (n, C, P, P) = ∂²f/∂θ².
    """
    d, nh, c_out = sizes
    theta = np.asarray(theta, np.float64)
    x = np.asarray(x, np.float64)
    n = x.shape[0]
    o_b1, o_v = d * nh, d * nh + nh
    o_b2 = o_v + nh * c_out
    p = o_b2 + c_out
    u = theta[:o_b1].reshape(d, nh)
    v = theta[o_v:o_b2].reshape(nh, c_out)
    h = np.tanh(x @ u + theta[o_b1:o_v])
    f = h @ v + theta[o_b2:]
    dh = 1.0 - h**2  # tanh'
    d2h = -2.0 * h * dh  # tanh''
    xt = np.concatenate([x, np.ones((n, 1))], axis=1)  # inputs with the bias "feature"
    # index of the first-layer parameter multiplying input i (i = d: the bias) of unit j
    first = np.array([[i * nh + j if i < d else o_b1 + j for j in range(nh)] for i in range(d + 1)])
    jac = np.zeros((n, c_out, p))
    hess = np.zeros((n, c_out, p, p))
    for c in range(c_out):
        for j in range(nh):
            idx = first[:, j]
            jac[:, c, idx] = (v[j, c] * dh[:, j])[:, None] * xt
            jac[:, c, o_v + j * c_out + c] = h[:, j]
            block = (v[j, c] * d2h[:, j])[:, None, None] * xt[:, :, None] * xt[:, None, :]
            hess[:, c, idx[:, None], idx[None, :]] = block
            cross = dh[:, j][:, None] * xt  # ∂²f_c / ∂(first layer of j) ∂V[j, c]
            hess[:, c, idx, o_v + j * c_out + c] = cross
            hess[:, c, o_v + j * c_out + c, idx] = cross
        jac[:, c, o_b2 + c] = 1.0
    return f, jac, hess


def loglik_derivatives(theta, x, y, w, obs_var, sizes, likelihood):
    """Gradient (P,) and Hessian (P, P) in θ of Σₙ wₙ log p(yₙ | f(xₙ, θ)) for the
    one-hidden-layer tanh MLP, by the chain rule on :func:`mlp1_derivatives`.

    With the residual e = ∂ log p / ∂f and the output curvature Λ = −∂² log p / ∂f²
    (Gaussian: e = (y − f)/r, Λ = 1/r; Bernoulli: e = y − σ(f), Λ = σ(f)(1 − σ(f))):
    ∇ = Σ wₙ Σ_c e_nc J_nc,  ∇² = Σ wₙ Σ_c (−Λ_nc J_nc J_ncᵀ + e_nc ∇²f_nc).
    """
    f, jac, hess = mlp1_derivatives(theta, x, sizes)
    y = np.asarray(y, np.float64)
    if likelihood == "gaussian":
        r = np.broadcast_to(np.asarray(obs_var, np.float64), f.shape)
        e, lam = (y - f) / r, 1.0 / r
    else:
        prob = 1.0 / (1.0 + np.exp(-f))
        e, lam = y - prob, prob * (1.0 - prob)
    w = np.asarray(w, np.float64)
    grad = np.einsum("n,nc,ncp->p", w, e, jac)
    hessian = np.einsum("n,nc,ncpq->pq", w, e, hess) - np.einsum(
        "n,nc,ncp,ncq->pq", w, lam, jac, jac
    )
    return grad, hessian


def sample_derivatives(thetas, x, y, w, obs_var, sizes, likelihood="gaussian"):
    """Per-sample gradients (M, P) and Hessians (M, P, P) of the log-likelihood."""
    out = [loglik_derivatives(t, x, y, w, obs_var, sizes, likelihood) for t in thetas]
    return np.stack([g for g, _ in out]), np.stack([h for _, h in out])


def stacked_jacobian(theta, x, sizes):
    """H = ∂ vec(f(x, θ)) / ∂θ, rows ordered (row n, output c): shape (n·C, P), and f."""
    f, jac, _ = mlp1_derivatives(theta, x, sizes)
    return jac.reshape(-1, jac.shape[-1]), f


# -------------------------------------------------------------------------- samplers


def sample_full(mean, cov, eps):
    """θ_m = μ + L ε_m, L the lower Cholesky factor of Σ."""
    return mean[None, :] + eps @ np.linalg.cholesky(cov).T


def sample_diag(mean, var, eps):
    """θ_m = μ + σ ∘ ε_m."""
    return mean[None, :] + eps * np.sqrt(var)[None, :]


def sample_dlr(mean, prec_diag, prec_lr, eps):
    """θ_m = μ + Υ^{-1/2} (I + A Aᵀ)^{-1/2} ε_m with A = Υ^{-1/2} W (symmetric root).

    (Υ^{-1/2}(I + AAᵀ)^{-1/2})(…)ᵀ = (Υ^{1/2}(I + AAᵀ)Υ^{1/2})⁻¹ = (Υ + WWᵀ)⁻¹.
    """
    scale = 1.0 / np.sqrt(prec_diag)
    a = scale[:, None] * prec_lr
    evals, evecs = np.linalg.eigh(np.eye(len(mean)) + a @ a.T)
    root = (evecs * evals**-0.5) @ evecs.T
    return mean[None, :] + (eps @ root) * scale[None, :]


# ------------------------------------------------------------ conjugate closed forms


def blr_posterior(jac, y, w, prior_var, obs_var, prior_mean=None):
    """Exact Bayesian linear-regression posterior N(μ, Σ).

    Prior N(m₀, s I); row n has y_n = J_n θ + ε_n, ε_n ~ N(0, diag(r) / w_n). Then
    Λ = I/s + Σₙ wₙ J_nᵀ diag(r)⁻¹ J_n and μ = Λ⁻¹ (m₀/s + Σₙ wₙ J_nᵀ diag(r)⁻¹ y_n).

    Parameters
    ----------
    jac : (N, C, P) per-row Jacobians; y : (N, C); w : (N,); obs_var : scalar or (C,).
    """
    n, c_out, p = jac.shape
    rinv = np.broadcast_to(1.0 / np.asarray(obs_var, np.float64), (c_out,))
    m0 = np.zeros(p) if prior_mean is None else np.asarray(prior_mean, np.float64)
    prec = np.eye(p) / prior_var + np.einsum("n,ncp,c,ncq->pq", w, jac, rinv, jac)
    rhs = m0 / prior_var + np.einsum("n,ncp,c,nc->p", w, jac, rinv, y)
    cov = np.linalg.inv(prec)
    cov = 0.5 * (cov + cov.T)
    return cov @ rhs, cov


def kalman_ou(jac_steps, y_steps, w_steps, prior_var, obs_var, drift, process_noise, mean0):
    """Kalman filter for θ_t = γ θ_{t-1} + (1 − γ) μ₀ + noise, y = J θ + N(0, R / w).

    Starts at N(μ₀, σ₀² I); each step predicts
    μ' = γ μ + (1 − γ) μ₀, Σ' = γ² Σ + (1 − γ²) σ₀² I + q I
    then applies the standard KF update (gain form) with the rows of positive weight.

    Parameters
    ----------
    jac_steps : (T, b, C, P); y_steps : (T, b, C); w_steps : (T, b).
    """
    mean0 = np.asarray(mean0, np.float64)
    p = mean0.shape[0]
    mu, sigma = mean0.copy(), prior_var * np.eye(p)
    g = drift
    for jac, y, w in zip(jac_steps, y_steps, w_steps):
        keep = w > 0
        if not np.any(keep):
            continue
        mu = g * mu + (1.0 - g) * mean0
        sigma = g**2 * sigma + ((1.0 - g**2) * prior_var + process_noise) * np.eye(p)
        c_out = jac.shape[1]
        r = np.broadcast_to(np.asarray(obs_var, np.float64), (c_out,))
        h = jac[keep].reshape(-1, p)
        rr = np.diag((r[None, :] / w[keep][:, None]).reshape(-1))
        mu, sigma = ekf_update(mu, sigma, h, rr, y[keep].reshape(-1), h @ mu)
    return mu, sigma


# --------------------------------------------------------------- published updates


def ekf_update(mu, sigma, h, r, y, yhat):
    """CM-EKF / Kalman update (eqs. 130–132): K = ΣHᵀ(R + HΣHᵀ)⁻¹,
    μ' = μ + K (y − ŷ), Σ' = Σ − K H Σ."""
    s = r + h @ sigma @ h.T
    k = np.linalg.solve(s, h @ sigma).T  # Σ Hᵀ S⁻¹ (S, Σ symmetric)
    sigma_new = sigma - k @ h @ sigma
    return mu + k @ (y - yhat), 0.5 * (sigma_new + sigma_new.T)


def vdekf_update(mu, var, h, r, y, yhat):
    """VD-EKF (eqs. 214–215): σ'^{-2} = σ^{-2} + diag(HᵀR⁻¹H), μ' = μ + σ'² ∘ HᵀR⁻¹(y − ŷ)."""
    rinv = np.linalg.inv(r)
    var_new = 1.0 / (1.0 / var + np.einsum("ip,ij,jp->p", h, rinv, h))
    return mu + var_new * (h.T @ rinv @ (y - yhat)), var_new


def svd_project(wide, rank):
    """Eqs. 284–286: W = U[:, :R] Λ[:R] from the thin SVD of W̃ (numpy, directly), and the
    diagonal correction diag(W̃W̃ᵀ − WWᵀ)."""
    u, s, _ = np.linalg.svd(wide, full_matrices=False)
    w = u[:, :rank] * s[None, :rank]
    if w.shape[1] < rank:
        w = np.pad(w, ((0, 0), (0, rank - w.shape[1])))
    corr = np.sum(wide * wide, axis=1) - np.sum(w * w, axis=1)
    return w, corr


def woodbury_solve(prec_diag, wide, v):
    """(Υ + W̃W̃ᵀ)⁻¹ v = Υ⁻¹v − Υ⁻¹W̃ (I + W̃ᵀΥ⁻¹W̃)⁻¹ W̃ᵀΥ⁻¹ v (eqs. 283, 287, 298)."""
    dinv = 1.0 / prec_diag
    k = wide.shape[1]
    cap = np.eye(k) + wide.T @ (dinv[:, None] * wide)
    return dinv * v - dinv * (wide @ np.linalg.solve(cap, wide.T @ (dinv * v)))


def lofi_update(mu, prec_diag, prec_lr, h, r, y, yhat):
    """LO-FI (eqs. 287–292): W̃ = [W, HᵀA] with A = chol(R⁻¹) (lower, A Aᵀ = R⁻¹, so that
    (HᵀA)(HᵀA)ᵀ = HᵀR⁻¹H), the mean by Woodbury with the untruncated W̃, then the SVD
    projection to rank R keeping diag(Υ + W̃W̃ᵀ)."""
    rinv = np.linalg.inv(r)
    a = np.linalg.cholesky(rinv)
    wide = np.concatenate([prec_lr, h.T @ a], axis=1)
    mu_new = mu + woodbury_solve(prec_diag, wide, h.T @ rinv @ (y - yhat))
    w, corr = svd_project(wide, prec_lr.shape[1])
    return mu_new, prec_diag + corr, w


def rvga_update(mu, sigma, g, big_g):
    """Explicit RVGA = BONG-FC (eqs. 120–121): Σ'⁻¹ = Σ⁻¹ − G, μ' = μ + Σ' g."""
    prec = np.linalg.inv(sigma) - big_g
    sigma_new = np.linalg.inv(prec)
    sigma_new = 0.5 * (sigma_new + sigma_new.T)
    return mu + sigma_new @ g, sigma_new


def von_step(mu, var, mu0, var0, g, diag_g, alpha):
    """One BLR-diag iterate, online VON / VOGN (eqs. 218–219):
    σᵢ⁻² = (1 − α) σᵢ₋₁⁻² + α σ₀⁻² − α diag(Gᵢ),
    μᵢ = μᵢ₋₁ + α σᵢ² (σ₀⁻² (μ₀ − μᵢ₋₁) + gᵢ)."""
    prec = (1.0 - alpha) / var + alpha / var0 - alpha * diag_g
    var_new = 1.0 / prec
    return mu + alpha * var_new * ((mu0 - mu) / var0 + g), var_new


def slang_step(mu, prec_diag, prec_lr, mu0, prec_diag0, prec_lr0, g, factor, alpha):
    """One BLR-DLR iterate, online SLANG (eqs. 293–301).

    Υᵢ = (1 − α)Υᵢ₋₁ + αΥ₀;  W̃ = [√(1−α) Wᵢ₋₁, √α W₀, √α B] with G = −BBᵀ (B = [g₁…g_M]/√M);
    μᵢ = μᵢ₋₁ + α (Υᵢ + W̃W̃ᵀ)⁻¹ ((Υ₀ + W₀W₀ᵀ)(μ₀ − μᵢ₋₁) + gᵢ);  SVD projection to rank R.
    """
    ups = (1.0 - alpha) * prec_diag + alpha * prec_diag0
    wide = np.concatenate(
        [np.sqrt(1.0 - alpha) * prec_lr, np.sqrt(alpha) * prec_lr0, np.sqrt(alpha) * factor], axis=1
    )
    d = mu0 - mu
    kl_grad = prec_diag0 * d + prec_lr0 @ (prec_lr0.T @ d)
    mu_new = mu + alpha * woodbury_solve(ups, wide, kl_grad + g)
    w, corr = svd_project(wide, prec_lr.shape[1])
    return mu_new, ups + corr, w


def bbb_diag_moment_step(mu, var, mu0, var0, g, diag_g, alpha):
    """One BBB-diag-moment iterate (eqs. 260–261):
    μᵢ = μᵢ₋₁ + α σ₀⁻² (μ₀ − μᵢ₋₁) + α gᵢ,
    σᵢ² = σᵢ₋₁² + (α/2)(σᵢ₋₁⁻² − σ₀⁻²) + (α/2) diag(Gᵢ)."""
    mu_new = mu + alpha * (mu0 - mu) / var0 + alpha * g
    var_new = var + 0.5 * alpha * (1.0 / var - 1.0 / var0) + 0.5 * alpha * diag_g
    return mu_new, var_new


def bog_full_moment(mu, sigma, g, big_g, alpha):
    """BOG-FC moment (eqs. 177–178): μ' = μ + α g, Σ' = Σ + (α/2) G."""
    return mu + alpha * g, sigma + 0.5 * alpha * big_g


def bog_diag_natural(mu, var, g, diag_g, alpha):
    """BOG-diag natural (eqs. 224–225), a plain gradient step on (μ/σ², −1/(2σ²)):
    σ'⁻² = σ⁻² − 4α σ² μ g − 2α σ⁴ diag(G),  μ' = σ'² (σ⁻² μ + α σ² g)."""
    prec_new = 1.0 / var - 4.0 * alpha * var * mu * g - 2.0 * alpha * var**2 * diag_g
    var_new = 1.0 / prec_new
    return var_new * (mu / var + alpha * var * g), var_new


def ou_predict_dense(sigma, drift, prior_var, process_noise):
    """Exact OU predicted covariance γ²Σ + q_eff I, q_eff = (1 − γ²) σ₀² + q."""
    q_eff = (1.0 - drift**2) * prior_var + process_noise
    return drift**2 * sigma + q_eff * np.eye(sigma.shape[0])


def dlr_dense_cov(prec_diag, prec_lr):
    """Σ = (diag(Υ) + W Wᵀ)⁻¹ densely."""
    prec = np.diag(prec_diag) + prec_lr @ prec_lr.T
    cov = np.linalg.inv(prec)
    return 0.5 * (cov + cov.T)


def rel_err(a, b):
    """max |a − b| / max |b| (norm-wise relative error)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
