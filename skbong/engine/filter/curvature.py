"""Gradient and curvature estimators (Table 1): g ≈ E_q[∇θ log p] and G ≈ E_q[∇²θ log p].

One "observation" is a mini-batch of b rows treated as a single likelihood term
Σᵢ wᵢ log p(yᵢ | f(xᵢ, θ)) (b = 1 is the paper's setting; the weights are the
sample weights, zero for padding).

* ``lin_hess``: linearise f at the mean m: g = Σᵢ Jᵢᵀ wᵢ ∇_f log p, and
  G = −Σᵢ wᵢ Jᵢᵀ Λ_y Jᵢ = −B Bᵀ with B = [√wᵢ Jᵢᵀ Sᵢ] (Prop. 4.2, k = bC).
* ``lin_ef``: the same g, G = −g gᵀ (eqs. 27–29, k = 1).
* ``mc_ef``: θₘ ~ q, gₘ = ∇θ log p(y | θₘ), g = mean gₘ, B = [g₁ … g_M] / √M (eq. 26).
  With row weights (sample weights, a weight w meaning w repeated rows) both EF
  factors are divided by √w̄ (:func:`_weight_scale`): w g gᵀ, not (w g)(w g)ᵀ.
* ``mc_hess``: g = mean gₘ, G = mean ∇²θ log p(y | θₘ): dense for the full families,
  the diagonal for the diagonal ones (exact for P ≤ ``EXACT_DIAG_MAX``, otherwise
  Hutchinson's estimator with one Rademacher probe per sample).
"""

import jax
import jax.numpy as jnp

from ..outputs import batch_log_lik, output_jacobians
from ..program import program
from ..types import Curv

EXACT_DIAG_MAX = 512


@program(static_argnames=("config",))
def log_joint(config, means, mean0, prior_var, x, y, w, obs_var):
    """log p(y | θ) + log N(θ; μ₀, diag σ₀²), up to a constant, at each row θ of
    ``means`` (K, P) with its own ``prior_var`` (K, P): the objective whose mode the
    iterated filter's passes seek (the refinement of ``fit``)."""

    def one(theta, var):
        d = theta - mean0
        return batch_log_lik(config, theta, x, y, w, obs_var) - 0.5 * jnp.sum(d * d / var)

    return jax.vmap(one)(means, prior_var)


def _linearised_gradient(config, mean, x, y, w, obs_var):
    lik = config.impl.likelihood
    f, vjp = jax.vjp(lambda th: config.model.apply(th, x), mean)
    grad_f = jax.vmap(lik.grad, in_axes=(0, 0, None))(y, f, obs_var) * w[:, None]
    return f, vjp(grad_f)[0]


def lin_hess(config, family, state, x, y, w, obs_var, key, point=None):
    """LIN-HESS: g = Σᵢ Jᵢᵀ wᵢ ∇_f log p, B = [√wᵢ Jᵢᵀ Sᵢ] with Sᵢ Sᵢᵀ = Λ_y, at the mean.

    ``point`` θ̄ (an iterated filter's pass): the log-likelihood's second-order expansion
    in f about f̄ = f(x, θ̄), with f linearised about θ̄, in place of the expansion about
    the mean μ. Its gradient at μ is Jᵀ[∇_f log p(f̄) − Λ_y (f_lin − f̄)] with
    f_lin − f̄ = J (μ − θ̄) and J, Λ_y taken at θ̄: uᵢ loses Sᵢᵀ J (μ − θ̄). Conditioning
    on these quadratic terms is exact and order-free, so a pass from the prior is one
    Gauss–Newton step on the log posterior from θ̄ (for a GLM with canonical link, one
    Newton/IRLS step), and the passes' fixed point is the mode with its Laplace
    precision (Laplace-GGN).

    Both come from the same Jacobian rows; B is built as its rows Bᵀ (k × P), the layout
    the low-rank family works in (``factor`` is their transpose, free under ``jit``).
    g is assembled as B u + r with uᵢ = √wᵢ Sᵢ⁻¹ ∇_f log p (the likelihood's
    ``grad_coef``), since Jᵢᵀ wᵢ ∇ = (Jᵢᵀ Sᵢ √wᵢ)(√wᵢ Sᵢ⁻¹ ∇); a row whose uᵢ overflows
    (a vanishing Sᵢ: a saturated classifier) contributes Jᵢᵀ wᵢ ∇ to r instead. Where
    the likelihood's uᵢ overflows only with its ∇ (``split_exact``: the Gaussian), r is
    left out (``rest=None``, r = 0): such a row's non-finite uᵢ is kept, so the update
    it would have made non-finite through r is still refused.
    """
    lik = config.impl.likelihood
    at = state.mean if point is None else point
    f, jac = output_jacobians(config, at, x)  # (b, C), (b, C, P)
    s = jax.vmap(lik.fisher_factor, in_axes=(0, None))(f, obs_var)  # (b, C, C)
    root_w = jnp.sqrt(w)
    s = s * root_w[:, None, None]
    rows = jnp.einsum("icp,icd->idp", jac, s).reshape(-1, jac.shape[-1])
    coef = jax.vmap(lik.grad_coef, in_axes=(0, 0, None))(y, f, obs_var) * root_w[:, None]
    if point is not None:  # − √wᵢ Sᵢᵀ Jᵢ (μ − θ̄): the expansion's slope at μ
        coef = coef - (rows @ (state.mean - point)).reshape(coef.shape)
    if lik.split_exact:
        coef = coef.reshape(-1)
        shared = {}
        if rows.shape[0] == 1:  # one row, one output: B = Jᵀ s (Curv.jac)
            shared = dict(jac=jac.reshape(1, -1), scale=s.reshape(1))
        return coef @ rows, Curv(factor=rows.T, coef=coef, **shared)
    split = jnp.all(jnp.isfinite(coef), axis=1, keepdims=True)  # (b, 1)
    coef = jnp.where(split, coef, 0.0).reshape(-1)
    grad_f = jax.vmap(lik.grad, in_axes=(0, 0, None))(y, f, obs_var) * w[:, None]
    rest = jnp.einsum("icp,ic->p", jac, jnp.where(split, 0.0, grad_f))
    g = coef @ rows + rest
    return g, Curv(factor=rows.T, coef=coef, rest=rest)


