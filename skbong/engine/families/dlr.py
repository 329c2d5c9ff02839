"""Diagonal-plus-low-rank precision: Σ⁻¹ = Υ + W Wᵀ, Υ diagonal (P,), W (P, R).

Natural-gradient rules (BONG = LO-FI with LIN-HESS, BLR = online SLANG with MC-EF)
take the full-covariance natural step in factored form and project back to rank R
with an SVD that keeps the diagonal (eqs. 274–277, 281–292, 293–308). Plain-gradient
rules (BOG, BBB) step on (μ, Υ, W) directly (eqs. 309–328). All work stays in
P × k and k × k arrays; nothing P × P is formed.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..linalg import (
    STACKED_COLUMNS,
    dlr_cov_root,
    dlr_grams,
    dlr_solve,
    eigh,
    gram_eigh,
    project_on,
    unit_chol_inverse,
)
from ..program import program
from ..types import gradient_split
from .base import Family, finite_and_positive, sampler
from .merging import LOW_RANK


class DLRState(NamedTuple):
    """Gaussian N(μ, (Υ + W Wᵀ)⁻¹)."""

    mean: Any
    prec_diag: Any
    prec_lr: Any


def init(mean0, prior_var, rank):
    """Prior N(μ₀, diag(σ₀²)): Υ = σ₀⁻², W = 0 (σ₀² a scalar or one variance per parameter)."""
    p = mean0.shape[0]
    return DLRState(
        mean0,
        jnp.broadcast_to(1.0 / jnp.asarray(prior_var, mean0.dtype), (p,)),
        jnp.zeros((p, rank), mean0.dtype),
    )


def predict(state, mean0, hyper):
    """OU predict step (LO-FI predict); exact for a diagonal prior covariance.

    With q_eff = (1 − γ²) σ₀² + q (elementwise: σ₀² may hold one variance per
    parameter), the covariance γ² Σ + diag(q_eff) has precision Υ' + W' W'ᵀ with
    Υ' = 1 / (γ²/Υ + q_eff) and W' = γ (Υ'/Υ) W C⁻ᵀ,
    C = chol(I + Wᵀ diag(q_eff Υ'/Υ) W)  (Woodbury).
    """
    gamma = hyper.drift
    q_eff = (1.0 - gamma**2) * hyper.prior_var + hyper.process_noise
    prec_diag = 1.0 / (gamma**2 / state.prec_diag + q_eff)
    ratio = prec_diag / state.prec_diag
    w = state.prec_lr
    rank = w.shape[1]
    inner = jnp.eye(rank, dtype=w.dtype) + w.T @ ((q_eff * ratio)[:, None] * w)
    w_new = (gamma * ratio[:, None] * w) @ unit_chol_inverse(inner).T
    mean = gamma * state.mean + (1.0 - gamma) * mean0
    return DLRState(mean, prec_diag, w_new)


def _prec_matvec(state, v):
    return state.prec_diag * v + state.prec_lr @ (state.prec_lr.T @ v)


def _require_factor(curv):
    """The low-rank curvature factor B (G = −B Bᵀ) the dlr steps need: a dense or
    diagonal Hessian cannot be projected onto the low-rank precision (the estimators and
    ``Config`` never pass one, :func:`~..config.check_names`; this is the steps' own
    precondition for direct engine calls)."""
    if curv.factor is None:
        raise ValueError("family='dlr' needs a low-rank curvature factor G = -B Bᵀ (not mc_hess)")
    return curv.factor


def _kl_gradient(state, prior, g):
    """g̃ = g − Λ₀(μ − μ₀) (eq. 265)."""
    return g - _prec_matvec(prior, state.mean - prior.mean)



TALL_FROM = 65536
"""From this many parameters on, the natural step stores W̃ as a (P, k) matrix (what the
products see is the same W̃ᵀ through a transpose that XLA folds into them). On CPU with
R = 10 the k-major rows are faster while they fit in cache (P = 881: 56 vs 72 µs per
step; P = 2410: 289 vs 404 µs) and the P-major matrix beyond (P = 1e5: 0.84×, 1e6: 0.70×
the time), where XLA's Gram product W̃ᵀ W̃ over a k × P operand took 43 ms against 6 ms
for the P × k one (``benchmarks/bench_scaling.py``)."""


def _natural_step(state, prior, g, curv, alpha):
    """The natural step's pieces: ``(mean, Υ', W̃ᵀ, W̃ᵀ W̃, eigenvectors of W̃ᵀ W̃, tall)``,
    before the projection (:func:`ngd`); ``tall``: W̃ is stored P-major
    (:data:`TALL_FROM`)."""
    root = jnp.sqrt(alpha)
    factor = root * _require_factor(curv)
    coef, rest = gradient_split(g, curv)
    if prior is None:
        prec_diag = state.prec_diag
        parts = [state.prec_lr, factor]
    else:
        rest = _kl_gradient(state, prior, 0.0 if rest is None else rest)
        prec_diag = (1.0 - alpha) * state.prec_diag + alpha * prior.prec_diag
        parts = [jnp.sqrt(1.0 - alpha) * state.prec_lr, jnp.sqrt(alpha) * prior.prec_lr, factor]
    tall = state.mean.shape[0] >= TALL_FROM
    if tall:  # W̃ stored P-major, seen through a transpose
        rows = jnp.concatenate(parts, axis=1).T
    else:  # W̃ᵀ stored k-major
        rows = jnp.concatenate([a.T for a in parts])
    gram, inner, _ = dlr_grams(prec_diag, rows, tall, stacked=rows.shape[0] in STACKED_COLUMNS)
    lead = jnp.zeros((rows.shape[0] - factor.shape[1],), rows.dtype)
    coef = jnp.concatenate([lead, coef / root])  # B u = W̃ [0; u / √α]
    mean = state.mean + alpha * dlr_solve(prec_diag, rows, inner, coef, rest)
    return mean, prec_diag, rows, gram, gram_eigh(gram)[1], tall


def ngd(state, prior, g, curv, alpha):
    """Full-covariance natural step in factored form, then rank-R projection.

    Without a prior (BONG): Λ' = Υ + W̃W̃ᵀ, W̃ = [W, √α B].
    With a prior (one BLR step): Υ' = (1−α)Υ + αΥ₀, W̃ = [√(1−α) W, √α W₀, √α B].
    μ' = μ + α Λ'⁻¹ g̃ with the untruncated W̃ (Woodbury), then SVD projection.
    All products are written on the rows W̃ᵀ (k × P); see :mod:`..linalg` and
    :data:`TALL_FROM` for the memory layout.
    """
    mean, prec_diag, rows, _, vecs, tall = _natural_step(state, prior, g, curv, alpha)
    head, dropped = project_on(rows, vecs, state.prec_lr.shape[1], separate=tall)
    return DLRState(mean, prec_diag + dropped, head.T)


def checked_ngd(state, g, curv, keep, bound, finish=None):
    """BONG's natural step (α = 1, no prior) with its validity decided from O(P) and
    O(k²) quantities; ``(state, ok, bound, aux)`` as :attr:`~.base.Family.checked_ngd`
    describes (``bound`` is not used: it passes through).

    The new belief (μ', Υ + d, W') passes ``is_valid`` (finite μ', finite W', finite and
    positive Υ') if

    * μ' and Υ' = Υ + d are finite, d the dropped squared norms (O(P)); Υ' > 0 then
      follows from Υ > 0 and d ≥ 0, a sum of squares;
    * the eigenvectors V of W̃ᵀW̃ are finite and tr(W̃ᵀW̃) ≤ M / k³ (M the largest
      float, k the columns of W̃): every column of W̃ᵀ then has ‖·‖ ≤ √tr, so each entry
      of W'ᵀ = V[:, :R]ᵀ W̃ᵀ, a sum of k products with |Vᵢⱼ| ≤ 1 + O(ε), is at most
      about k √tr < M. A finite trace also certifies that W̃ itself is finite (a sum of
      its squared entries). Beyond ``is_valid`` this refuses only a precision whose
      squared factor entries sum past M / k³ (1e34 in float32 with k = 11).

    With ``finish`` (learned noise) the covariance is scaled by the c that ``finish(μ')``
    returns, as :func:`scale` does: Υ' / c is checked itself, and tr(W̃ᵀW̃) / c ≤ M / k³
    bounds the entries of W' / √c as above. A NaN, infinite or zero c fails these.

    So no pass over the (P, R) factor is needed to check it; the selection of the old
    factor where the step is refused is a conditional, not an elementwise select.
    """
    mean, prec_diag, rows, gram, vecs, tall = _natural_step(state, None, g, curv, 1.0)
    rank = state.prec_lr.shape[1]
    head, dropped = project_on(rows, vecs, rank, separate=tall)
    new_diag = prec_diag + dropped
    spread = jnp.trace(gram)
    ratio, extra, aux = (None, True, None) if finish is None else finish(mean)
    if ratio is not None:  # the written belief is scale(…, c): check what is written
        _, new_diag, head = scale(DLRState(mean, new_diag, head), ratio)
        spread = spread / ratio
    k = rows.shape[0]
    limit = jnp.finfo(rows.dtype).max / k**3
    ok = (
        finite_and_positive((mean,), positive=(new_diag,))
        & (spread <= limit)
        & jnp.isfinite(jnp.sum(vecs))
        & extra
    )
    take = keep & ok
    factor = jax.lax.cond(take, lambda: head.T, lambda: state.prec_lr)
    new = DLRState(
        jnp.where(take, mean, state.mean), jnp.where(take, new_diag, state.prec_diag), factor
    )
    return new, ok, bound, aux


def _diag_sandwich(state, root, c):
    """diag(Σ diag(c) Σ) with Σ = D − V Vᵀ, D = Υ⁻¹, in O(P R²)."""
    d = 1.0 / state.prec_diag
    rows = jnp.sum(root * root, axis=1)
    small = root.T @ (c[:, None] * root)
    return d * d * c - 2.0 * d * c * rows + jnp.sum((root @ small) * root, axis=1)


def gd(state, prior, g, curv, alpha):
    """Plain gradient step on (μ, Υ, W) (eqs. 309–314, 319–325).

    With ∇_Σ = G̃/2 and Σ = (Υ + WWᵀ)⁻¹: ∇_Υ = −½ diag(Σ G̃ Σ), ∇_W = −Σ G̃ Σ W.
    G̃ is held as diag(c) + U diag(s) Uᵀ: U = B, s = −1, c = 0 without a prior; with a
    prior (BBB) G̃ = G − Λ₀ + Λ adds c = Υ − Υ₀ and U = [B, W, W₀], s = [−1, +1, −1].
    """
    factor = _require_factor(curv)
    w = state.prec_lr
    if prior is None:
        c = jnp.zeros_like(state.prec_diag)
        u = factor
        s = -jnp.ones((factor.shape[1],), factor.dtype)
    else:
        g = _kl_gradient(state, prior, g)
        c = state.prec_diag - prior.prec_diag
        u = jnp.concatenate([factor, w, prior.prec_lr], axis=1)
        s = jnp.concatenate(
            [
                -jnp.ones((factor.shape[1],), w.dtype),
                jnp.ones((w.shape[1],), w.dtype),
                -jnp.ones((prior.prec_lr.shape[1],), w.dtype),
            ]
        )
    root = dlr_cov_root(state.prec_diag, w)

    def cov_matmul(x):
        return x / state.prec_diag[:, None] - root @ (root.T @ x)

    su = cov_matmul(u)
    sw = cov_matmul(w)
    diag_term = _diag_sandwich(state, root, c) + jnp.sum(su * su * s[None, :], axis=1)
    w_term = cov_matmul(c[:, None] * sw) + su @ (s[:, None] * (su.T @ w))
    return DLRState(
        state.mean + alpha * g,
        state.prec_diag - 0.5 * alpha * diag_term,
        w - alpha * w_term,
    )


def transform(state, eps):
    """θ = μ + Σ^{1/2} ε for standard normal rows ε (n, P), in O(P R² + P R n).

    With A = Υ^{-1/2} W = U S Vᵀ, Λ = Υ^{1/2} (I + A Aᵀ) Υ^{1/2}, so a square root of Σ
    is Υ^{-1/2} (I + U ((I + S²)^{-1/2} − I) Uᵀ) = Υ^{-1/2} (I + A M Aᵀ), with
    M = V g(S²) Vᵀ and g(λ) = ((1 + λ)^{-1/2} − 1) / λ = −1 / (√(1 + λ) (1 + √(1 + λ))):
    the same matrix from the eigendecomposition of the R × R Gram AᵀA = V S² Vᵀ, without
    an SVD of the P × R factor, and g has no cancellation as λ → 0 (where g → −1/2).
    """
    scale = jax.lax.rsqrt(state.prec_diag)
    a = scale[:, None] * state.prec_lr
    lam, vecs = eigh(a.T @ a)
    root = jnp.sqrt(1.0 + jnp.maximum(lam, 0.0))
    m = (vecs * (-1.0 / (root * (1.0 + root)))[None, :]) @ vecs.T
    z = eps + ((eps @ a) @ m) @ a.T
    return state.mean + z * scale[None, :]


sample = sampler(transform)
"""θ ~ N(μ, (Υ + WWᵀ)⁻¹): :func:`transform` of n standard normal draws."""


def marginal_var(state):
    """diag((Υ + WWᵀ)⁻¹) = 1/Υ − rowsum(V²)."""
    root = dlr_cov_root(state.prec_diag, state.prec_lr)
    return 1.0 / state.prec_diag - jnp.sum(root * root, axis=1)


def output_cov(state, jac):
    """J Σ Jᵀ = J Υ⁻¹ Jᵀ − (L⁻¹ c)ᵀ (L⁻¹ c) for per-row Jacobians (n, C, P), with
    c = Wᵀ Υ⁻¹ Jᵀ and L Lᵀ = I + Wᵀ Υ⁻¹ W (Woodbury; the same numbers as J V with the
    root V of :func:`~..linalg.dlr_cov_root`, without forming the (P, R) root: one
    R × R Gram product over P, written on the rows Wᵀ, instead of two)."""
    rows = state.prec_lr.T
    _, inner, scaled = dlr_grams(state.prec_diag, rows)
    c = jnp.einsum("rp,ncp->ncr", scaled, jac)
    half = c @ unit_chol_inverse(inner).T
    return jnp.einsum("ncp,p,ndp->ncd", jac, 1.0 / state.prec_diag, jac) - jnp.einsum(
        "ncr,ndr->ncd", half, half
    )


def is_valid(state):
    """Finite state with a positive diagonal precision."""
    return finite_and_positive((state.mean, state.prec_lr), positive=(state.prec_diag,))


def scale(state, c):
    """Covariance × c: precision (Υ + W Wᵀ) / c."""
    return DLRState(state.mean, state.prec_diag / c, state.prec_lr * jax.lax.rsqrt(c))


@program
def _min_variance(prec_diag, prec_lr):
    """The smallest marginal variance of a dlr belief by :func:`marginal_var` (NaN where
    its Woodbury factorisation fails counts as −∞)."""
    var = marginal_var(DLRState(None, prec_diag, prec_lr))
    return jnp.min(jnp.where(jnp.isnan(var), -jnp.inf, var))


def variances_positive(state):
    """Whether the marginal variances ``diag((Υ + W Wᵀ)⁻¹) = 1/Υ − rowsum(V²)`` of a
    state of numpy arrays are positive in its dtype: the once-per-call host check.

    Υ + W Wᵀ is positive definite by construction (Υ > 0 is checked in every step), but
    an update with an enormous row leaves a precision so ill-conditioned that these
    variances, which the predictives use, cancel to zero, or that the R × R Cholesky
    factorisation of I + Wᵀ Υ⁻¹ W fails in rounding. O(P R²). Computed by the same
    compiled :func:`marginal_var` that the predictives use, so the check cannot pass
    where they would give NaN (a NumPy/LAPACK copy of the formula once passed a
    1e30-input belief on which the engine's factorisation failed).
    """
    _, prec_diag, w = state
    with jax.enable_x64(w.dtype == np.float64):
        return float(_min_variance(prec_diag, w)) > 0  # compared on the host: no second program


DLR = Family(
    init=init,
    predict=predict,
    ngd=ngd,
    gd=gd,
    sample=sample,
    transform=transform,
    marginal_var=marginal_var,
    output_cov=output_cov,
    is_valid=is_valid,
    scale=scale,
    hess_kind=None,
    state_type=DLRState,
    host_check=variances_positive,
    end_check=lambda state: _min_variance(state.prec_diag, state.prec_lr) > 0,
    checked_ngd=checked_ngd,
    entry_bound=lambda state: jnp.zeros((), state.mean.dtype),
    unsound="a precision too ill-conditioned for positive variances",
    memory=lambda p, r, itemsize: (2 + 3 * (r + 2)) * p * itemsize,  # μ, Υ, W and the step's P × (R + C) blocks
    merge=LOW_RANK,
    merge_exact=lambda rank, p: rank >= p,  # nothing is projected away: the full family
    low_rank=True,
    bank_in_turn=True,
)
