"""Gradients and curvature rows of the batch solvers: per-row log-likelihoods and their
θ-gradients at sampled parameters, the weighted totals, the empirical-Fisher / GGN rows
and the Hessian (the solvers of this package use them).

A weight wᵢ counts as wᵢ repeated rows; padding rows have w = 0.
"""

import jax
import jax.numpy as jnp

from ..outputs import batch_log_lik, output_jacobians


def real_rows(w):
    """m, the number of real (non-padding) rows of a mini-batch (at least 1)."""
    return jnp.maximum(jnp.sum(w > 0), 1).astype(w.dtype)


def row_grads(config, theta, x, y, obs_var):
    """log p(yᵢ | xᵢ, θ) and gᵢ = ∇θ log p(yᵢ | xᵢ, θ) for each row: (M,) and (M, P)."""
    lik = config.impl.likelihood

    def one(xi, yi):
        return jax.value_and_grad(
            lambda th: lik.log_prob(yi, config.model.apply(th, xi[None, :])[0], obs_var)
        )(theta)

    return jax.vmap(one)(x, y)


def sample_grads(config, thetas, x, y, obs_var):
    """:func:`row_grads` at every sample: (S, M) and (S, M, P)."""
    return jax.vmap(row_grads, in_axes=(None, 0, None, None, None))(config, thetas, x, y, obs_var)


def grad_moments(config, theta, x, y, w, obs_var):
    """log p(yᵢ | xᵢ, θ) (M,), Σᵢ wᵢ gᵢ and Σᵢ wᵢ gᵢ ∘ gᵢ (P,): what the diagonal
    empirical Fisher needs. The model's own ``grad_moments`` when it has one (the MLP:
    no per-row gradients), else from :func:`row_grads`."""
    fast = getattr(config.model, "grad_moments", None)
    if fast is not None:
        lik = config.impl.likelihood

        def row_log_lik(f):
            return jax.vmap(lik.log_prob, in_axes=(0, 0, None))(y, f, obs_var)

        return fast(theta, x, row_log_lik, w)
    logp, grads = row_grads(config, theta, x, y, obs_var)
    return logp, w @ grads, w @ (grads * grads)


def sample_mean_grads(config, thetas, x, y, w, obs_var):
    """Σᵢ wᵢ log p(yᵢ | θₛ) and its gradient at every sample, (S,) and (S, P): one backward
    pass of the summed mini-batch term per sample (what Vprop, Vadam and IVON need;
    no per-example gradients)."""
    value_and_grad = jax.value_and_grad(batch_log_lik, argnums=1)
    return jax.vmap(value_and_grad, in_axes=(None, 0, None, None, None, None))(
        config, thetas, x, y, w, obs_var
    )


def total_gradient(grads, w, n_data):
    """ĝ = −(N/m) mean_s Σᵢ wᵢ gᵢ(θₛ): the negative log-likelihood gradient at data scale."""
    per_sample = jnp.einsum("smp,m->sp", grads, w)
    return -(n_data / real_rows(w)) * jnp.mean(per_sample, axis=0)


def mean_gradients(grads, w):
    """Per-sample mean mini-batch gradients of the negative log-likelihood,
    −(1/m) Σᵢ wᵢ gᵢ(θₛ): (S, P)."""
    return -jnp.einsum("smp,m->sp", grads, w) / real_rows(w)


def curvature_rows(config, thetas, grads, x, w, obs_var, n_data):
    """Rows R (k × P) with Ĝ = Rᵀ R, at data scale (N/m, averaged over the S samples).

    ``ef``: rows √(N wᵢ / (m S)) gᵢ(θₛ) (per-example empirical Fisher, k = S M);
    ``ggn``: rows √(N wᵢ / (m S)) Sᵢᵀ Jᵢ(θₛ) with Sᵢ Sᵢᵀ = Λ_y (k = S M C).
    """
    s = thetas.shape[0]
    weight = jnp.sqrt(n_data * w / (real_rows(w) * s))  # (M,)
    if config.curvature == "ef":
        return (grads * weight[None, :, None]).reshape(-1, grads.shape[-1])
    lik = config.impl.likelihood

    def at(theta):
        f, jac = output_jacobians(config, theta, x)  # (M, C), (M, C, P)
        factor = jax.vmap(lik.fisher_factor, in_axes=(0, None))(f, obs_var)  # (M, C, C)
        return jnp.einsum("mcp,mcd,m->mdp", jac, factor, weight)

    return jax.vmap(at)(thetas).reshape(-1, thetas.shape[-1])


def hessian(config, thetas, x, y, w, obs_var, n_data, dense):
    """VON's curvature: (N/m) mean_s ∇²θ of −Σᵢ wᵢ log p(yᵢ | θₛ), dense (P, P) or its
    diagonal (P,) (exact, from the dense Hessian of the mini-batch term)."""

    def one(theta):
        h = -jax.hessian(batch_log_lik, argnums=1)(config, theta, x, y, w, obs_var)
        return h if dense else jnp.diagonal(h)

    return (n_data / real_rows(w)) * jnp.mean(jax.vmap(one)(thetas), axis=0)


def nll(logp, w):
    """mean_s Σᵢ −wᵢ log p(yᵢ | θₛ) from the (S, M) log-likelihoods."""
    return -jnp.mean(logp @ w)
