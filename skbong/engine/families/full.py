"""Full-covariance Gaussian: state (μ, Σ) with Σ a dense (P, P) matrix.

``full`` takes natural-parameter steps (BONG-LIN-HESS = CM-EKF, BONG-MC = explicit
RVGA), ``full_moment`` moment-parameter steps (appendix E.1 and E.2).
"""

import jax.numpy as jnp
import numpy as np
import scipy.linalg

from ..linalg import cholesky, spd_inverse, sym, unit_chol_inverse, woodbury_lowrank_downdate
from ..types import gradient_split
from . import gaussian as gs
from .base import finite_and_positive
from .merging import DENSE


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


def transform(state, eps):
    """θ = μ + L ε with Σ = L Lᵀ, for standard normal rows ε (n, P)."""
    chol = cholesky(sym(state.cov))
    return state.mean + eps @ chol.T


def output_cov(state, jac):
    """J Σ Jᵀ for per-row Jacobians (n, C, P). For one row and one output, as
    jᵀ (Σ j): the product Σ j that :func:`checked_ngd` forms for the same row's
    update (``Curv.jac``), so that a step computes it once."""
    if jac.shape[:2] == (1, 1):
        row = jac[0, 0]
        return (row @ (state.cov @ row)).reshape(1, 1, 1)
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


def entry_bound(state):
    """The largest absolute entry of Σ: the starting value of :func:`checked_ngd`'s running bound."""
    return jnp.max(jnp.abs(state.cov))


def checked_ngd(state, g, curv, keep, bound, finish=None):
    """BONG's natural step (α = 1, no prior) with its validity decided before Σ' is
    written; ``(state, ok, bound, aux)`` as :attr:`~.base.Family.checked_ngd` describes.

    With one curvature column b (G = −b bᵀ, one output row per step), Woodbury
    (eqs. 122–124) is the rank-one downdate Σ' = Σ − h hᵀ, h = Σ b / √(1 + bᵀ Σ b), and
    μ' = μ + Σ' g with g = b u + r (push-through: Σ' b = h / √(1 + bᵀ Σ b)). The new
    belief passes ``is_valid`` (finite μ', finite Σ', positive diag Σ') if

    * μ' is finite;
    * dᵢ = Σᵢᵢ − fl(hᵢ²) > ε Σᵢᵢ + 4 τ (τ the smallest normal number): then the
      kernel's Σ'ᵢᵢ, fl(Σᵢᵢ − fl(hᵢ hᵢ)) or its fused multiply-add, is ≥ τ > 0 however
      either of them is contracted (the exact Σᵢᵢ − hᵢ² and Σᵢᵢ − fl(hᵢ²) are both
      > τ); this refuses, beyond what ``is_valid`` refuses, only a variance left
      with less than about two ulps of its old value;
    * b' = (b + c² ‖Σb‖² (1 + (P + 8) ε)) (1 + 4ε) ≤ M / 2 (M the largest float,
      c = 1 / √(1 + bᵀ Σ b)), where b ≥ max |Σᵢⱼ|: every |fl(hᵢ hⱼ)| ≤ max hᵢ² (1 + u)³
      ≤ c² ‖Σb‖² (1 + u)³, and the (P + 8) ε covers the rounding of the computed
      ‖Σb‖² and c² (u = ε / 2), so b' ≥ max |Σ'ᵢⱼ| and every entry of Σ' is finite.
      b' is carried to the next step (the stream's loop); it grows by about ‖h‖² <
      tr Σ per accepted step and is recomputed exactly by :func:`entry_bound` at each
      stream call.

    With ``finish`` (learned noise) the written covariance is c Σ', c the scale that
    ``finish(μ')`` returns. Then also c (dᵢ − ε Σᵢᵢ) > 4 τ: the computed Σ'ᵢᵢ is at least
    (dᵢ − ε Σᵢᵢ)(1 − ε), so fl(c Σ'ᵢᵢ) ≥ τ however small c is; and the bound carried and
    checked is c b' (1 + 2 ε) ≥ max |fl(c Σ'ᵢⱼ)|. A NaN, infinite or zero c fails these.

    All of it is O(P); the selection between Σ' and Σ fuses into the kernel that writes
    Σ − h hᵀ, so the step makes one pass over Σ besides its product Σ b. Where the
    curvature has k ≠ 1 columns, the step is the generic one followed by ``is_valid``.
    """
    if curv.factor is None or curv.factor.shape[1] != 1:
        new = gs.natural_ngd(ALGEBRA, state, None, g, curv, 1.0)
        ratio, extra, aux = (None, True, None) if finish is None else finish(new.mean)
        if ratio is not None:
            new = gs.scale(new, ratio)
        ok = _is_valid(new) & extra
        return _keep(keep & ok, new, state), ok, bound, aux
    cov, dtype = state.cov, state.cov.dtype
    coef, rest = gradient_split(g, curv)
    b = curv.factor[:, 0]
    if curv.jac is not None and rest is None:  # Σ b = (Σ j) s, Σ j shared (output_cov)
        sb, cov_rest = (cov @ curv.jac[0]) * curv.scale[0], None
    else:
        sb, cov_rest = _sigma_times(cov, b, rest)
    # the scalar products in one reduction: bᵀΣb, (rᵀΣb,) ‖Σb‖²
    quad = jnp.sum(jnp.stack([b, sb] if rest is None else [b, rest, sb]) * sb, axis=1)
    inv_root = unit_chol_inverse((1.0 + quad[0])[None, None])[0, 0]  # NaN on overflow
    h = inv_root * sb
    if rest is None:  # r = 0: μ' = μ + Σ' b u
        mean = state.mean + h * (inv_root * coef[0])
    else:
        mean = state.mean + cov_rest + h * (inv_root * coef[0] - inv_root * quad[1])
    info = jnp.finfo(dtype)
    h2 = h * h
    diag = ALGEBRA.diagonal(cov)
    # ≥ Σᵢ fl(hᵢ)² from ‖Σb‖²: (P + 8) ε covers the rounding of the sum and of h
    growth = inv_root * inv_root * quad[-1] * (1 + (b.shape[0] + 8) * info.eps)
    new_bound = (bound + growth) * (1 + 4 * info.eps)
    ratio, extra, aux = (None, True, None) if finish is None else finish(mean)
    left = diag - h2
    positive = (left - (info.eps * diag + 4 * info.tiny),)
    if ratio is not None:
        positive += (ratio * (left - info.eps * diag) - 4 * info.tiny,)
        new_bound = ratio * new_bound * (1 + 2 * info.eps)
    ok = finite_and_positive((mean,), positive=positive) & (new_bound <= 0.5 * info.max) & extra
    take = keep & ok
    cov_new = cov - jnp.outer(h, h)
    if ratio is not None:
        cov_new = cov_new * ratio
    new = gs.MeanCov(jnp.where(take, mean, state.mean), jnp.where(take, cov_new, cov))
    return new, ok, jnp.where(take, new_bound, bound), aux


