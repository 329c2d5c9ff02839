"""Small dense linear-algebra helpers shared by the Gaussian families.

Everything here is a pure JAX function on small matrices; the families call
these so that the Woodbury solves and the rank projection exist once.
"""

import jax
import jax.numpy as jnp
from jax.lax import linalg as lax_linalg
from jax.scipy.linalg import solve_triangular


def one_at_a_time(fn):
    """``fn`` (of arrays) whose batched form, under :func:`jax.vmap`, runs the batch one
    element at a time (:func:`jax.lax.map`) instead of calling the batched LAPACK kernel.

    XLA's CPU LAPACK kernels split a batch over the intra-op thread pool and wait for the
    parts on a pool thread. When two such batched calls of one program run at once, each
    can hold a pool thread while waiting for parts queued behind the other: on a 2-core
    machine the evidence bank (the filters vmapped) of a dlr classifier on digits
    deadlocked that way, every thread idle, inside its batched ``eigh``. The matrices here
    are small (k × k, k = R + C, or a block of at most :data:`CHOLESKY_BLOCK` rows), so
    the loop costs little, and it leaves one kernel call per matrix, which never waits
    on the pool.
    """
    batched_fn = jax.custom_batching.custom_vmap(fn)

    @batched_fn.def_vmap
    def _rule(axis_size, in_batched, *args):
        args = tuple(
            a if b else jnp.broadcast_to(a, (axis_size,) + jnp.shape(a))
            for a, b in zip(args, in_batched)
        )
        out = jax.lax.map(lambda xs: batched_fn(*xs), args)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return batched_fn


def sym(a):
    """Symmetric part ``(A + Aᵀ) / 2`` of a square matrix."""
    return 0.5 * (a + a.T)


TRIANGULAR_BLOCK = 16
"""Largest triangle handed to LAPACK's triangular solve (``trsm``), and"""
CHOLESKY_BLOCK = 128
"""largest matrix handed to LAPACK's Cholesky (``potrf``). From n = 32 (trsm) and
n ≈ 256 (potrf) on, the OpenBLAS behind XLA's CPU LAPACK calls runs them on its own
threads; on a machine whose cores are already busy (a 2-core CI runner, parallel test
workers, ``n_jobs``) those threads wait on each other and one 32 × 32 solve took 15 ms
instead of 20 µs, one 256 × 256 Cholesky 190 ms. Larger problems are split into
blocks, with matrix products (XLA's own kernels) doing the rest of the work."""


def cholesky(a):
    """Lower Cholesky factor of a symmetric positive-definite ``a``, by 2 × 2 blocks:

    ``L = [[L_A, 0], [C L_A⁻ᵀ, chol(D − C A⁻¹ Cᵀ)]]`` for ``a = [[A, Cᵀ], [C, D]]``,

    recursing until a block has at most :data:`CHOLESKY_BLOCK` rows (the right-looking
    blocked Cholesky of LAPACK). A non-positive-definite input gives NaN, as LAPACK's.
    """
    n = a.shape[0]
    if n <= CHOLESKY_BLOCK:
        return _lapack_cholesky(a)
    h = n // 2
    chol_a = cholesky(a[:h, :h])
    below = a[h:, :h] @ tril_inverse(chol_a).T  # C L_A⁻ᵀ
    chol_d = cholesky(a[h:, h:] - below @ below.T)
    top = jnp.concatenate([chol_a, jnp.zeros((h, n - h), a.dtype)], axis=1)
    return jnp.concatenate([top, jnp.concatenate([below, chol_d], axis=1)], axis=0)


_lapack_cholesky = one_at_a_time(jnp.linalg.cholesky)
_lapack_tril_inverse = one_at_a_time(
    lambda chol: solve_triangular(chol, jnp.eye(chol.shape[0], dtype=chol.dtype), lower=True)
)


def tril_inverse(chol):
    """``L⁻¹`` of a lower-triangular ``L`` (n × n), by 2 × 2 blocks:

    ``[[A, 0], [C, D]]⁻¹ = [[A⁻¹, 0], [−D⁻¹ C A⁻¹, D⁻¹]]``,

    recursing until a block has at most :data:`TRIANGULAR_BLOCK` rows (LAPACK's
    ``trtri`` uses the same splitting). Only matrix products and small solves.
    """
    n = chol.shape[0]
    if n <= TRIANGULAR_BLOCK:
        return _lapack_tril_inverse(chol)
    h = n // 2
    inv_a = tril_inverse(chol[:h, :h])
    inv_d = tril_inverse(chol[h:, h:])
    lower_left = -inv_d @ (chol[h:, :h] @ inv_a)
    top = jnp.concatenate([inv_a, jnp.zeros((h, n - h), chol.dtype)], axis=1)
    return jnp.concatenate([top, jnp.concatenate([lower_left, inv_d], axis=1)], axis=0)


