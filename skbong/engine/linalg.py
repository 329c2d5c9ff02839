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

    With the small Gram matrix ``W̃ᵀ W̃ = V diag(s²) Vᵀ`` (k × k), the columns of
    ``W̃ V = U diag(s)`` are the scaled left singular vectors of ``W̃`` (thin SVD,
    eqs. 284–286). The head ``W̃ V[:, :R]`` is the new factor and the tail's squared
    row norms are returned so that ``diag(Υ + W Wᵀ)`` is preserved. A second
    Gram pass on ``W̃ V`` re-orthogonalises the rotation (as in CholeskyQR2), which
    keeps float32 tails at rounding level; a Householder QR is avoided because it is
    an order of magnitude slower on CPU for tall, thin P × k matrices.

    Returns
    -------
    head : array (P, rank)
        The new low-rank factor (zero-padded if k < rank).
    dropped : array (P,)
        ``rowsum((U[:, R:] S[R:])²)``, to add to the diagonal.
    """
    rotated = factor
    for _ in range(2):
        gram = rotated.T @ rotated
        _, vecs = jnp.linalg.eigh(sym(gram))
        rotated = rotated @ vecs[:, ::-1]  # descending singular values
    head, tail = rotated[:, :rank], rotated[:, rank:]
    dropped = jnp.sum(tail * tail, axis=1)
    if head.shape[1] < rank:  # fewer columns than the rank: pad with zeros
        head = jnp.pad(head, ((0, 0), (0, rank - head.shape[1])))
    return head, dropped