ROWS_FROM = 80
"""P from which :func:`_sigma_times` takes Σ b and Σ r as the rows [b, r]ᵀ Σ."""


def _sigma_times(cov, b, r):
    """Σ b and Σ r, in the form XLA:CPU runs fastest at this P (per step of a 512-step
    loop, float32): two matrix-vector products below :data:`ROWS_FROM` (0.13 µs at
    P = 10 against 0.35 for the rows), the rows [b, r]ᵀ Σ (Σ is symmetric) from it on
    (1.00 against 1.20 µs at P = 100, 71 against 97 µs at P = 1,000); the columns
    Σ [b, r] (P × 2) are the slowest at every size (0.58 and 2.0 µs at P = 10 and 100).
    Without r (``None``: r = 0) only Σ b, whose two forms run alike (``(Σ b, None)``)."""
    if r is None:
        return cov @ b, None
    if b.shape[0] < ROWS_FROM:
        return cov @ b, cov @ r
    rows = jnp.stack([b, r]) @ cov
    return rows[0], rows[1]


def _keep(flag, new, old):
    return gs.MeanCov(*(jnp.where(flag, a, b) for a, b in zip(new, old)))


def _family(parametrisation, advice=""):
    return gs.make_family(
        ALGEBRA,
        lambda p, dt: jnp.eye(p, dtype=dt),
        transform,
        output_cov,
        "dense",
        parametrisation,
        host_check=lambda state: is_spd(state[1]),
        end_check=_cholesky_succeeds,
        unsound="a covariance that is not positive definite",
        memory=lambda p, r, itemsize: 4 * p * p * itemsize,  # Σ, its update, two temporaries
        advice=advice,
        is_sound=_cholesky_succeeds,
        exact_update=True,
        merge=DENSE,
        **(
            dict(checked_ngd=checked_ngd, entry_bound=entry_bound, merge_exact=_always)
            if parametrisation == "natural"
            else {}
        ),
    )


def _always(rank, p):
    # the natural-parameter step is exact conditioning (BONG paper, Prop. 4.1: the Kalman
    # filter); the moment step is not
    return True


def _cholesky_succeeds(state):
    """In-graph: the symmetrised covariance has a finite Cholesky factor (O(P³), by
    :func:`~skbong.engine.linalg.cholesky`, one matrix at a time under a bank's vmap):
    the backtracked steps' acceptance test, and :func:`is_spd` inside the stream program
    (``end_check``, once per call). XLA's CPU Cholesky is LAPACK's ``potrf``, as in
    :func:`is_spd`, and returns NaN where it fails."""
    cov = 0.5 * (state.cov + state.cov.T)
    return jnp.all(jnp.isfinite(cholesky(cov)))


_is_valid = gs._is_valid(ALGEBRA)
FULL = _family("natural")
FULL_MOMENT = _family("moment", gs.moment_advice("full_moment", "full"))