def spd_inverse(a):
    """Inverse of a symmetric positive-definite matrix through its Cholesky factor:
    ``A⁻¹ = L⁻ᵀ L⁻¹`` (:func:`tril_inverse`)."""
    inv_chol = tril_inverse(cholesky(sym(a)))
    return sym(inv_chol.T @ inv_chol)


def unit_chol_inverse(inner):
    """``L⁻¹`` for the Cholesky factor L of a small ``inner = I + (PSD)`` (k × k).

    Solves against P right-hand sides multiply by this k × k inverse instead of calling
    a triangular solve: on CPU the LAPACK solve with k ≪ P is 20–1000× slower than the
    product. Since ``inner ⪰ I``, every singular value of L is ≥ 1 and ‖L⁻¹‖ ≤ 1, so
    the explicit inverse loses nothing in accuracy. An ``inner`` that overflowed gives
    NaN, not the 0 of 1 / √∞, which would silently drop the update it belongs to. Where
    rounding has made a finite ``inner`` indefinite, so that the factorisation fails,
    the result is :func:`_clamped_inverse_root`'s M (a branch taken only then): callers
    use only ``Mᵀ M = inner⁻¹``, which L⁻¹ and M share. Only up to tr(inner) ≤ 1/ε²:
    beyond it (a sample weight of 1e30, say) the rounding, about ε tr(inner), swamps
    all but the largest direction, and the NaN refuses the step as before.
    """
    finite = jnp.all(jnp.isfinite(inner))
    if inner.shape[0] == 1:  # a 1 × 1 Cholesky factor is a square root (1 + q ≥ 1 in rounding)
        return jnp.where(finite, 1.0 / jnp.sqrt(inner), jnp.nan)
    inv = tril_inverse(cholesky(sym(inner)))
    eps = jnp.finfo(inner.dtype).eps
    failed = finite & ~jnp.all(jnp.isfinite(inv)) & (jnp.trace(inner) <= 1.0 / eps**2)
    inv = jax.lax.cond(failed, _clamped_inverse_root, lambda a: inv, inner)
    return jnp.where(finite, inv, jnp.nan)


def _clamped_inverse_root(inner):
    """``M = diag(max(λ, 1))^(−1/2) Qᵀ`` from ``inner = Q diag(λ) Qᵀ``: ``Mᵀ M = inner⁻¹``,
    the role of L⁻¹ in :func:`unit_chol_inverse` (every caller needs only that).

    The fallback for an ``inner = I + AᵀA`` whose rounded form is not positive
    definite: once cond(inner) passes about 1/ε (a precision grown along a direction
    seen many times, such as a duplicated row, against a prior precision 10⁸ times
    smaller in float32), the rounding of the Gram product AᵀA, about ε ‖A‖², exceeds the
    smallest eigenvalue 1 and the Cholesky factorisation fails. Every eigenvalue of the
    exact matrix is ≥ 1, so the computed ones are clamped at that bound: the inverse is
    then the rounded matrix's, its eigenvalues off by at most about ε tr(inner) (the
    rounding it already carries), and never NaN."""
    lam, vecs = eigh(sym(inner))
    return (vecs * jax.lax.rsqrt(jnp.maximum(lam, 1.0))[None, :]).T


def woodbury_lowrank_downdate(cov, factor, coef, rest):
    """Covariance after adding ``B Bᵀ`` to the precision, and its product with
    ``v = B u + r`` (``u = coef``, ``r = rest``; eqs. 122–124, 130–132), in O(k P²) with
    one pass over Σ for both.

    ``Σ' = (Σ⁻¹ + B Bᵀ)⁻¹ = Σ − Hᵀ H`` with ``H = L⁻¹ Bᵀ Σ``, ``L Lᵀ = I + Bᵀ Σ B``.
    ``Σ − Hᵀ H`` is exactly symmetric when Σ is: the (i, j) and (j, i) entries of
    ``Hᵀ H`` are the same products summed in the same order. The push-through identity
    ``Σ' B = Σ B (I + Bᵀ Σ B)⁻¹ = Hᵀ L⁻¹`` gives ``Σ' B u`` without cancellation (see
    :func:`~skbong.engine.types.gradient_split`); ``Σ' r = Σ r − Hᵀ (H r)``, and
    ``rest=None`` (r = 0) leaves out Σ r.

    Returns
    -------
    cov : array (P, P)
        Σ'.
    cov_vec : array (P,)
        Σ' (B u + r).
    """
    k = factor.shape[1]
    if rest is None:
        sb = cov @ factor
    else:
        both = cov @ jnp.concatenate([factor, rest[:, None]], axis=1)  # [Σ B, Σ r]
        sb, cov_rest = both[:, :k], both[:, k]
    inv_chol = unit_chol_inverse(jnp.eye(k, dtype=cov.dtype) + factor.T @ sb)
    half = inv_chol @ sb.T
    if rest is None:
        return cov - half.T @ half, half.T @ (inv_chol @ coef)
    return cov - half.T @ half, cov_rest + half.T @ (inv_chol @ coef - half @ rest)


