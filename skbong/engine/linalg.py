"""Small dense linear-algebra helpers shared by the Gaussian families.

Everything here is a pure JAX function on small matrices; the families call
these so that the Woodbury solves and the rank projection exist once.
"""

import jax.numpy as jnp
from jax.scipy.linalg import cho_solve, solve_triangular


def sym(a):
    """Symmetric part ``(A + Aᵀ) / 2`` of a square matrix."""
    return 0.5 * (a + a.T)


def spd_inverse(a):
    """Inverse of a symmetric positive-definite matrix through its Cholesky factor."""
    chol = jnp.linalg.cholesky(sym(a))
    return sym(cho_solve((chol, True), jnp.eye(a.shape[0], dtype=a.dtype)))


def woodbury_lowrank_downdate(cov, factor):
    """Covariance after adding ``B Bᵀ`` to the precision (eqs. 122–124, 130–132).

    Returns ``(Σ⁻¹ + B Bᵀ)⁻¹ = Σ − Σ B (I + Bᵀ Σ B)⁻¹ Bᵀ Σ`` in O(k P²).
    """
    sb = cov @ factor
    inner = jnp.eye(factor.shape[1], dtype=cov.dtype) + factor.T @ sb
    chol = jnp.linalg.cholesky(sym(inner))
    half = solve_triangular(chol, sb.T, lower=True)  # L⁻¹ Bᵀ Σ
    return sym(cov - half.T @ half)


def dlr_inner_chol(prec_diag, factor):
    """Cholesky factor of ``I + Wᵀ Υ⁻¹ W`` (the small Woodbury capacitance matrix)."""
    k = factor.shape[1]
    scaled = factor / prec_diag[:, None]
    inner = jnp.eye(k, dtype=factor.dtype) + factor.T @ scaled
    return jnp.linalg.cholesky(sym(inner)), scaled


def dlr_solve(prec_diag, factor, rhs):
    """Solve ``(Υ + W Wᵀ) X = rhs`` by Woodbury in O(P k (k + m)).

    ``rhs`` is a vector (P,) or a matrix (P, m).
    """
    chol, scaled = dlr_inner_chol(prec_diag, factor)
    vec = rhs.ndim == 1
    r = rhs[:, None] if vec else rhs
    base = r / prec_diag[:, None]
    corr = scaled @ cho_solve((chol, True), factor.T @ base)
    out = base - corr
    return out[:, 0] if vec else out


def dlr_cov_root(prec_diag, factor):
    """``V`` with ``(Υ + W Wᵀ)⁻¹ = Υ⁻¹ − V Vᵀ`` (P × k)."""
    chol, scaled = dlr_inner_chol(prec_diag, factor)
    return solve_triangular(chol, scaled.T, lower=True).T


def project_rank(factor, rank):
    """Keep the top ``rank`` directions of ``W̃ W̃ᵀ`` and return the dropped diagonal.

    Thin QR of ``W̃`` then an SVD of the small triangular factor (more accurate in
    float32 than an eigendecomposition of ``W̃ᵀ W̃``). Returns ``(W, dropped)`` with
    ``W W̃ᵀ``'s top-``rank`` part and ``dropped = rowsum((U[:, R:] S[R:])²)`` so that
    ``diag(Υ + W Wᵀ)`` is preserved (eqs. 284–286).
    """
    q, r = jnp.linalg.qr(factor)
    u_small, s, _ = jnp.linalg.svd(r, full_matrices=False)
    u = q @ u_small
    scaled = u * s[None, :]
    head, tail = scaled[:, :rank], scaled[:, rank:]
    dropped = jnp.sum(tail * tail, axis=1)
    if head.shape[1] < rank:  # fewer columns than the rank: pad with zeros
        head = jnp.pad(head, ((0, 0), (0, rank - head.shape[1])))
    return head, dropped
