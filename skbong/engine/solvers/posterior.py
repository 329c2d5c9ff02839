"""What the estimators read from a batch solver's posterior q (a
:class:`~skbong.engine.families.MeanCov` or :class:`~skbong.engine.families.DLRState`):
its marginal variances, second moments (the prior's M-step) and KL to the prior (the
ELBO). The posterior's family decides each."""

import jax.numpy as jnp

from ..families import DLRState
from ..linalg import cholesky, dlr_cov_root, dlr_grams
from ..program import program
from .base import diag_kl


def marginal_variances(posterior):
    """diag Σ (P,) of a posterior."""
    if isinstance(posterior, DLRState):
        root = dlr_cov_root(posterior.prec_diag, posterior.prec_lr)
        return 1.0 / posterior.prec_diag - jnp.sum(root * root, axis=1)
    return jnp.diagonal(posterior.cov) if posterior.cov.ndim == 2 else posterior.cov


@program
def second_moments(posterior):
    """E_q[θⱼ²] = μⱼ² + Σⱼⱼ (P,) of a posterior (one compiled program: the prior's M-step
    after every epoch dispatches no eager operations)."""
    return posterior.mean * posterior.mean + marginal_variances(posterior)


def kl_to_prior(posterior, prior_prec):
    """KL(q ‖ N(0, diag(λ)⁻¹)) of a posterior."""
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