def dlr_cov_root(prec_diag, factor):
    """``V`` with ``(Υ + W Wᵀ)⁻¹ = Υ⁻¹ − V Vᵀ`` (P × k): ``V = Υ⁻¹ W L⁻ᵀ`` with
    ``L Lᵀ = I + Wᵀ Υ⁻¹ W`` (Woodbury)."""
    scaled = factor / prec_diag[:, None]
    inner = jnp.eye(factor.shape[1], dtype=factor.dtype) + factor.T @ scaled
    return scaled @ unit_chol_inverse(inner).T


# The natural DLR step works on the *rows* Wᵀ (k × P) of a low-rank factor: on CPU the
# products Wᵀ W and Vᵀ Wᵀ are several times faster in this layout (long contiguous rows)
# than W V on the tall P × k matrix.


STACKED_COLUMNS = range(9, 13)
"""Column counts k of W̃ for which the natural step forms its k-major Gram and Woodbury
matrices as one k × 2k product ``W̃ᵀ [W̃, Υ⁻¹ W̃]`` (:func:`dlr_grams`, ``stacked``).
Timed in one process against the two k × k products (each variant compiled by its own
``jax.jit``, run in turn for 15–25 s, fastest of each),
µs per step of a 512-step stream on the 2-core AMD EPYC: k = 11 (rank 10, one output)
43 against 48 at P = 881, 74–76 against 85–88 at 2,113, 302–326 against 341–440 at
10,201 and 2,936 against 3,605 at 61,201; k = 9 and 12 were 12–16 % faster too. Outside
this range it lost: k = 14 451–535 against 355–464 and k = 16 481 against 333 at
P = 10,201, k = 20 258–265 against 225–228 at P = 2,410 (XLA:CPU hands both forms to
YNNPACK, whose kernels favour neither everywhere). The tall layout keeps two products."""


def dlr_grams(prec_diag, rows, tall=False, stacked=False):
    """``W̃ᵀ W̃`` and ``I + W̃ᵀ Υ⁻¹ W̃`` (k × k) from the rows ``W̃ᵀ`` (k × P).

    Returns ``(gram, inner, scaled)`` with ``scaled = W̃ᵀ Υ⁻¹`` (k × P). ``tall=True``:
    the rows are the transpose of a P-major (P, k) array; the inner matrix is then the
    Gram product of the whitened copy Υ^(−1/2) W̃, formed P-major, and ``scaled`` is
    ``None``. (A k-major scaled copy made a dlr step at P = 1e6, k = 11, 125 instead of
    76–84 ms; the P-major Υ⁻¹ W̃ times W̃, two operands, took 46.0–47.8 against
    43.3–49.2 ms for one whitened operand, 4 of 5 alternating pairs faster.)
    ``stacked=True`` (k-major rows only): both from one k × 2k product
    ``W̃ᵀ [W̃, Υ⁻¹ W̃]`` (:data:`STACKED_COLUMNS`); callers that discard the Gram matrix
    leave it false, so that XLA drops that product.
    """
    eye = jnp.eye(rows.shape[0], dtype=rows.dtype)
    if tall:
        white = rows.T * jax.lax.rsqrt(prec_diag)[:, None]
        return rows @ rows.T, eye + white.T @ white, None
    scaled = rows / prec_diag
    if stacked:
        k = rows.shape[0]
        both = rows @ jnp.concatenate([rows, scaled]).T
        return both[:, :k], eye + both[:, k:], scaled
    return rows @ rows.T, eye + scaled @ rows.T, scaled


