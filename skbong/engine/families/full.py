"""Full-covariance Gaussian: state (μ, Σ) with Σ a dense (P, P) matrix.

``full`` takes natural-parameter steps (BONG-LIN-HESS = CM-EKF, BONG-MC = explicit
RVGA), ``full_moment`` moment-parameter steps (appendix E.1 and E.2).
"""

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from ..linalg import cholesky, spd_inverse, sym, woodbury_lowrank_downdate
from . import gaussian as gs


def _explicit(curv):
    if curv.factor is not None:
        return -curv.factor @ curv.factor.T
    return sym(curv.hess)  # an autodiff Hessian's triangles differ by rounding


def _sandwich(cov, curv):
    if curv.factor is not None:
        half = cov @ curv.factor
        return -half @ half.T
    return sym(cov @ curv.hess @ cov)


ALGEBRA = gs.Algebra(
    matvec=lambda a, v: a @ v,
    inv=spd_inverse,
    explicit=_explicit,
    sandwich=_sandwich,
    add_precision_factor=lambda a, b, v, u, r: woodbury_lowrank_downdate(a, b, u, r),
    sym_outer=lambda a, b: jnp.outer(a, b) + jnp.outer(b, a),
    add_isotropic=lambda a, c: a + c * jnp.eye(a.shape[0], dtype=a.dtype),
    diagonal=lambda a: a.reshape(-1)[:: a.shape[0] + 1],  # a strided slice, cheaper than a gather
)


def sample(state, key, n):
    """θ = μ + L ε with Σ = L Lᵀ."""
    chol = cholesky(sym(state.cov))
    eps = jax.random.normal(key, (n, state.mean.shape[0]), state.mean.dtype)
    return state.mean + eps @ chol.T


def output_cov(state, jac):
    """J Σ Jᵀ for per-row Jacobians (n, C, P)."""
    return jnp.einsum("ncp,pq,ndq->ncd", jac, state.cov, jac)


def is_spd(cov):
    """Whether the symmetric part of a dense covariance (numpy) has a Cholesky factor in
    its own dtype (LAPACK ``potrf``): positive definite to working precision, the
    property the samplers of the MC rules and predictives rely on. A positive diagonal,
    which ``is_valid`` checks in every step, does not make Σ positive definite. O(P³),
    once per call on the host: SciPy's blocked ``potrf`` called directly (about 8 ms at
    P = 881 in float32 on one core, 6× faster than ``np.linalg.cholesky``)."""
    potrf = scipy.linalg.lapack.get_lapack_funcs("potrf", (cov,))
    chol, info = potrf(0.5 * (cov + cov.T), lower=True, overwrite_a=True, clean=False)
    return info == 0 and bool(np.all(np.isfinite(np.diagonal(chol))))


def _family(parametrisation, advice=""):
    return gs.make_family(
        ALGEBRA,
        lambda p, dt: jnp.eye(p, dtype=dt),
        sample,
        output_cov,
        "dense",
        parametrisation,
        host_check=lambda state: is_spd(state[1]),
        unsound="a covariance that is not positive definite",
        memory=lambda p, r, itemsize: 4 * p * p * itemsize,  # Σ, its update, two temporaries
        advice=advice,
        is_sound=_cholesky_succeeds,
    )


def _cholesky_succeeds(state):
    """In-graph: the symmetrised covariance has a finite Cholesky factor (O(P³))."""
    cov = 0.5 * (state.cov + state.cov.T)
    return jnp.all(jnp.isfinite(jnp.linalg.cholesky(cov)))


FULL = _family("natural")
FULL_MOMENT = _family("moment", gs.moment_advice("full_moment", "full"))
