"""Diagonal Gaussian: state (μ, σ²) with σ² a (P,) vector.

``diag`` takes natural-parameter steps (BONG-LIN-HESS = VD-EKF, BLR = online
VON / VOGN), ``diag_moment`` moment-parameter steps (online BBB) (appendix E.3, E.4).
Only diag(G) is used: diag(−B Bᵀ) = −rowsum(B ∘ B).
"""

import jax.numpy as jnp

from ..types import OUTLIER_Z
from . import gaussian as gs
from .merging import DIAGONAL


def _explicit(curv):
    if curv.factor is not None:
        return -jnp.sum(curv.factor**2, axis=1)
    return curv.hess


def _add_precision_factor(var, factor, vec, coef, rest):
    """σ²' = 1 / (1/σ² + rowsum(B ∘ B)) and σ²' ∘ v (nothing cancels: v used as is).

    Refused (NaN variances) where the step would move a coordinate by more than
    :data:`~..types.OUTLIER_Z` of its own standard deviation σ: the diagonal step moves
    every coordinate by its own share of the row's residual, which the dense update
    attributes to the directions that explain it. A row scaled by 10³⁰ has a residual of
    ~10³⁰ under a mean learned on unscaled rows, and would move the intercept by a
    fraction of it; the exact conjugate update moves no coordinate further than the
    residual's own standardised size.
    """
    new = 1.0 / (1.0 / var + jnp.sum(factor * factor, axis=1))
    step = new * vec
    absurd = jnp.any(jnp.abs(step) > OUTLIER_Z * jnp.sqrt(var))
    new = jnp.where(absurd, jnp.nan, new)
    return new, step


ALGEBRA = gs.Algebra(
    matvec=lambda a, v: a * v,
    inv=lambda a: 1.0 / a,
    explicit=_explicit,
    sandwich=lambda var, curv: var * var * _explicit(curv),
    add_precision_factor=_add_precision_factor,
    sym_outer=lambda a, b: 2.0 * a * b,
    add_isotropic=lambda a, c: a + c,
    diagonal=lambda a: a,
)


def transform(state, eps):
    """θ = μ + σ ∘ ε for standard normal rows ε (n, P)."""
    return state.mean + eps * jnp.sqrt(state.cov)


def output_cov(state, jac):
    """J diag(σ²) Jᵀ for per-row Jacobians (n, C, P)."""
    return jnp.einsum("ncp,p,ndp->ncd", jac, state.cov, jac)


def _family(parametrisation, advice):
    return gs.make_family(
        ALGEBRA,
        lambda p, dt: jnp.ones((p,), dtype=dt),
        transform,
        output_cov,
        "diag",
        parametrisation,
        advice=advice,
        merge=DIAGONAL,
    )


DIAG = _family(
    "natural",
    "family='diag' steps the mean with a diagonal covariance, which can overshoot on a "
    "network (doc: 'Which combination survives'); obs_variance='auto', rule='blr' or "
    "family='dlr' take the same data",
)
DIAG_MOMENT = _family("moment", gs.moment_advice("diag_moment", "diag"))