REFINE_BELOW = 4096
""":func:`dlr_solve` refines its first iterate only for fewer parameters than this.

In float32, against a float64 Woodbury oracle of the same rounded inputs (k = 11,
cond(I + W̃ᵀ Υ⁻¹ W̃) from 50 to 5e9; ``benchmarks/bench_accuracy.py``), the first
iterate's worst relative error is 1.7e-7–2.8e-7 at every P from 20 to 1e6. One
refinement step makes it 1.7–2.7× smaller up to P = 2,410 and larger from 4,096 on
(5.5e-7 there, 1.0e-6 at 16,384, 2.9e-6 at 65,536, 2.7e-4 at 1e6): its residual e is
a difference of length-P float32 sums that cancel, and their rounding grows with P.
float64 crosses over in the same place (against an 80-bit oracle: first iterate
3e-16–1.2e-15 at every P, refined 2e-16 at P = 20, 3.6e-15 at 16,384 and 8.3e-15 at
65,536). Skipping it there also saves two of the dlr step's passes over W̃."""


def dlr_solve(prec_diag, rows, inner, coef, rest):
    """Solve ``(Υ + W̃ W̃ᵀ) x = W̃ u + r`` by Woodbury in O(P k), with ``rows = W̃ᵀ`` and
    ``inner = I + W̃ᵀ Υ⁻¹ W̃`` from :func:`dlr_grams`:

    ``x = Υ⁻¹ r + Υ⁻¹ W̃ y``, ``y = (I + W̃ᵀ Υ⁻¹ W̃)⁻¹ (u − W̃ᵀ Υ⁻¹ r)``

    (Woodbury for r, push-through for ``W̃ u``: no cancellation when a large W̃ makes x
    small). ``rest=None`` is r = 0. Each ``Υ⁻¹ W̃ c`` is written ``(cᵀ W̃ᵀ) / Υ``, a product
    over the rows then a division: with the scaled rows ``W̃ᵀ Υ⁻¹`` instead, XLA:CPU
    copied them transposed on every step.

    One step of iterative refinement in y follows. With ``Υ x = r + W̃ y``, the residual
    is ``W̃ u + r − (Υ + W̃ W̃ᵀ) x = W̃ e``, ``e = u − y − W̃ᵀ x``, formed from W̃ itself, and
    the correction is ``Υ⁻¹ W̃ (I + W̃ᵀ Υ⁻¹ W̃)⁻¹ e``: two passes over W̃. It removes the
    errors of the k × k inverse and of the rounded ``W̃ᵀ Υ⁻¹ W̃`` (up to their
    condition number times ε): in float32 at R = P = 10 over 2,000 observations the
    error of the mean falls from 1.2e-5 to 1.7e-6, near the full family's 1.2e-6
    (``benchmarks/bench_accuracy.py``). (Refining with the residual split as
    ``W̃ (u − W̃ᵀ x) + (r − Υ x)`` is no refinement: any inverse solves that split
    exactly back to x, so the correction is zero in exact arithmetic.)

    The refinement is taken only for rows shorter than :data:`REFINE_BELOW`: e is a
    difference of length-P sums that cancel, and their float32 rounding grows with P
    until it exceeds the error the step corrects.
    """
    inv = unit_chol_inverse(inner)  # (I + W̃ᵀΥ⁻¹W̃)⁻¹ = L⁻ᵀ L⁻¹
    v = coef if rest is None else coef - (rest / prec_diag) @ rows.T
    y = inv.T @ (inv @ v)
    x = (y @ rows) / prec_diag
    if rest is not None:
        x = rest / prec_diag + x
    if rows.shape[1] >= REFINE_BELOW:
        return x
    e = coef - y - x @ rows.T
    return x + ((inv.T @ (inv @ e)) @ rows) / prec_diag


def project_rank(rows, gram, rank):
    """Keep the top ``rank`` directions of ``W̃ W̃ᵀ`` and return the dropped diagonal.

    With the small Gram matrix ``W̃ᵀ W̃ = V diag(s²) Vᵀ`` (k × k), the columns of
    ``W̃ V = U diag(s)`` are the scaled left singular vectors of ``W̃`` (thin SVD,
    eqs. 284–286). The head ``W̃ V[:, :R]`` is the new factor and the tail's squared
    row norms are returned so that ``diag(Υ + W Wᵀ)`` is preserved. Since
    ``V Vᵀ = I``, head headᵀ + tail tailᵀ = W̃ W̃ᵀ holds for the computed V to rounding,
    so the split is exact and only its optimality rests on the eigenvectors: one
    eigendecomposition suffices (a Householder QR or a thin SVD of the P × k matrix is
    an order of magnitude slower on CPU).

    Parameters
    ----------
    rows : array (k, P)
        ``W̃ᵀ``.
    gram : array (k, k)
        ``W̃ᵀ W̃``.
    rank : int
        R.

    Returns
    -------
    head : array (rank, P)
        The rows ``Wᵀ`` of the new low-rank factor (zero-padded if k < rank).
    dropped : array (P,)
        ``rowsum((U[:, R:] S[R:])²)``, to add to the diagonal.
    """
    return project_on(rows, gram_eigh(gram)[1], rank)