def _weight_scale(w):
    """w̄, the mean weight of the real (non-padding) rows: 1 for unweighted rows.

    A row of weight w stands for w repeated rows, each of which would add its own
    g gᵀ to an empirical Fisher: w g gᵀ in all. The EF estimators differentiate the
    weighted log-likelihood, whose gradient is w g, so their factor is divided by √w̄:
    (w g)(w g)ᵀ / w = w g gᵀ. For a mini-batch of several weights (one observation in the
    paper's sense) w̄ is the mean weight, which is exact when the weights are equal."""
    real = jnp.sum(w > 0)
    mean = jnp.sum(w) / jnp.maximum(real, 1).astype(w.dtype)
    return jnp.where(mean > 0, mean, 1.0)


def lin_ef(config, family, state, x, y, w, obs_var, key):
    """LIN-EF: linearised g and the empirical Fisher G = −g gᵀ / w̄ (B = g / √w̄,
    g = B · √w̄; :func:`_weight_scale`)."""
    _, g = _linearised_gradient(config, state.mean, x, y, w, obs_var)
    root = jnp.sqrt(_weight_scale(w))
    return g, Curv(factor=(g / root)[:, None], coef=root[None])


def _sample_grads(config, family, state, x, y, w, obs_var, key):
    thetas = family.sample(state, key, config.mc_samples)
    grad = jax.grad(batch_log_lik, argnums=1)
    grads = jax.vmap(grad, in_axes=(None, 0, None, None, None, None))(
        config, thetas, x, y, w, obs_var
    )
    return thetas, grads


def mc_ef(config, family, state, x, y, w, obs_var, key):
    """MC-EF: Monte Carlo gradient and empirical Fisher from M samples of q."""
    _, grads = _sample_grads(config, family, state, x, y, w, obs_var, key)
    root_m = jnp.sqrt(jnp.asarray(grads.shape[0], grads.dtype))
    root_w = jnp.sqrt(_weight_scale(w))
    # mean gₘ = B u with B = [g₁ … g_M] / (√M √w̄) and u = √w̄ / √M (weights: _weight_scale)
    curv = Curv(
        factor=grads.T / (root_m * root_w),
        coef=jnp.full(grads.shape[:1], root_w / root_m),
    )
    return jnp.mean(grads, axis=0), curv


def _hessian_diag(config, theta, x, y, w, obs_var, key):
    def f(th):
        return batch_log_lik(config, th, x, y, w, obs_var)

    p = theta.shape[0]
    if p <= EXACT_DIAG_MAX:
        return jnp.diag(jax.hessian(f)(theta))
    probe = jax.random.rademacher(key, (p,), theta.dtype)
    hvp = jax.jvp(jax.grad(f), (theta,), (probe,))[1]
    return probe * hvp


def mc_hess(config, family, state, x, y, w, obs_var, key):
    """MC-HESS: Monte Carlo gradient and Hessian (dense or diagonal, per family; a
    family without ``hess_kind`` is refused by :func:`~.config.check_names`)."""
    key_sample, key_probe = jax.random.split(key)
    thetas, grads = _sample_grads(config, family, state, x, y, w, obs_var, key_sample)
    if family.hess_kind == "dense":
        hess = jax.vmap(jax.hessian(batch_log_lik, argnums=1), (None, 0) + (None,) * 4)(
            config, thetas, x, y, w, obs_var
        )
    else:
        keys = jax.random.split(key_probe, thetas.shape[0])
        hess = jax.vmap(_hessian_diag, (None, 0, None, None, None, None, 0))(
            config, thetas, x, y, w, obs_var, keys
        )
    return jnp.mean(grads, axis=0), Curv(hess=jnp.mean(hess, axis=0))


ESTIMATORS = {"lin_hess": lin_hess, "lin_ef": lin_ef, "mc_ef": mc_ef, "mc_hess": mc_hess}

LINEAR_GAUSSIAN_EXACT = frozenset({"lin_hess"})
"""The estimators whose expected gradient and Hessian are exact for a linear model with
Gaussian noise (the paper's Proposition 4.2: the linearisation is the model itself and
the Hessian is Hᵀ R⁻¹ H), so that BONG's step with one of them is the Kalman update."""
