"""The model's outputs at a parameter vector, shared by the online filter, the batch
solvers and the predictives: the rows' weighted log-likelihood, and the outputs with
their Jacobian rows."""

import jax
import jax.numpy as jnp


def batch_log_lik(config, theta, x, y, w, obs_var):
    """Σᵢ wᵢ log p(yᵢ | f(xᵢ, θ)) for one mini-batch."""
    lik = config.impl.likelihood
    f = config.model.apply(theta, x)
    per_row = jax.vmap(lik.log_prob, in_axes=(0, 0, None))(y, f, obs_var)
    return jnp.sum(w * per_row)



def output_jacobians(config, mean, x):
    """Outputs f (b, C) and Jacobian rows Jᵢ = ∂f(xᵢ, θ)/∂θ at θ = mean, shape (b, C, P).

    One forward pass and C backward passes (a ``vmap`` of the VJP) per row.
    """

    def one(xi):
        fi, vjp = jax.vjp(lambda th: config.model.apply(th, xi[None, :])[0], mean)
        (jac,) = jax.vmap(vjp)(jnp.eye(fi.shape[0], dtype=fi.dtype))
        return fi, jac

    return jax.vmap(one)(x)