@one_at_a_time
def eigh(a):
    """Eigenvalues (ascending) and eigenvectors of a symmetric ``a``, as
    :func:`jax.numpy.linalg.eigh`.

    On NVIDIA GPUs this asks cuSOLVER for its QR-based ``syevd``. Left to choose, JAX
    takes cuSOLVER's Jacobi solver for small matrices, such as the dlr family's k × k
    Gram matrices (k = R + C). On an H200 the Jacobi solver made a dlr-10 step 1.3–2.4×
    slower: 395 against 163 µs at P = 1e4, 664 against 515 µs at P = 1e6, and 631
    against 449 µs per image for the MNIST CNN (``benchmarks/results/gpu_eigh_variants.json``). Other
    platforms keep JAX's default: the CPU's LAPACK ``syevd`` has no choice to make, and
    TPUs do not offer QR.
    """
    return jax.lax.platform_dependent(
        a, cuda=_qr_eigh, default=lambda a: tuple(jnp.linalg.eigh(a))
    )


def _qr_eigh(a):
    """:func:`eigh` through the QR-based solver (``syevd``) where the platform has a choice."""
    vecs, vals = lax_linalg.eigh(a, implementation=lax_linalg.EighImplementation.QR)
    return vals, vecs


def gram_eigh(gram):
    """Eigenvalues (ascending) and eigenvectors of a Gram matrix ``W̃ᵀ W̃`` (k × k).

    A failed eigensolver (an overflowed Gram matrix) returns NaN eigenvalues and the
    identity as eigenvectors: both are poisoned to NaN, so that a projection on them is
    refused, not misprojected."""
    vals, vecs = eigh(sym(gram))
    finite = jnp.all(jnp.isfinite(vals))
    return jnp.where(finite, vals, jnp.nan), jnp.where(finite, vecs, jnp.nan)


def project_on(rows, vecs, rank, separate=False):
    """:func:`project_rank` on the eigenvectors ``vecs`` of ``W̃ᵀ W̃`` (:func:`gram_eigh`).

    ``separate=True`` takes the head and the tail from their own products
    (:func:`project_head`, :func:`dropped_mass`) instead of slicing one product: for a
    P-major W̃ (P = 1e6) this saves copying the head out of the product (8 % of a dlr
    step), for k-major rows at P = 2,410 it cost 2.5 %.
    """
    if separate:
        return project_head(rows, vecs, rank), dropped_mass(rows, vecs, rank)
    rotated = vecs[:, ::-1].T @ rows  # (W̃ V)ᵀ, descending singular values
    head, tail = rotated[:rank], rotated[rank:]
    if head.shape[0] < rank:  # fewer columns than the rank: pad with zeros
        head = jnp.pad(head, ((0, rank - head.shape[0]), (0, 0)))
    return head, jnp.sum(tail * tail, axis=0)


def project_head(rows, vecs, rank):
    """The head of :func:`project_rank`: ``(W̃ V[:, top R])ᵀ``, descending singular values,
    zero-padded to ``rank`` rows.

    Formed as the P × R product W̃ V[:, top R], the layout of the stored factor: as the
    R × P product V[:, top R]ᵀ W̃ᵀ, XLA:CPU carried the factor through the stream's loop
    R-major and copied the 40 MB factor between the layouts at each call's entry and
    exit (dlr-10 at P = 1e6)."""
    k = rows.shape[0]
    head = (rows.T @ vecs[:, ::-1][:, : min(rank, k)]).T
    if k < rank:  # fewer columns than the rank: pad with zeros
        head = jnp.pad(head, ((0, rank - k), (0, 0)))
    return head


def dropped_mass(rows, vecs, rank):
    """The dropped diagonal of :func:`project_rank`: ``rowsum((W̃ V[:, bottom k − R])²)``."""
    k = rows.shape[0]
    if k <= rank:
        return jnp.zeros(rows.shape[1], rows.dtype)
    tail = vecs[:, : k - rank].T @ rows  # eigh's order is ascending
    return jnp.sum(tail * tail, axis=0)
