"""The blocked dense kernels of :mod:`skbong.engine.linalg` against numpy/LAPACK.

``cholesky`` and ``tril_inverse`` split large matrices into blocks (to keep OpenBLAS's
threaded paths out of the compiled step); the sizes below cover the unsplit case, one
split with odd halves and two levels of splitting. In float64 the factors of these
well-conditioned matrices (eigenvalues in [1, ~5]) agree with LAPACK to a few ulps of
their entries (≤ 1e-12 absolute), and L⁻¹ L = I to the same order.

The dlr family never forms its P × P covariance: ``marginal_var``, ``output_cov`` and
``transform`` (the sampler's square root) work through the Woodbury factor V of
Σ = Υ⁻¹ − V Vᵀ. ``test_dlr_family_matches_the_dense_covariance`` compares each with the
dense Σ = inv(diag(Υ) + W Wᵀ) of numpy (and the sampler with the symmetric root of
``tests/_reference.py``), for a W whose low-rank term dominates Υ (so a flipped or
dropped low-rank term changes the variances by O(1), not by rounding).
"""

import re

import _reference as ref
import jax
import numpy as np
import pytest
from _programs import stream_setup

from skbong.engine import linalg as la
from skbong.engine.families import dlr

SIZES = [3, la.TRIANGULAR_BLOCK + 1, la.CHOLESKY_BLOCK + 1, 2 * la.CHOLESKY_BLOCK + 3]


def _spd(n):
    m = np.random.default_rng(n).normal(size=(n, n))
    return m @ m.T / n + np.eye(n)


@pytest.mark.parametrize("n", SIZES)
def test_blocked_kernels_match_lapack(n):
    a = _spd(n)
    with jax.enable_x64(True):
        chol = np.asarray(jax.jit(la.cholesky)(a))
        inv_chol = np.asarray(jax.jit(la.tril_inverse)(chol))
        inv = np.asarray(jax.jit(la.spd_inverse)(a))
    np.testing.assert_array_equal(np.triu(chol, 1), 0.0)
    np.testing.assert_allclose(chol, np.linalg.cholesky(a), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.triu(inv_chol, 1), 0.0)
    np.testing.assert_allclose(inv_chol @ chol, np.eye(n), rtol=0, atol=1e-12)
    np.testing.assert_allclose(inv, np.linalg.inv(a), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(inv, inv.T)


def test_blocked_cholesky_of_an_indefinite_matrix_is_not_finite():
    """An indefinite input must not give a finite factor (the validity checks rely on it)."""
    n = la.CHOLESKY_BLOCK + 5
    a = _spd(n)
    a[-1, -1] = -1.0
    with jax.enable_x64(True):
        chol = np.asarray(jax.jit(la.cholesky)(a))
    assert not np.all(np.isfinite(chol))


# ------------------------------------------------------------ Woodbury with g = B u + r
P_W, K_W = 7, 3


def _woodbury_case(scale):
    rng = np.random.default_rng(11)
    cov = _spd(P_W)
    factor = scale * rng.normal(size=(P_W, K_W))
    coef = rng.normal(size=K_W)
    vec = factor @ coef + rng.normal(size=P_W)  # in the span of B plus a generic part
    exact_cov = np.linalg.inv(np.linalg.inv(cov) + factor @ factor.T)
    return cov, factor, coef, vec, exact_cov


def test_woodbury_and_dlr_solve_without_rest_are_the_split_with_r_zero():
    """``rest=None`` says v = B u exactly (r = 0): the same Σ' v and Woodbury solve as an
    explicit zero r, against the float64 oracle (a dropped push-through term or a kept
    refinement residual r − Υ x with r taken as x would fail)."""
    cov, factor, coef, _, exact_cov = _woodbury_case(1.0)
    rng = np.random.default_rng(12)
    prec_diag = rng.uniform(0.5, 2.0, size=P_W)
    rows = rng.normal(size=(K_W, P_W))
    with jax.enable_x64(True):
        new_cov, cov_vec = jax.jit(la.woodbury_lowrank_downdate)(cov, factor, coef, None)
        _, inner, _ = la.dlr_grams(prec_diag, rows)
        x = jax.jit(la.dlr_solve)(prec_diag, rows, inner, coef, None)
    np.testing.assert_allclose(new_cov, exact_cov, rtol=0, atol=1e-12)
    np.testing.assert_allclose(cov_vec, exact_cov @ factor @ coef, rtol=0, atol=1e-12)
    exact = np.linalg.solve(np.diag(prec_diag) + rows.T @ rows, rows.T @ coef)
    np.testing.assert_allclose(x, exact, rtol=0, atol=1e-12)


@pytest.mark.parametrize("hint", ["zero", "exact", "wrong"])
def test_woodbury_downdate_is_exact_for_any_split(hint):
    """Any split v = B u + r gives Σ' v (float64)."""
    cov, factor, coef, vec, exact_cov = _woodbury_case(1.0)
    u = {"zero": 0.0 * coef, "exact": coef, "wrong": coef + 3.0}[hint]
    with jax.enable_x64(True):
        new_cov, cov_vec = jax.jit(la.woodbury_lowrank_downdate)(cov, factor, u, vec - factor @ u)
    np.testing.assert_allclose(new_cov, exact_cov, rtol=0, atol=1e-12)
    np.testing.assert_allclose(cov_vec, exact_cov @ vec, rtol=0, atol=1e-12)


@pytest.mark.parametrize("hint", ["zero", "exact", "wrong"])
def test_dlr_solve_is_exact_for_any_split(hint):
    rng = np.random.default_rng(12)
    prec_diag = rng.uniform(0.5, 2.0, size=P_W)
    rows = rng.normal(size=(K_W, P_W))
    u = rng.normal(size=K_W)
    rhs = rows.T @ u + rng.normal(size=P_W)
    coef = {"zero": 0.0 * u, "exact": u, "wrong": u - 2.0}[hint]
    with jax.enable_x64(True):
        _, inner, _ = la.dlr_grams(prec_diag, rows)
        x = jax.jit(la.dlr_solve)(prec_diag, rows, inner, coef, rhs - rows.T @ coef)
    exact = np.linalg.solve(np.diag(prec_diag) + rows.T @ rows, rhs)
    np.testing.assert_allclose(x, exact, rtol=0, atol=1e-12)



@pytest.mark.parametrize("with_rest", [False, True])
def test_dlr_solve_refinement_corrects_an_inexact_inverse(monkeypatch, with_rest):
    """The refinement step must shrink the error that an inexact k × k inverse leaves:
    with (I + W̃ᵀ Υ⁻¹ W̃)⁻¹ perturbed by a relative 1e-7 (float64), the first Woodbury
    iterate is off by about 1e-7 × cond, and one refinement contracts that by
    ‖I − M (I + W̃ᵀ Υ⁻¹ W̃)‖ ≈ 1e-7 × cond ≈ 1e-5 (asserted: 1e-3). A residual split as
    W̃ (u − W̃ᵀ x) + (r − Υ x) would return the first iterate unchanged."""
    rng = np.random.default_rng(13)
    prec_diag = rng.uniform(0.5, 2.0, size=P_W)
    rows = 3.0 * rng.normal(size=(K_W, P_W))
    u = rng.normal(size=K_W)
    r = rng.normal(size=P_W) if with_rest else None
    exact = np.linalg.solve(np.diag(prec_diag) + rows.T @ rows, rows.T @ u + (r if with_rest else 0))
    noise = 1.0 + 1e-7 * rng.uniform(-1.0, 1.0, size=(K_W, K_W))
    true_inverse = la.unit_chol_inverse
    monkeypatch.setattr(la, "unit_chol_inverse", lambda a: true_inverse(a) * noise)
    with jax.enable_x64(True):
        _, inner, _ = la.dlr_grams(prec_diag, rows)
        x = np.asarray(la.dlr_solve(prec_diag, rows, inner, u, r))
        inv = np.asarray(la.unit_chol_inverse(inner))
    base = r / prec_diag if with_rest else np.zeros(P_W)
    first = base + (inv.T @ (inv @ (u - rows @ base))) @ rows / prec_diag
    first_error = np.abs(first - exact).max()
    assert first_error > 1e-9  # the perturbation shows
    assert np.abs(x - exact).max() <= 1e-3 * first_error


F32 = np.float32


def test_dlr_solve_skips_the_refinement_where_its_residual_rounds_worse():
    """float32, P = 65,536 (16 × REFINE_BELOW), k = 11, cond(I + W̃ᵀ Υ⁻¹ W̃) ≈ 5e5, against
    a float64 Woodbury oracle of the same rounded inputs (numpy). The first iterate is
    within a few ε (measured 1e-7); a refinement step would form its residual
    u − y − W̃ᵀ x from length-P float32 sums that cancel, and add about 50 ε (measured
    6.4e-6 on this case). Allowed: 1e-6 ≈ 8 ε of the largest entry."""
    rng = np.random.default_rng(14)
    p, rank = 16 * la.REFINE_BELOW, 10
    w = rng.normal(size=(p, rank)) * np.geomspace(1.0, 1e2, rank) * 10.0 / np.sqrt(p)
    rows = np.vstack([w.T, rng.normal(size=(1, p)) / np.sqrt(p)]).astype(F32)
    prec_diag = rng.uniform(0.5, 2.0, size=p).astype(F32)
    u = np.zeros(rank + 1, F32)
    u[-1] = 0.7
    r64, d64 = rows.astype(np.float64), prec_diag.astype(np.float64)
    exact = (r64 / d64).T @ np.linalg.solve(np.eye(rank + 1) + (r64 / d64) @ r64.T, u)
    _, inner, _ = la.dlr_grams(prec_diag, rows)
    x = np.asarray(jax.jit(la.dlr_solve)(prec_diag, rows, inner, u, None), np.float64)
    assert np.abs(x - exact).max() <= 1e-6 * np.abs(exact).max()


def _relative_error(got, exact):
    return np.linalg.norm(np.asarray(got, np.float64) - exact) / np.linalg.norm(exact)


def test_woodbury_step_does_not_cancel_for_a_large_factor():
    """float32, ‖B‖ ≈ 1e4, v = B u: Σ' v shrinks like 1 / ‖B‖², and Σ v − Hᵀ(H v) would
    lose ‖B‖² ε ≫ 1 of it (checked: the zero split is off by more than 100 %). The split
    computes the push-through product Σ B (I + Bᵀ Σ B)⁻¹ u, accurate to a few ulps of its
    factors (allowed: 100 ε). Oracle in float64 from the float32-rounded inputs."""
    cov, factor, coef, _, _ = _woodbury_case(1e4)
    c, b, u = (np.asarray(a, F32) for a in (cov, factor, coef))
    exact = (c.astype(float) @ b.astype(float)) @ np.linalg.solve(
        np.eye(K_W) + b.T.astype(float) @ c.astype(float) @ b.astype(float), u.astype(float)
    )
    step = jax.jit(la.woodbury_lowrank_downdate)
    _, split = step(c, b, u, np.zeros(P_W, F32))
    _, naive = step(c, b, np.zeros(K_W, F32), b @ u)
    assert _relative_error(split, exact) <= 100 * np.finfo(F32).eps
    assert _relative_error(step(c, b, u, None)[1], exact) <= 100 * np.finfo(F32).eps
    assert _relative_error(naive, exact) > 1.0


def test_dlr_solve_does_not_cancel_for_a_large_factor():
    rng = np.random.default_rng(13)
    prec_diag = rng.uniform(0.5, 2.0, size=P_W).astype(F32)
    rows = (1e4 * rng.normal(size=(K_W, P_W))).astype(F32)
    u = rng.normal(size=K_W).astype(F32)
    d, w, uu = (a.astype(float) for a in (prec_diag, rows, u))
    exact = np.linalg.solve(np.diag(d) + w.T @ w, w.T @ uu)
    _, inner, _ = la.dlr_grams(prec_diag, rows)
    solve = jax.jit(la.dlr_solve)
    split = solve(prec_diag, rows, inner, u, np.zeros(P_W, F32))
    naive = solve(prec_diag, rows, inner, np.zeros(K_W, F32), rows.T @ u)
    assert _relative_error(split, exact) <= 100 * np.finfo(F32).eps
    assert _relative_error(solve(prec_diag, rows, inner, u, None), exact) <= (
        100 * np.finfo(F32).eps
    )
    assert _relative_error(naive, exact) > 1.0


# -------------------------------------------------------- the dlr family, densely
@pytest.mark.parametrize("scale", [0.3, 3.0])
def test_dlr_family_matches_the_dense_covariance(scale):
    """marginal_var = diag(Σ), output_cov = J Σ Jᵀ and transform(ε) = μ + Σ^{1/2} ε
    (the symmetric root of ``_reference.sample_dlr``) for Σ = inv(diag(Υ) + W Wᵀ),
    float64. Υ ∈ [0.5, 2] and ‖W‖ up to 3 √P: Σ has condition number ≤ ~1e3 (eigenvalues of
    the precision in [0.5, ~200]), so the Woodbury forms agree with numpy's inverse to
    ~1e3 ε ≈ 2e-13 of the largest entry (condition numbers here: 4 and 165); we allow
    1e-10. The low-rank term 1/Υ − diag Σ removes up to 12 % (scale 0.3) and 57 %
    (scale 3) of the largest variance, so a flipped or dropped term is off by ≥ 10 % of
    the largest entry (asserted below), 1e9 times the tolerance."""
    rng = np.random.default_rng(5)
    p, r, n, c = 7, 3, 4, 2
    prec_diag = rng.uniform(0.5, 2.0, size=p)
    prec_lr = scale * rng.normal(size=(p, r))
    mean = rng.normal(size=p)
    jac = rng.normal(size=(n, c, p))
    eps = rng.normal(size=(5, p))
    cov = ref.dlr_dense_cov(prec_diag, prec_lr)
    state = dlr.DLRState(mean, prec_diag, prec_lr)
    with jax.enable_x64(True):
        var = np.asarray(jax.jit(dlr.marginal_var)(state))
        out = np.asarray(jax.jit(dlr.output_cov)(state, jac))
        thetas = np.asarray(jax.jit(dlr.transform)(state, eps))
    low_rank = 1.0 / prec_diag - np.diag(cov)  # what the Woodbury term must remove
    assert low_rank.max() >= 0.1 * np.diag(cov).max()
    assert ref.rel_err(var, np.diag(cov)) <= 1e-10
    assert ref.rel_err(out, np.einsum("ncp,pq,ndq->ncd", jac, cov, jac)) <= 1e-10
    assert ref.rel_err(thetas, ref.sample_dlr(mean, prec_diag, prec_lr, eps)) <= 1e-10


@pytest.mark.parametrize("rank", [2, 4, 5, 7])
def test_projection_separate_products_is_the_sliced_product(rank):
    """The head and the dropped diagonal from their own products (``separate=True``, the
    P-major layout) are those of the one sliced product, against a float64 SVD of W̃:
    head headᵀ is the best rank-R part of W̃ W̃ᵀ and the dropped diagonal is what is
    left of diag(W̃ W̃ᵀ) (k = 5 columns: R below, at and above k, and R = k − 1, one
    dropped direction as in BONG with one output)."""
    rng = np.random.default_rng(14)
    rows = rng.normal(size=(5, 9)) * np.array([5.0, 3.0, 2.0, 1.0, 0.5])[:, None]
    u, s, _ = np.linalg.svd(rows.T, full_matrices=False)
    keep = min(rank, 5)
    best = (u[:, :keep] * s[:keep] ** 2) @ u[:, :keep].T
    with jax.enable_x64(True):
        vecs = la.gram_eigh(rows @ rows.T)[1]
        for separate in (False, True):
            head, dropped = (np.asarray(a) for a in la.project_on(rows, vecs, rank, separate))
            assert head.shape == (rank, 9)
            np.testing.assert_allclose(head.T @ head, best, rtol=0, atol=1e-12)
            np.testing.assert_allclose(
                dropped, np.diag(rows.T @ rows - best), rtol=0, atol=1e-12
            )


def _dlr_programs():
    """The traced dlr stream (its rank projection) and dlr draws (the sampler's root)."""
    from skbong import engine as E

    cfg, state, mean0, hyper, x, y, w = stream_setup("dlr", E.MLP(4, 1, (3,), "tanh"), "gaussian")
    key = jax.random.PRNGKey(0)
    yield E.run_stream_checked.trace(cfg, state, mean0, hyper, x, y, w, 0, key)
    yield E.draw_parameters.trace(cfg, state, key, 4)


@pytest.mark.parametrize(
    "platform, call",
    [("cuda", "@cusolver_syevd_ffi"), ("cpu", "@lapack_ssyevd_ffi")],
)
def test_dlr_programs_ask_gpus_for_the_qr_eigensolver(platform, call):
    """On NVIDIA GPUs every eigendecomposition of the dlr programs goes to cuSOLVER's
    QR-based ``syevd`` (``algorithm = 1``). JAX's own choice for small matrices is the
    Jacobi solver (``algorithm = 0`` leaves it to jaxlib), which made a dlr-10 step
    1.3–2.4× slower on an H200. The programs are lowered for each platform here, which
    needs no GPU; the CPU keeps LAPACK's ``syevd``."""
    for traced in _dlr_programs():
        text = traced.lower(lowering_platforms=(platform,)).as_text()
        calls = re.findall(r"(@\w*syevd\w*)\(.*?backend_config = \{([^}]*)\}", text)
        assert calls, "no eigendecomposition in a dlr program"
        for name, config in calls:
            assert name == call
            if platform == "cuda":
                assert "algorithm = 1 : ui8" in config, config


def test_qr_eigensolver_returns_values_then_vectors():
    """The GPU branch of :func:`linalg.eigh` (run here on the CPU, where it is LAPACK's
    ``syevd``) returns ascending eigenvalues then eigenvectors, as ``jnp.linalg.eigh``:
    checked against numpy's in float64, to the ulps of a matrix with eigenvalues in
    [1, ~5]."""
    a = _spd(11)
    with jax.enable_x64(True):
        vals, vecs = (np.asarray(v) for v in jax.jit(la._qr_eigh)(a))
    ref_vals = np.linalg.eigvalsh(a)
    np.testing.assert_allclose(vals, ref_vals, rtol=0, atol=1e-13)
    np.testing.assert_allclose((vecs * vals) @ vecs.T, a, rtol=0, atol=1e-13)


def test_stacked_grams_are_the_two_products():
    """float64: the one k × 2k product W̃ᵀ [W̃, Υ⁻¹ W̃] gives the Gram and Woodbury
    matrices of the two k × k products, to rounding (their entries are O(P) sums of
    O(1) terms: 1e-12 relative), and the same scaled rows."""
    rng = np.random.default_rng(21)
    k, p = 11, 300
    rows, prec_diag = rng.normal(size=(k, p)), rng.uniform(0.5, 2.0, size=p)
    with jax.enable_x64(True):
        two = la.dlr_grams(prec_diag, rows)
        one = la.dlr_grams(prec_diag, rows, stacked=True)
    np.testing.assert_allclose(one[0], rows @ rows.T, rtol=1e-12)
    np.testing.assert_allclose(one[1], np.eye(k) + (rows / prec_diag) @ rows.T, rtol=1e-12)
    for got, want in zip(one, two, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("rank, outputs", [(10, 1), (8, 1), (13, 1), (10, 10)])
def test_natural_step_stacks_its_grams_only_for_some_column_counts(rank, outputs):
    """The k-major natural step forms its Gram and Woodbury matrices as one k × 2k
    product exactly where k = rank + outputs is in ``STACKED_COLUMNS`` (k = 9 … 12, where
    it was measured faster), else as two k × k products: read from the traced step."""
    import jax.numpy as jnp

    from skbong.engine import Curv

    p, k = 50, rank + outputs  # P ≠ 2k: no other product has the stacked shape
    state = dlr.DLRState(jnp.zeros(p), jnp.ones(p), jnp.ones((p, rank)) / p)
    curv = Curv(factor=jnp.ones((p, outputs)))
    text = str(jax.make_jaxpr(lambda s, g, c: dlr.ngd(s, None, g, c, 1.0))(state, jnp.ones(p), curv))
    stacked = f"f32[{k},{2 * k}] = dot_general" in text
    two = text.count(f"f32[{k},{k}] = dot_general")
    assert stacked == (k in la.STACKED_COLUMNS) == (9 <= k <= 12)
    assert two >= (0 if stacked else 2)


def _lapack_operands(text):
    """The operand types of every LAPACK call in a lowered program's text."""
    return re.findall(r"@lapack_\w+\(.*?\)\s*(?:\{.*?\}\s*)?:\s*\((tensor<[^>]*>)", text)


@pytest.mark.parametrize("kernel", ["eigh", "cholesky", "tril_inverse"])
def test_batched_lapack_kernels_run_one_matrix_at_a_time(kernel):
    """Under ``vmap`` (the evidence bank vmaps its filters) every LAPACK call of the
    small kernels takes one matrix, never a stack: XLA's batched CPU kernels split a
    stack over the intra-op pool and wait on a pool thread for the parts, and two such
    calls at once deadlocked a 2-core machine (a dlr bank on digits, every thread idle).
    A plain vmap of ``jnp.linalg.eigh`` lowers to one call on a (4, 5, 5) operand, which
    fails the check. The stacked results equal numpy's, matrix by matrix."""
    spd = np.stack([_spd(5) + k * np.eye(5) for k in range(4)])
    chol = np.linalg.cholesky(spd)
    fn, arg = {
        "eigh": (la.eigh, spd),
        "cholesky": (la.cholesky, spd),
        "tril_inverse": (la.tril_inverse, chol),
    }[kernel]
    with jax.enable_x64(True):
        text = jax.jit(jax.vmap(fn)).lower(arg).as_text()
        out = jax.vmap(fn)(arg)
    operands = _lapack_operands(text)
    assert operands, "no LAPACK call found in the lowered program"
    assert all(op.startswith("tensor<5x5x") for op in operands), operands
    for k in range(4):
        if kernel == "eigh":
            vals = np.linalg.eigvalsh(spd[k])
            np.testing.assert_allclose(out[0][k], vals, rtol=0, atol=1e-12)
            vecs = np.asarray(out[1][k])
            np.testing.assert_allclose(vecs @ np.diag(vals) @ vecs.T, spd[k], atol=1e-12)
        elif kernel == "cholesky":
            np.testing.assert_allclose(out[k], chol[k], rtol=0, atol=1e-12)
        else:
            np.testing.assert_allclose(out[k], np.linalg.inv(chol[k]), rtol=0, atol=1e-12)


def test_lapack_operand_pattern_sees_a_batched_call():
    """The pattern of the test above finds the stacked operand of a plain vmapped eigh
    (else that test could pass by matching nothing batched)."""
    spd = np.stack([_spd(5)] * 4)
    with jax.enable_x64(True):
        text = jax.jit(jax.vmap(jax.numpy.linalg.eigh)).lower(
            spd
        ).as_text()
    assert any(op.startswith("tensor<4x5x5x") for op in _lapack_operands(text))
